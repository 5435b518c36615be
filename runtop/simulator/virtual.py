"""A simulated run's processes and GPUs on a simulated clock (the detection replay): no child
processes, no NVML — the same shapes the probes return, driven by the script and the replay."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from runtop.sources.gpu import GpuProcess, GpuReading, GpuSnapshot
from runtop.sources.processes import ProcessSnapshot, ProcInfo

GIB = 1 << 30
HOLDERS = ("inference", "trainer", "generator")  # roles that hold a GPU while they live


class VirtualProcesses:
    """The run's titled processes as the script starts and ends them (`ended`, `launched`), each
    with a pid and a start time on the simulated clock; a hang leaves them alive and idle."""

    def __init__(self, titles: Iterable[tuple[str, str]], clock: Callable[[], float]) -> None:
        self.titles = tuple(titles)
        self.clock = clock
        self._pids = itertools.count(40001)
        self._live: dict[str, tuple[int, float]] = {}  # title → (pid, create time)
        self.hung = False  # alive, holding memory, doing nothing (a collective that never returns)
        # In a hang, the one trainer rank that stopped: its GPU sits idle while its peers' spin in
        # the collective that waits for it (NCCL's kernels busy-wait); None: every GPU idle.
        self.stuck: int | None = None
        self._seen: set[str] = set()

    def start(self, roles: Iterable[str] | None = None) -> None:
        wanted = set(roles) if roles is not None else None
        for title, role in self.titles:
            if (wanted is None or role in wanted) and title not in self._live:
                self._live[title] = (next(self._pids), self.clock())

    def end(self, roles: Iterable[str] | None = None) -> None:
        wanted = set(roles) if roles is not None else None
        for title, role in self.titles:
            if wanted is None or role in wanted:
                self._live.pop(title, None)

    def pids(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for title, role in self.titles:
            if title in self._live:
                out.setdefault(role, []).append(self._live[title][0])
        return out

    # The process sampler's face (`ProcessSampler`): what the engine's process probe calls.
    def set_logs(self, logs: list[str]) -> None:
        pass

    def sample(self, finished: bool = False) -> ProcessSnapshot:
        procs = [ProcInfo(pid, created, 1, title, role, "sleeping", 0.0 if self.hung else 97.0, 8 * GIB)
                 for title, role in self.titles if title in self._live for pid, created in [self._live[title]]]
        alive = {p.role for p in procs if p.role is not None}
        self._seen |= alive
        # As the process sampler says it: a role seen alive once that has no live process now.
        return ProcessSnapshot(procs, missing=sorted(self._seen - alive), taken_at=self.clock())


class VirtualGpus:
    """One GPU per role that holds one (the trainer's `ranks` of them): busy while its process
    lives, 0 % with its memory held while the run hangs (but for the stuck rank's peers, spinning
    at 100 % in the collective), empty once the process is gone."""

    def __init__(self, procs: VirtualProcesses, clock: Callable[[], float], ranks: int = 1) -> None:
        self.procs, self.clock, self.ranks = procs, clock, ranks

    def read(self) -> GpuSnapshot:
        live = self.procs.pids()
        gpus = []
        roles = {role for _, role in self.procs.titles}
        held_by = [(role, rank) for role in HOLDERS if role in roles for rank in range(self.ranks if role == "trainer" else 1)]
        for i, (role, rank) in enumerate(held_by):
            pids = live.get(role, [])
            util = 93.0
            if self.procs.hung:
                util = 100.0 if self.procs.stuck is not None and role == "trainer" and rank != self.procs.stuck else 0.0
            util = util if pids else 0.0
            held = 60 * GIB if pids else GIB // 2
            gpus.append(GpuReading(i, "simulated H100 80GB HBM3", util, held, 80 * GIB, 60.0, 500.0 if util else 90.0,
                                   tuple(GpuProcess(p, 60 * GIB) for p in pids)))
        return GpuSnapshot(gpus, driver="simulated", taken_at=self.clock(), simulated=True)
