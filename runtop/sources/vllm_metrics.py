"""vLLM's Prometheus endpoint (`/metrics`) → the same `VllmStats` the log's stat lines give."""

from __future__ import annotations

from collections.abc import Callable

from runtop.parsers.events import VllmStats
from runtop.sources.prometheus_text import samples, scrape

DEFAULT_URL = "http://localhost:8000/metrics"
# Names across vLLM releases; values are summed over engines and labels.
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREEMPT = ("vllm:num_preemptions_total", "vllm:num_preemptions")


def parse_metrics(text: str) -> VllmStats | None:
    """None when the text holds none of vLLM's metrics (another server on that port)."""
    found = samples(text)

    def pick(names: tuple[str, ...], agg: Callable[[list[float]], float] = sum) -> float | None:
        for n in names:
            if n in found:
                return float(agg(found[n]))
        return None

    running, waiting = pick(RUNNING), pick(WAITING)
    kv = pick(KV, max)
    if running is None and waiting is None and kv is None:
        return None
    pre = pick(PREEMPT)
    return VllmStats(
        running=int(running) if running is not None else None,
        waiting=int(waiting) if waiting is not None else None,
        kv_cache_pct=kv * 100 if kv is not None else None,
        prompt_tok_s=None,
        gen_tok_s=None,
        preemptions=int(pre) if pre is not None else None,
    )


def fetch(url: str = DEFAULT_URL, timeout: float = 1.0, total: float = 3.0) -> tuple[VllmStats | None, str | None]:
    """(stats, None) or (None, why not): unreachable, slow, not vLLM, or bad text."""
    text, error = scrape(url, timeout, total)
    if text is None:
        return None, error
    try:
        stats = parse_metrics(text)
    except ValueError as e:
        return None, str(e)
    if stats is None:
        return None, "answers but has no vllm:* metrics"
    return stats, None
