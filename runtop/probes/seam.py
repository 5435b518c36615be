"""The probe seam: a system probe is one module declaring what it is, and the engine takes a list.

A probe says its name (its error line and its count of readings), its period and deadline, how
it samples (in a thread of its own, `runtop.probes.runner.Probe` runs it), where its reading goes and
which slice of the view it fills (the panes that read that slice repaint when it answers).
Adding one is its module and one line in `runtop.probes.registry.PROBES` (docs/architecture.md,
"Adding a probe").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from runtop.frameworks.layout import RunLayout
from runtop.probes.runner import Probe
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView


class ProbeRun(Protocol):
    """What a probe may read of the run it samples for (the engine)."""

    @property
    def state(self) -> RunState: ...

    @property
    def layout(self) -> RunLayout: ...


class SystemProbe:
    """One source of system facts, as the engine runs it."""

    name: ClassVar[str]
    fills: ClassVar[Slice]
    deadline: ClassVar[float | None] = None  # None: twice the period, at least 5 s (`Probe`)

    def period(self, interval: float) -> float:
        """Seconds between two calls, given the engine's `--interval`."""
        return interval

    def idle_period(self, interval: float) -> float | None:
        """Seconds between calls while its source is not there (None: the period)."""
        return None

    def sample(self, run: ProbeRun) -> object:
        """One reading (the probe's thread: no lock is held, the state may be mid-write, so
        read only what a torn read cannot harm). Raise `runtop.sources.deadline.Unavailable` when the
        source is simply not there."""
        raise NotImplementedError

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        """Put a reading where the rules and the panes read it (the engine's thread, under its
        lock). The view's `SystemView.store` counts it and keeps the errors either way."""

    def forget(self, state: RunState, system: SystemView) -> None:
        """A call failed (the engine's thread, under its lock): drop what would read as live."""

    def runner(self, run: ProbeRun, interval: float) -> Probe:
        return Probe(self.name, self.period(interval), lambda: self.sample(run), idle_period=self.idle_period(interval), deadline=self.deadline)


class EndpointProbe(SystemProbe):
    """An HTTP endpoint the run may serve (vLLM's `/metrics`, the trainer's): asked every poll
    while it answers, within a second; every 30 s while nothing listens."""

    timeout = 1.0

    def period(self, interval: float) -> float:
        self.timeout = min(1.0, interval)
        return interval

    def idle_period(self, interval: float) -> float | None:
        return max(30.0, interval)


# A probe's factory: the engine's options (`ray_address=`, a client handed in by a test, …) in,
# the probe out, or None where those options turn it off.
Factory = Callable[[Mapping[str, Any]], SystemProbe | None]
