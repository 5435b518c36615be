"""vLLM's Prometheus endpoint: the inference pane's live numbers. The URL given (`--vllm-url`),
or, at the default, the port the run's config gives its server. Nothing listening (a run on
another port, a SkyRL run whose engines are Ray actors): asked every 30 s, the log's stat lines
fill the pane meanwhile."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtop.parsers.events import VllmStats
from runtop.probes.seam import EndpointProbe, ProbeRun
from runtop.sources.deadline import Unavailable
from runtop.sources.vllm_metrics import DEFAULT_URL, fetch
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView


class VllmProbe(EndpointProbe):
    name = "vllm"
    fills = Slice.VLLM

    def __init__(self, url: str) -> None:
        self.url = url

    def sample(self, run: ProbeRun) -> VllmStats:
        url = self.url
        port = run.state.endpoints.get("inference")
        if url == DEFAULT_URL and port:
            url = f"http://127.0.0.1:{port}/metrics"  # the port the run's config gives its server
        stats, error = fetch(url, timeout=self.timeout)
        if stats is None:
            raise Unavailable(error)
        return stats

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        system.vllm_http = reading if isinstance(reading, VllmStats) else None

    def forget(self, state: RunState, system: SystemView) -> None:
        system.vllm_http = None  # stale numbers would read as live


def make(options: Mapping[str, Any]) -> VllmProbe | None:
    url = options.get("vllm_url")
    return VllmProbe(url) if url else None  # None: no endpoint asked for (a fleet's runs, a test)
