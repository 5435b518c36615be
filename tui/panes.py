"""One pane registry: every pane's id, number key, title, widget class and where
it sits. The app composes, binds keys and refreshes from it; a new pane is one line here."""

from __future__ import annotations

from dataclasses import dataclass

from textual.widget import Widget

from runtop.widgets.alerts_pane import AlertsPane
from runtop.widgets.disk_pane import DiskPane
from runtop.widgets.env_calls import EnvCalls
from runtop.widgets.gpu_pane import GpuPane
from runtop.widgets.health_header import HealthHeader
from runtop.widgets.inference_pane import InferencePane
from runtop.widgets.logs_pane import LogsPane
from runtop.widgets.metric_sparklines import MetricSparklines
from runtop.widgets.process_tree import ProcessTree
from runtop.widgets.rollout_gauges import RolloutGauges
from runtop.widgets.step_table import StepTable


@dataclass(frozen=True)
class PaneSpec:
    id: str
    key: str | None  # number key: zoom it (large layout) or show it in the slot (compact); None: always shown
    title: str
    cls: type[Widget]
    place: str  # "header", "top", "left", "right", "bottom"
    slot: bool = True  # it can fill the compact layout's slot; else its key zooms it there too


PANE_SPECS: tuple[PaneSpec, ...] = (
    PaneSpec("header", None, "health", HealthHeader, "header"),
    PaneSpec("metrics", "0", "metrics", MetricSparklines, "top", slot=False),
    PaneSpec("alerts", "9", "alerts", AlertsPane, "top"),
    PaneSpec("steps", "1", "step table", StepTable, "left"),
    PaneSpec("rollouts", "3", "rollouts", RolloutGauges, "left"),
    PaneSpec("env", "4", "env calls", EnvCalls, "left"),
    PaneSpec("procs", "2", "processes", ProcessTree, "right"),
    PaneSpec("disk", "5", "disk", DiskPane, "right"),
    PaneSpec("gpus", "6", "gpus", GpuPane, "right"),
    PaneSpec("inference", "7", "inference", InferencePane, "right"),
    PaneSpec("logs", "8", "logs", LogsPane, "bottom"),
)


def placed(place: str) -> list[PaneSpec]:
    return [p for p in PANE_SPECS if p.place == place]


def widget(p: PaneSpec) -> Widget:
    # The panes that can fill the compact slot carry the `pane` class (their CSS hooks); the
    # header and the sparklines (always shown) do not.
    return p.cls(id=p.id, classes="pane") if p.key and p.slot else p.cls(id=p.id)


def spec(pid: str) -> PaneSpec:
    return next(p for p in PANE_SPECS if p.id == pid)
