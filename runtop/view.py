"""What a screen renders: the run's state, the latest system readings, the verdict, the clock.

Widgets read a `View` and nothing else (DESIGN.md: widgets render state only). A view the
engine publishes is frozen: its state is a copy the engine never writes again, and
`versions` says which slices moved since earlier views (`runtop.publish`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtop.health import Verdict
from runtop.log_tail import TailView
from runtop.parsers.events import VllmStats
from runtop.publish import Slice
from runtop.sources.disk import DiskSnapshot
from runtop.sources.gpu import GpuSnapshot
from runtop.sources.processes import ProcessSnapshot
from runtop.state import RunState


@dataclass
class SystemView:
    """The latest reading of each probe; `errors` holds why a probe has none."""

    procs: ProcessSnapshot | None = None
    disk: DiskSnapshot | None = None
    gpu: GpuSnapshot | None = None
    vllm_http: VllmStats | None = None
    vllm_url: str | None = None
    errors: dict[str, str] = field(default_factory=dict)  # probe name → why it has no reading


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
