"""Rollout quality: pass rates, format failures by rule, truncation, errored and empty, batch progress."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from runtop.frameworks import get as get_framework
from runtop.view.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import CALM, bar


def _gauge(t: Table, label: str, frac: float | None, detail: str, width: int, good_high: bool = True) -> None:
    if frac is None:
        return
    # A pass rate is good when high; a failure rate when low: colour by badness.
    badness = 1 - frac if good_high else frac
    g = bar(frac, width, warn=2.0)
    g.stylize("red" if badness > 0.5 else "yellow" if badness > 0.2 else CALM)
    t.add_row(label, g, f"{frac * 100:5.1f}%", detail)


class RolloutGauges(Pane):
    TITLE = "rollouts"
    READS = (Slice.ROLLOUTS, Slice.STEPS, Slice.RUN)

    def render_view(self, view: View) -> Table | Text:
        s = view.state
        width = max(6, min(30, (self.size.width or 60) - 36))
        t = Table.grid(padding=(0, 1))
        for _ in range(4):
            t.add_column(no_wrap=True)
        a = s.agent
        for kind in ("ft", "gt"):
            passed = a.rewards.get(kind)
            if passed and passed[0]:
                _gauge(t, f"{kind} pass", passed[1] / passed[0], f"{int(passed[1])}/{int(passed[0])}", width)
        r = s.rollouts
        if r.reward_n:
            _gauge(t, "reward>0", r.positive / r.reward_n, f"{r.positive}/{r.reward_n}", width)
        if r.total:
            _gauge(t, "errored", r.errored / r.total, f"{r.errored}/{r.total}", width, good_high=False)
            _gauge(t, "truncated", r.truncated / r.total, f"{r.truncated}/{r.total}", width, good_high=False)
            if r.empty:
                _gauge(t, "empty", r.empty / r.total, f"{r.empty}/{r.total}", width, good_high=False)
        last_row = s.last_row()
        last = last_row.step if last_row else None
        orch = last_row.rollout if last_row else {}
        if not r.total:
            if orch.get("truncated") is not None:
                _gauge(t, "truncated", orch["truncated"], f"step {last}", width, good_high=False)
            if orch.get("error_rate") is not None:
                _gauge(t, "errored", orch["error_rate"], f"step {last}", width, good_high=False)
        if s.batch is not None:
            total = s.batch.total
            label = get_framework(s.framework).gauge_label
            if total:
                _gauge(t, label, s.batch.done / total, f"{s.batch.done}/{total} this batch", width)
            else:
                t.add_row(label, "", "", f"{s.batch.done}/? this batch")
        if a.format_failures:
            n = sum(a.format_failures.values())
            rules = ", ".join(f"R{k}×{v}" for k, v in sorted(a.format_failures.items()))
            t.add_row("format", Text(f"{n} failures", style="yellow"), "", rules)
        if not t.row_count:
            return Text("no rollouts read yet", style="italic grey62")
        return t
