"""The Ray probe: the run's cluster through Ray's state API (`runtop.sources.ray_state`), at most
every 30 s; its snapshot is the state's `ray` (the rules' `Facts.ray`, the status JSON, the
processes pane)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from runtop.probes.seam import ProbeRun, SystemProbe
from runtop.sources.ray_state import RAY_PERIOD_S, RayClient, RaySnapshot, address_of
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView


class RayProbe(SystemProbe):
    name = "ray"
    fills = Slice.RAY
    # Only one runtop can tie to the run's cluster, and the state API can be slow to answer.
    deadline: ClassVar[float | None] = 30.0

    def __init__(self, address: str | None = None, client: RayClient | None = None) -> None:
        self.address = address  # `--ray-address`; else found from the run's own processes
        self.client = client or RayClient()

    def period(self, interval: float) -> float:
        return max(interval, RAY_PERIOD_S)

    def idle_period(self, interval: float) -> float | None:
        return max(interval, RAY_PERIOD_S)

    def sample(self, run: ProbeRun) -> RaySnapshot | None:
        procs = run.state.processes or {}
        found = address_of(self.address, [p for ps in procs.values() for p in ps], bool(procs.get("ray")))
        return self.client.read(*found) if found is not None else None

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        state.ray = reading if isinstance(reading, RaySnapshot) else None  # None: no cluster tied to the run


def make(options: Mapping[str, Any]) -> RayProbe:
    return RayProbe(options.get("ray_address"), options.get("ray"))
