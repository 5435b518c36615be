"""Sparklines of the step metrics: last value, min, max and trend, over a bounded window."""

from __future__ import annotations

import math

from rich.text import Text

from runtop.columns import SPARKLINES
from runtop.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import num, sparkline, trend

# (column, label), from the one description of the step columns.
METRICS = tuple((c.name, "step time" if c.name == "step_time_s" else c.short) for c in SPARKLINES)
WINDOW = 120  # steps kept per sparkline: bounded, whatever the run's length


def series(view: View, column: str, window: int = WINDOW) -> list[tuple[int, float]]:
    st = view.state
    out = []
    for row in st.rows(window):
        v = row.value(column)
        if v is not None and math.isfinite(v):
            out.append((row.step, v))
    return out


class MetricSparklines(Pane):
    TITLE = "metrics"
    READS = (Slice.STEPS,)

    def render_view(self, view: View) -> Text:
        # Fixed-width lines, not a table: this pane repaints with every step.
        width = max(8, (self.size.width or 80) - 44)
        rows = [(label, vals) for column, label in METRICS if (vals := [v for _, v in series(view, column)])]
        span = min(width, max((len(v) for _, v in rows), default=0))  # one column for the numbers
        lines = []
        for label, vals in rows:
            line = Text(f"{label:<10}")
            line.append(sparkline(vals, width).ljust(span), "cyan")
            line.append(f" {num(vals[-1]):>9} {trend(vals)} ")
            line.append(f"{num(min(vals), 3)}…{num(max(vals), 3)}", "grey62")
            lines.append(line)
        if not lines:
            return Text("no step metrics yet", style="italic grey62")
        return Text("\n").join(lines)
