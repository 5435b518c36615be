"""vLLM's Prometheus endpoint (`/metrics`) → the same `VllmStats` the log's stat lines give."""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from runtop.parsers.events import VllmStats

DEFAULT_URL = "http://localhost:8000/metrics"
# Names across vLLM releases; values are summed over engines and labels.
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREEMPT = ("vllm:num_preemptions_total", "vllm:num_preemptions")


def parse_metrics(text: str) -> VllmStats | None:
    """None when the text holds none of vLLM's metrics (another server on that port)."""
    from prometheus_client.parser import text_string_to_metric_families  # lazily: startup time

    found: dict[str, list[float]] = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                found.setdefault(s.name, []).append(float(s.value))
    except (ValueError, TypeError, IndexError) as e:
        raise ValueError(f"not Prometheus text: {e}") from None

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


MAX_BODY = 4 << 20


def fetch(url: str = DEFAULT_URL, timeout: float = 1.0, total: float = 3.0) -> tuple[VllmStats | None, str | None]:
    """(stats, None) or (None, why not): unreachable, slow, not vLLM, or bad text.

    `timeout` bounds each socket wait; `total` bounds the whole body: an endpoint that
    drips a byte every 0.5 s never times out a single read (issue 10).
    """
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - a URL the user gave
            parts: list[bytes] = []
            size = 0
            while size < MAX_BODY:
                if time.monotonic() - t0 > total:
                    return None, f"slow: gave up after {total:g} s ({size} bytes of the answer so far)"
                chunk = resp.read1(65536)
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
            text = b"".join(parts).decode("utf-8", "replace")
    except TimeoutError:
        return None, f"slow: gave up after {timeout:g} s without a byte"
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError):
            return None, f"slow: gave up after {timeout:g} s without an answer"
        return None, f"unreachable: {reason}"
    try:
        stats = parse_metrics(text)
    except ValueError as e:
        return None, str(e)
    if stats is None:
        return None, "answers but has no vllm:* metrics"
    return stats, None
