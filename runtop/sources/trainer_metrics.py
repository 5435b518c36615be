"""The trainer's own Prometheus endpoint (issue 17): liveness that does not depend on a
shared filesystem.

prime-rl's trainer serves `/metrics` when `[trainer.metrics_server]` is configured
(`MetricsServer`, prometheus_client gauges updated once a step on the master):
`trainer_step` and `trainer_last_step_timestamp_seconds` (a Unix time). On NFS or Lustre a
log's size and mtime can lag the writer by minutes (attribute caching); the trainer's own
clock says whether steps still come.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from runtop.probe import Unavailable

MAX_BYTES = 1 << 20  # a metrics page is a few KB; a stranger on the port must not fill memory


@dataclass(frozen=True)
class TrainerLive:
    url: str
    step: int | None
    last_step_ts: float | None  # the trainer's wall clock at its last step
    taken: float


def parse(text: str, url: str, now: float) -> TrainerLive | None:
    """None when the page holds neither gauge (another server on that port)."""
    from prometheus_client.parser import text_string_to_metric_families  # lazily: startup time

    found: dict[str, float] = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name in ("trainer_step", "trainer_last_step_timestamp_seconds") and not s.labels:
                    found[s.name] = float(s.value)
    except (ValueError, TypeError, IndexError) as e:
        raise ValueError(f"not Prometheus text: {e}") from None
    if not found:
        return None
    step = found.get("trainer_step")
    ts = found.get("trainer_last_step_timestamp_seconds")
    # A gauge never set reads 0: no step yet, not a step at the epoch.
    return TrainerLive(url, int(step) if step else None, ts if ts else None, now)


def fetch(url: str, timeout: float = 1.0) -> TrainerLive:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - a URL from the run's own config, http only
            text = resp.read(MAX_BYTES).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise Unavailable(f"trainer /metrics at {url}: {reason}") from None
    live = parse(text, url, time.time())
    if live is None:
        raise Unavailable(f"{url} serves no trainer_step: not the trainer's metrics server")
    return live
