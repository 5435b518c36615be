"""Every metric the run logs, as a grid of sparklines: last value, trend, min and max over a
bounded window (a fixed seven, however many the run wrote). The known metrics
come first in the order a researcher reads them; then the rest of each side's numbers, the
framework's extras (`trainable_frac`, `reverse-text/reward`) and the step phases' times.
Zoomed (0) the grid fills the screen; `c` charts any of them."""

from __future__ import annotations

import math

from rich.text import Text

from runtop.parsers.columns import BY_NAME, METRICS, SPARKLINES
from runtop.state.parts import StepRow
from runtop.view.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import column_format, sparkline, trend

WINDOW = 120  # steps kept per sparkline: bounded, whatever the run's length
PHASE = "time/"  # a step phase's seconds (`time/forward_backward`)
CELL_MIN = 90  # the narrowest grid cell: label, a sparkline of 30 or more, the value and its range
ROWS = 7  # rows of the grid in the full layout, unzoomed (the top band beside the alerts)
COMPACT_ROWS = 5
SHORT_ROWS = 6  # under 50 rows (120×40): one row to the columns below, so every pane fits whole


def label(name: str) -> str:
    m = BY_NAME.get(name)
    if name == "step_time_s":
        return "step time"
    return (m.short or m.name.replace("_", " ")) if m is not None else name


def value(row: StepRow, name: str) -> float | None:
    """`name`'s number in `row`, wherever the run put it."""
    if name.startswith(PHASE):
        return row.phases_s.get(name[len(PHASE) :])
    v = row.value(name)
    if v is None:
        v = row.rollout.get(name)
    if v is None:
        v = row.extra.get(name)
    return v


def logged(view: View, window: int = WINDOW) -> list[str]:
    """Every metric with a finite value in the last `window` steps: the sparkline metrics
    first, then the other known ones, then the rest by name."""
    seen: set[str] = set()
    for row in view.state.rows(window):
        for d in (row.trainer, row.rollout, row.extra):
            seen.update(k for k, v in d.items() if isinstance(v, (int, float)) and math.isfinite(v))
        seen.update(PHASE + k for k in row.phases_s)
    first = [m.name for m in SPARKLINES] + [m.name for m in METRICS if not m.spark]
    return [n for n in first if n in seen] + sorted(seen - set(first) - {"rollouts"})


def series(view: View, name: str, window: int = WINDOW) -> list[tuple[int, float]]:
    out = []
    for row in view.state.rows(window):
        v = value(row, name)
        if v is not None and math.isfinite(v):
            out.append((row.step, v))
    return out


def stretch(values: list[float], width: int) -> list[float]:
    """`values` drawn over `width` columns: each repeated as often as the width allows, so a
    short run's sparkline spans its cell instead of hugging its left edge."""
    vals = [v for v in values if math.isfinite(v)][-width:]
    if not vals or len(vals) >= width:
        return vals
    return [vals[i * len(vals) // width] for i in range(width)]


class MetricSparklines(Pane):
    TITLE = "metrics"
    READS = (Slice.STEPS,)

    def _rows(self) -> int:
        if self.has_class("-maximized") or self.has_class("-slot"):
            return max(1, (self.size.height or ROWS + 2) - 2)
        if self.is_attached and self.screen.has_class("-compact"):
            return COMPACT_ROWS
        return SHORT_ROWS if self.is_attached and self.screen.has_class("-short") else ROWS

    def render_view(self, view: View) -> Text:
        # Fixed-width lines, not a table: this pane repaints with every step.
        names = logged(view)
        if not names:
            return Text("no step metrics yet", style="italic grey62")
        width = max(30, self.size.width or 76)  # the content region, inside the border and padding
        # As few columns as the rows allow: a taller pane gives each sparkline more width.
        avail = self._rows()
        cols = max(1, min(-(-len(names) // avail), width // CELL_MIN))
        rows = max(1, min(avail, -(-len(names) // cols)))
        shown = names[: rows * cols]
        more = len(names) - len(shown)
        if more:
            shown = shown[:-1]  # the last cell says what is not shown, and how to see it
            more += 1
        cell_w = width // cols
        label_w = min(max(14, min(24, cell_w // 3)), max((len(label(n)) for n in shown), default=8))
        data = [(n, [v for _, v in series(view, n)]) for n in shown]
        fmts = [column_format(vals) for _, vals in data]  # one format for a value and its range
        ranges = [f"{f(min(vals))}…{f(max(vals))}" for f, (_, vals) in zip(fmts, data)]
        range_w = min(22, max((len(r) for r in ranges), default=0))
        # The sparklines take what the numbers leave: as wide as the cell allows, one column
        # for them all so the numbers line up.
        # label, space, sparkline, space, value (10), space and trend, space and range, and the
        # cell's last column left blank between two cells.
        spark_w = cell_w - label_w - 1 - 1 - 10 - 2 - 1 - range_w - 1
        if spark_w < 10:
            range_w, spark_w = 0, max(4, cell_w - label_w - 1 - 1 - 10 - 2 - 1)
        # Fewer steps than columns: each step is drawn wider, so the line spans its cell (at
        # 200×50 twenty steps were twenty columns beside a hundred empty ones).
        span = spark_w if any(vals for _, vals in data) else 0
        cells = []
        for (n, vals), f, rng in zip(data, fmts, ranges):
            name = label(n)
            cell = Text(f"{name if len(name) <= label_w else name[: label_w - 1] + '…':<{label_w}} ")
            cell.append(sparkline(stretch(vals, spark_w), spark_w).ljust(span), "cyan")
            cell.append(f" {f(vals[-1]):>10} {trend(vals)}")
            if range_w:
                cell.append(f" {rng}", "grey62")
            cells.append(cell)
        if more:
            cells.append(Text(f"+{more} more: 0 zooms, c charts any", style="italic grey62"))
        lines = []
        for r in range(rows):
            line = Text()
            for c in range(cols):
                i = c * rows + r  # down the first column, then the next: related metrics stay together
                if i < len(cells):
                    cell = cells[i]
                    cell.truncate(cell_w - 1, overflow="ellipsis", pad=c < cols - 1)
                    line.append_text(cell)
                    line.append(" ")
            lines.append(line)
        return Text("\n").join(lines)
