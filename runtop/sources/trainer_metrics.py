"""The trainer's own Prometheus endpoint: liveness that does not depend on a
shared filesystem.

prime-rl's trainer serves `/metrics` when `[trainer.metrics_server]` is configured
(`MetricsServer`, prometheus_client gauges updated once a step on the master):
`trainer_step` and `trainer_last_step_timestamp_seconds` (a Unix time). On NFS or Lustre a
log's size and mtime can lag the writer by minutes (attribute caching); the trainer's own
clock says whether steps still come.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from runtop.sources.deadline import Unavailable
from runtop.sources.prometheus_text import samples, scrape


@dataclass(frozen=True)
class TrainerLive:
    url: str
    step: int | None
    last_step_ts: float | None  # the trainer's wall clock at its last step
    taken: float


def parse(text: str, url: str, now: float) -> TrainerLive | None:
    """None when the page holds neither gauge (another server on that port)."""
    found = samples(text)
    if "trainer_step" not in found and "trainer_last_step_timestamp_seconds" not in found:
        return None
    step = found.get("trainer_step", [0.0])[0]
    ts = found.get("trainer_last_step_timestamp_seconds", [0.0])[0]
    # A gauge never set reads 0: no step yet, not a step at the epoch.
    return TrainerLive(url, int(step) if step else None, ts if ts else None, now)


def fetch(url: str, timeout: float = 1.0) -> TrainerLive:
    text, error = scrape(url, timeout, total=max(2.0, 3 * timeout))
    if text is None:
        raise Unavailable(f"trainer /metrics at {url}: {error}")
    try:
        live = parse(text, url, time.time())
    except ValueError as e:
        raise Unavailable(f"trainer /metrics at {url}: {e}") from None
    if live is None:
        raise Unavailable(f"{url} serves no trainer_step: not the trainer's metrics server")
    return live
