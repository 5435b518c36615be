"""Short histories of the system readings: each GPU's utilisation, memory and power, and each
process role's CPU and resident memory, as `SAMPLES` points of `PERIOD_S` seconds each (the
mean of the readings in it; the newest point moves with every reading).

One reading says "the GPU is idle"; only a history says "the GPUs went idle twenty minutes
ago". The engine appends each probe's answer here (its thread, under its lock) and hands the
screen a frozen copy (`Histories`, tuples only) in the `View`; the GPU and process panes
draw it as sparklines (docs/design.md: facts over time are the engine's, widgets render).
Bounded whatever the run's length: a fixed number of samples per series, and series only for
the GPUs and roles the run has.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from runtop.sources.gpu import GpuSnapshot
from runtop.sources.processes import ProcessSnapshot

SAMPLES = 120  # points kept per series
PERIOD_S = 10.0  # seconds per point: 120 of them reach twenty minutes back
MAX_SERIES = 64  # GPUs or roles kept at most (a probe that invents names cannot grow this)
NAN = float("nan")  # a reading that had no number: drawn as a gap, never as a zero


@dataclass(frozen=True, slots=True)
class GpuHistory:
    util_pct: tuple[float, ...] = ()
    mem_used: tuple[float, ...] = ()  # bytes
    power_w: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class RoleHistory:
    """The sum over the role's live processes: a role of eight env workers is one series."""

    cpu_pct: tuple[float, ...] = ()
    rss: tuple[float, ...] = ()  # bytes


@dataclass(frozen=True)
class Histories:
    gpus: Mapping[int, GpuHistory] = field(default_factory=lambda: MappingProxyType({}))
    roles: Mapping[str, RoleHistory] = field(default_factory=lambda: MappingProxyType({}))
    period: float = PERIOD_S  # seconds per point

    def span(self) -> str:
        """How far back a full series reaches, in words (`20m`)."""
        return f"{SAMPLES * self.period / 60:.0f}m"


class Series:
    """One reading over time: a point per `period` seconds, the mean of the readings in it
    (NaN where none had a number); a period with no reading at all is a gap."""

    __slots__ = ("points", "period", "_at", "_sum", "_n")

    def __init__(self, samples: int, period: float) -> None:
        self.points: deque[float] = deque(maxlen=samples)
        self.period = period
        self._at: int | None = None  # the newest point's period number
        self._sum, self._n = 0.0, 0

    def add(self, now: float, value: float) -> None:
        at = int(now // self.period)
        if self._at is None or at > self._at:
            if self._at is not None:
                self.points.extend([NAN] * min(at - self._at - 1, self.points.maxlen or 0))
            self.points.append(NAN)
            self._at, self._sum, self._n = at, 0.0, 0
        elif at < self._at:
            at = self._at  # a clock that stepped back: the reading joins the newest point
        if value == value:  # not NaN
            self._sum += value
            self._n += 1
            self.points[-1] = self._sum / self._n


class HistoryKeeper:
    """The engine's side: bounded series, added to once per probe reading."""

    def __init__(self, samples: int = SAMPLES, period: float = PERIOD_S) -> None:
        self.samples, self.period = samples, period
        self._gpus: dict[int, tuple[Series, Series, Series]] = {}
        self._roles: dict[str, tuple[Series, Series]] = {}
        self._frozen = Histories()

    def _new(self) -> Series:
        return Series(self.samples, self.period)

    def gpu(self, snap: GpuSnapshot, now: float) -> None:
        if snap.error:
            return  # no NVML: no history to draw, and nothing changed
        for d in snap.gpus:
            if d.index not in self._gpus:
                if len(self._gpus) >= MAX_SERIES:
                    continue
                self._gpus[d.index] = (self._new(), self._new(), self._new())
            util, mem, power = self._gpus[d.index]
            util.add(now, NAN if d.util_pct is None or d.error else float(d.util_pct))
            mem.add(now, NAN if d.mem_used is None or d.error else float(d.mem_used))
            power.add(now, NAN if d.power_w is None or d.error else float(d.power_w))
        self._freeze()

    def processes(self, snap: ProcessSnapshot, now: float) -> None:
        if snap.error:
            return
        cpu: dict[str, float] = {}
        rss: dict[str, float] = {}
        for p in snap.procs:
            if not p.role or p.zombie:
                continue
            cpu[p.role] = cpu.get(p.role, 0.0) + (p.cpu_pct or 0.0)
            rss[p.role] = rss.get(p.role, 0.0) + float(p.rss or 0)
        for role in cpu:
            if role not in self._roles and len(self._roles) < MAX_SERIES:
                self._roles[role] = (self._new(), self._new())
        for role, (c, r) in self._roles.items():
            # A role with no live process reads zero: its death is the drop the eye looks for.
            c.add(now, cpu.get(role, 0.0))
            r.add(now, rss.get(role, 0.0))
        self._freeze()

    def _freeze(self) -> None:
        self._frozen = Histories(
            MappingProxyType({i: GpuHistory(*(tuple(s.points) for s in series)) for i, series in self._gpus.items()}),
            MappingProxyType({role: RoleHistory(*(tuple(s.points) for s in series)) for role, series in self._roles.items()}),
            self.period,
        )

    def frozen(self) -> Histories:
        """The histories as of the last reading; nobody writes the returned object again."""
        return self._frozen
