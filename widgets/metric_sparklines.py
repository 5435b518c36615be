"""Sparklines of the step metrics: last value, min, max and trend, over a bounded window."""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text

from runtop.view import View
from runtop.widgets.pane import Pane
from runtop.widgets.render import num, sparkline, trend

# (column, label): one declarative list drives this pane and the chart (glances' way).
METRICS = (
    ("reward", "reward"),
    ("entropy", "entropy"),
    ("grad_norm", "grad norm"),
    ("kl", "KL"),
    ("loss", "loss"),
    ("seq_len", "seq len"),
    ("step_time_s", "step time"),
)
WINDOW = 120  # steps kept per sparkline: bounded, whatever the run's length


def series(view: View, column: str, window: int = WINDOW) -> list[tuple[int, float]]:
    st = view.state
    out = []
    for s in sorted(st.steps)[-window:]:
        v = st.steps[s].value(column)
        if v is not None and math.isfinite(v):
            out.append((s, v))
    return out


class MetricSparklines(Pane):
    TITLE = "metrics"

    def signature(self, view: View) -> object:
        st = view.state
        last = max(st.steps) if st.steps else None
        row = st.steps.get(last) if last is not None else None
        return (len(st.steps), last, tuple(sorted(row.trainer.items())) if row else (), tuple(sorted(row.orchestrator.items())) if row else (), self.size.width)

    def render_view(self, view: View) -> Table:
        width = max(8, (self.size.width or 80) - 44)
        t = Table.grid(padding=(0, 1))
        t.add_column(width=9, no_wrap=True)
        t.add_column(no_wrap=True)
        t.add_column(justify="right", no_wrap=True)
        t.add_column(no_wrap=True)
        t.add_column(no_wrap=True, style="grey62")
        shown = 0
        for column, label in METRICS:
            vals = [v for _, v in series(view, column)]
            if not vals:
                continue
            shown += 1
            t.add_row(label, Text(sparkline(vals, width), style="cyan"), num(vals[-1]), trend(vals), f"{num(min(vals), 3)}…{num(max(vals), 3)}")
        if not shown:
            t.add_row("", Text("no step metrics yet", style="italic grey62"), "", "", "")
        return t
