"""The run's processes over time: which runtop has seen alive, and when all of them went.

A process table read once says what runs now; it cannot say that a run died. The
commonest death leaves nothing in the logs: a process group killed with SIGKILL, the
kernel's OOM killer, a reclaimed spot pod, a lost node. What proves it is a change seen
over time: the run's processes were alive, and at two samples in a row none is (one
sample with none could be a relaunch between two attempts). The engine keeps these
facts (`Lifetimes`), records them in `RUN/.runtop/processes.json` for a later runtop
(`sources/process_record.py`), and the `vanished` rule judges them (docs/reading.md,
"A run that vanishes").
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from runtop.sources.processes import ProcessSnapshot

# Roles that are not the run itself: a Ray cluster outlives the run it served.
NOT_THE_RUN = frozenset({"ray"})
# Samples in a row with no process before a live runtop calls the run gone.
GONE_SAMPLES = 2
MAX_KEPT = 64  # processes remembered from the last sample that had any


@dataclass(frozen=True, slots=True)
class Seen:
    """One process of the run, as last seen alive."""

    pid: int
    create_time: float
    role: str | None
    title: str


@dataclass(frozen=True, slots=True)
class OomKill:
    """The kernel's OOM killer ended one of the run's processes (`Out of memory: Killed process …`)."""

    pid: int
    name: str
    at: float | None  # wall time, where the kernel log's clock could be placed


@dataclass(frozen=True)
class ProcessRecord:
    """What an earlier runtop saw (`RUN/.runtop/processes.json`)."""

    host: str
    alive_at: float
    processes: tuple[Seen, ...]
    attempt: int
    gone_at: float | None = None


@dataclass(frozen=True)
class LifetimesView:
    """A frozen copy for the rules (`Facts.lifetimes`)."""

    host: str
    sampled: bool  # the process table was read at least once, without error
    alive_now: int  # processes of the run alive at the newest sample (not counting a Ray cluster)
    last_alive: tuple[Seen, ...]  # those alive at the newest sample that had any
    alive_at: float | None  # when that sample was taken
    gone_at: float | None  # the first sample after it with none
    gone_samples: int
    recorded: ProcessRecord | None = None  # from an earlier runtop, where this one has not seen them alive
    oom: tuple[OomKill, ...] = ()


@dataclass
class Lifetimes:
    host: str = field(default_factory=socket.gethostname)
    last_alive: tuple[Seen, ...] = ()
    alive_at: float | None = None
    gone_at: float | None = None
    gone_samples: int = 0
    alive_now: int = 0
    sampled: bool = False
    recorded: ProcessRecord | None = None
    oom: tuple[OomKill, ...] = ()

    def observe(self, snap: ProcessSnapshot, now: float) -> bool:
        """Take one sample; True when the set of live processes changed (worth recording)."""
        if snap.error is not None:
            return False
        self.sampled = True
        live = tuple(Seen(p.pid, p.create_time, p.role, p.title) for p in snap.procs
                     if not p.zombie and p.role not in NOT_THE_RUN)[:MAX_KEPT]
        self.alive_now = len(live)
        if live:
            changed = {s.pid for s in live} != {s.pid for s in self.last_alive} or self.gone_at is not None
            self.last_alive, self.alive_at = live, now
            self.gone_at, self.gone_samples, self.oom = None, 0, ()
            self.recorded = None  # seen with our own eyes now
            return changed
        if not self.last_alive and self.recorded is None:
            return False  # never seen alive: nothing has gone
        self.gone_samples += 1
        if self.gone_at is None:
            self.gone_at = now
            return True
        return False

    def view(self) -> LifetimesView:
        return LifetimesView(self.host, self.sampled, self.alive_now, self.last_alive, self.alive_at, self.gone_at,
                             self.gone_samples, self.recorded, self.oom)

    def record(self, attempt: int) -> ProcessRecord | None:
        """What to leave for a later runtop: the processes last seen alive, and when."""
        if not self.last_alive or self.alive_at is None:
            return None
        return ProcessRecord(self.host, self.alive_at, self.last_alive, attempt, self.gone_at)
