"""What a screen renders: the run's state, the latest system readings, the verdict, the clock.

Widgets read a `View` and nothing else (docs/design.md: widgets render state only). A view the
engine publishes is frozen: its state is a copy the engine never writes again, and
`versions` says which slices moved since earlier views (`runtop.view.publish`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from runtop.parsers.events import VllmStats
from runtop.rules.health import Verdict
from runtop.sources.disk import DiskSnapshot
from runtop.sources.gpu import GpuReading as GpuReading  # re-exported: a widget reads its types here, never from a source
from runtop.sources.gpu import GpuSnapshot
from runtop.sources.processes import ProcessSnapshot
from runtop.sources.processes import ProcInfo as ProcInfo  # re-exported, as GpuReading
from runtop.sources.slurm import SlurmSnapshot
from runtop.sources.trainer_metrics import TrainerLive
from runtop.state.log_tail import TailView
from runtop.state.run import RunState
from runtop.view.history import Histories

PROBES = ("process", "disk", "gpu", "vllm", "slurm", "trainer", "ray")


class Slice(enum.Enum):
    """A part of what the screen draws, with its own version (`runtop.view.publish`)."""

    RUN = "run"  # identity, layout, attempts, phases, the finish, a failed backfill
    FILES = "files"  # the files read: sizes, clocks, fatal errors per file
    STEPS = "steps"  # step rows and step counters
    ROLLOUTS = "rollouts"  # batch progress, rollouts, env calls, the agent layer
    CHECKPOINTS = "checkpoints"
    ERRORS = "errors"  # errors, warnings, notable lines, notes
    INFERENCE = "inference"  # the inference server's numbers read from its log
    # Beside the state: the engine's own buffers, the probes' readings, the verdict, the clock.
    LOGS = "logs"  # the Logs pane's tail (`runtop.state.log_tail`)
    READING = "reading"  # how much of the run's history is read (the header's "reading history")
    PROCESS = "process"
    DISK = "disk"
    GPU = "gpu"
    VLLM = "vllm"
    SLURM = "slurm"
    RAY = "ray"
    TRAINER = "trainer"  # the trainer's own /metrics
    VERDICT = "verdict"
    CLOCK = "clock"  # whole seconds: panes that show ages


@dataclass
class SystemView:
    """The latest reading of each probe; `errors` holds why a probe has none."""

    procs: ProcessSnapshot | None = None
    disk: DiskSnapshot | None = None
    gpu: GpuSnapshot | None = None
    vllm_http: VllmStats | None = None
    vllm_url: str | None = None
    slurm: SlurmSnapshot | None = None  # None: the run names no SLURM job
    trainer: TrainerLive | None = None  # the trainer's own /metrics, where its config serves one
    errors: dict[str, str] = field(default_factory=dict)  # probe name → why it has no reading
    readings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROBES, 0))  # answers stored, per probe
    # The GPUs' and roles' last readings over time (`runtop.view.history`): frozen, replaced whole.
    history: Histories = field(default_factory=Histories)

    def store(self, name: str, value: object, error: str | None) -> None:
        """A probe's answer (the engine's thread): counted, and why it has none kept. The readings
        of the engine's own probes (processes, disks, GPUs) land here by name; a probe on the seam
        puts its own where it belongs (`runtop.probes.seam.SystemProbe.store`)."""
        self.readings[name] = self.readings.get(name, 0) + 1  # a reading, or an error, is news for its pane
        if error is not None:
            self.errors[name] = error
            return
        self.errors.pop(name, None)
        if name in _ENGINES_OWN:
            setattr(self, _ENGINES_OWN[name], value)


# The engine's own probes (`runtop.engine.engine`), and the field each reading lands in.
_ENGINES_OWN = {"process": "procs", "disk": "disk", "gpu": "gpu"}



@dataclass(frozen=True)
class View:
    state: RunState
    system: SystemView
    verdict: Verdict
    now: float  # wall clock (seconds since the epoch), injectable for snapshot tests
    interval: float = 2.0
    checkpoint_dir: str | None = None
    versions: Mapping[Slice, int] = field(default_factory=dict)
    logs: TailView = field(default_factory=TailView)  # the Logs pane's lines
    backfill: float = 1.0  # fraction of the run's history read (1.0: all of it)
