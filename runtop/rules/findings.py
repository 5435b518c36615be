"""What a health rule answers with (`Finding`) and what it reads (`Facts`), and the
helpers every rule uses to name roles and evidence."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runtop.config import Thresholds
from runtop.parsers.shell import JobDeath
from runtop.rules.pace import PaceView
from runtop.sources.disk import DiskSnapshot
from runtop.sources.gpu import GpuSnapshot
from runtop.sources.lifetimes import LifetimesView
from runtop.sources.ray_state import RaySnapshot
from runtop.sources.slurm import SlurmSnapshot
from runtop.sources.trainer_metrics import TrainerLive
from runtop.state.parts import ErrorEntry
from runtop.state.run import RunState

ROLE_NAMES = {
    "trainer": "trainer",
    "orchestrator": "orchestrator",
    "generator": "generator",
    "inference": "inference server (vLLM)",
    "env": "env server",
    "launcher": "launcher",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # "info" | "warning" | "critical"
    message: str
    evidence: str | None = None
    since: str | None = None  # on the logs' clock (`HH:MM:SS`), as the Logs pane shows times
    since_ts: float | None = None  # a wall time it began (a stall's last write): put on the logs' clock when shown
    down: bool = False  # the run is not training any more
    # For a death: the cause an expert names, the wrapper that reported it, the open phase.
    cause: str | None = None
    wrapper: str | None = None
    phase: str | None = None
    # What it is about (a role, a file, a checkpoint, a disk): with the rule, the incident.
    subject: str | None = None
    # The error's own words, whole, where `message` quotes them shortened to fit a line: the
    # alerts screen shows them in full (it cut them where the message did).
    detail: str | None = None

    @property
    def label(self) -> str:
        """The severity in words that agree with the verdict ("critical" lines under
        a Degraded band read as a contradiction): `down` makes the run Down; `act now` is
        critical while the run still trains (a failed save, a full disk, a NaN loss)."""
        if self.down:
            return "down"
        return "act now" if self.severity == "critical" else self.severity

    @property
    def key(self) -> str:
        """What makes two findings the same incident: the rule and its subject, never its
        numbers (a stall's growing duration made every poll a "new" critical
        finding, a toast and a bell each). Without a subject, the message's words before
        its first colon, every number in them blanked."""
        return f"{self.rule}:{self.subject if self.subject is not None else shape_of(self.message)}"


NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*", re.ASCII)


def shape_of(message: str) -> str:
    """`no log write anywhere for 12m 30s; …` → `no log write anywhere for #m #s; …`."""
    return NUMBER_RE.sub("#", message.split(":", 1)[0])[:80]


@dataclass
class Facts:
    state: RunState
    now: float  # wall clock, seconds since the epoch
    cfg: Thresholds
    disk: DiskSnapshot | None = None
    gpu: GpuSnapshot | None = None
    missing_roles: list[str] = field(default_factory=list)  # from the process sampler, when there is one
    zombie_roles: list[str] = field(default_factory=list)
    # Alert targets that are failing now: said, never sent (a pager about itself).
    notify_problems: list[str] = field(default_factory=list)
    forensics: str | None = None  # the newest hang forensics: what the stacks show, and where
    gpu_idle: dict[int, Any] = field(default_factory=dict)  # GPU index → `rules_hang.Idle`
    slurm: SlurmSnapshot | None = None  # the run's SLURM job, where it has one
    trainer_live: TrainerLive | None = None  # the trainer's own /metrics: steps on its clock
    ray: RaySnapshot | None = None  # the run's Ray cluster (state API), where runtop can tie one to it
    lifetimes: LifetimesView | None = None  # the run's processes over time (`runtop.sources.lifetimes`)
    shell_says: JobDeath | None = None  # the Launcher pane's shell on how its job died (`Killed`)
    pace: PaceView | None = None  # the run's own pace, learned as it ran (`runtop.rules.pace`)

    @property
    def alive(self) -> dict[str, list[int]] | None:
        """role → pids, or None when the process table was not read or cannot be trusted:
        titled processes runtop may not inspect (another user's) could be this run's, so
        their absence proves nothing."""
        if self.state.process_denied:
            return None
        return self.state.processes

    def newest_write(self) -> float | None:
        return max(self.state.write_times(), default=None)

    def oldest_write(self) -> float | None:
        return min(self.state.write_times(), default=None)

    def booting(self) -> bool:
        """Within the grace period of a start: nothing has finished a step yet and the files are young."""
        if self.state.current_step() is not None:
            return False
        oldest = self.oldest_write()
        return oldest is None or (self.now - oldest) * self.cfg.time_scale < self.cfg.grace_s

    def finished(self) -> bool:
        return self.state.run_finished()


def _where(state: RunState, e: ErrorEntry) -> str:
    return f"{state.relpath(e.source)} {e.time or ''}".strip()


def _short(text: str, n: int = 110) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# An errno name and its words, often at the end of a long message (`… code: -98, name: EADDRINUSE,
# message: address already in use`): the fact an expert searches for.
ERRNO_RE = re.compile(r"\b(E[A-Z]{3,14})\b(?:, message: ([^,;)]{1,60}))?", re.ASCII)


def short_keeping_errno(text: str, n: int = 100) -> str:
    """`_short`, but an errno the cut would drop is kept at the end."""
    cut = _short(text, n)
    m = ERRNO_RE.search(text)
    if m is None or m.group(1) in cut:
        return cut
    tail = m.group(1) + (f": {m.group(2).strip()}" if m.group(2) else "")
    return _short(text, max(20, n - len(tail) - 3)) + " " + tail


