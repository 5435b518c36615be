"""vLLM: running and waiting requests, KV-cache use; from `/metrics` when reachable, else the log."""

from __future__ import annotations

from rich.text import Text

from runtop.view.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import num


class InferencePane(Pane):
    TITLE = "inference"
    READS = (Slice.VLLM, Slice.INFERENCE)

    def render_view(self, view: View) -> Text:
        http = view.system.vllm_http
        stats, label = (http, f"from {view.system.vllm_url}") if http is not None else (view.state.vllm, None)
        if stats is not None and label is None:
            err = view.system.errors.get("vllm")
            why = f"/metrics {err}: {view.system.vllm_url}" if err else "no /metrics"
            label = f"from the log's stat line at {stats.time or '?'} ({why})"
        if stats is None:
            err = view.system.errors.get("vllm")
            return Text(f"/metrics {err}: {view.system.vllm_url}" if err else "no vLLM numbers yet", style="grey62")
        out = Text()
        out.append(f"running {stats.running if stats.running is not None else 'n/a'}  ")
        out.append(f"waiting {stats.waiting if stats.waiting is not None else 'n/a'}  ", "yellow" if stats.waiting else "")
        kv = stats.kv_cache_pct
        out.append(f"KV cache {num(kv, 3)}%", "red" if kv is not None and kv > 95 else "")
        if stats.gen_tok_s is not None:
            out.append(f"  gen {stats.gen_tok_s:.0f} tok/s")
        if stats.preemptions:
            out.append(f"  preemptions {stats.preemptions}", "yellow")
        out.append(f"\n{label}", "grey62")
        return out
