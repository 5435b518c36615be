"""The compare screen: the runs marked in the runs table, one chart per metric with every
run overlaid in its colour on one step axis, a legend by run, a smoothing key, and a table
of each run's latest values and trends.

It reads `RunSeries` made from the frozen views the runs' engines publish while they are
charted (`Fleet.chart`); it never touches a file or an engine's lock. Charts repaint only
when a run's numbers, the smoothing or the size change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from runtop.fleet.compare import RunSeries, common_metrics, metrics_of, step_span
from runtop.widgets.compare_charts import chart_text, legend, table_text

SMOOTHING = (0.0, 0.6, 0.9)  # `s` cycles: none, some, much (an EMA's weight on the past)
CHART_W = 40  # the narrowest chart worth reading: the grid has as many columns as fit
CHART_H_MIN = 10


class CompareScreen(Screen[None]):
    BINDINGS = [("escape", "close", "Back"), ("c", "close", "Back"), ("s", "smooth", "Smoothing")]
    DEFAULT_CSS = """
    CompareScreen #legend { height: auto; max-height: 3; background: $panel; padding: 0 1; }
    CompareScreen #charts { height: 1fr; scrollbar-size-vertical: 1; }
    CompareScreen Grid { grid-gutter: 0 1; height: auto; }
    CompareScreen .chart { height: 14; }
    CompareScreen #table { height: auto; max-height: 12; border-top: solid $primary-darken-2; padding: 0 1; }
    """

    def __init__(self, feed: Callable[[], Sequence[RunSeries]], expected: int, refresh_s: float = 1.0) -> None:
        super().__init__()
        self.feed = feed  # the charted runs' series, in the order they were marked
        self.expected = expected  # how many runs were marked (a run's first view may take a moment)
        self.refresh_s = refresh_s
        self.alpha = SMOOTHING[0]
        self.runs: list[RunSeries] = []
        self._charts: dict[str, Static] = {}  # metric → its chart, in reading order
        self._drawn: dict[str, tuple[object, ...]] = {}  # each chart's inputs when last drawn
        self._key: tuple[object, ...] = ()
        self._layout: tuple[int, int, int, tuple[int, int] | None] | None = None  # columns, chart width, height, step axis

    def compose(self) -> ComposeResult:
        yield Static(id="legend")
        with VerticalScroll(id="charts"):
            yield Grid()
        yield Static(id="table")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_data()
        self.set_interval(self.refresh_s, self.refresh_data)
        charts = self.query_one("#charts", VerticalScroll)
        self.watch(charts, "scroll_y", self.paint, init=False)
        charts.focus()

    def refresh_data(self) -> None:
        runs = list(self.feed())
        key = tuple((r.path, r.version) for r in runs)
        if key == self._key and self.runs:
            return
        self._key, self.runs = key, runs
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        runs = self.runs
        head = legend(runs)
        if len(runs) < self.expected:
            head.append(f"  reading {self.expected - len(runs)} more…", "italic grey62")
        hint = f"   smoothing EMA {self.alpha:g} (s)"
        if head.cell_len + len(hint) > (self.size.width or 120) - 2:
            hint = f"  EMA {self.alpha:g} (s)"  # one line at 80 columns: the key is in the footer
        head.append(hint, "grey62")
        self.query_one("#legend", Static).update(head)
        metrics = metrics_of(runs)
        common = common_metrics(runs)
        width, height = self.size.width or 120, self.size.height or 40
        body = table_text(runs, metrics, width - 2) if runs else Text("no steps read yet", "italic grey62")
        if runs and not common:
            body = Text("\n").join([body, Text("these runs share no metric: each chart shows the runs that log it", "italic yellow")])
        self.query_one("#table", Static).update(body)
        # What the charts have: the screen less the legend, the table (and its rule) and the footer.
        legend_h = min(3, max(1, -(-head.cell_len // max(1, width - 2))))
        room = height - legend_h - min(12, len(body.plain.splitlines()) + 1) - 1
        self._grid(metrics)
        span = step_span(runs, metrics)
        cols = max(1, min(3, width // CHART_W))
        chart_w = (width - 1 - (cols - 1)) // cols  # the scrollbar's column, the gutters
        rows = max(1, -(-len(metrics) // cols))
        # Two rows of charts on screen, the rest a scroll away; where two would be too short to
        # read (an 80x24 split), one row fills the room.
        chart_h = room // min(rows, 2) if room // min(rows, 2) >= CHART_H_MIN else max(CHART_H_MIN, room)
        grid = self.query_one(Grid)
        grid.styles.grid_size_columns = cols
        grid.styles.grid_rows = str(chart_h)  # every row a chart's height: the scroll reaches the last
        for chart in self._charts.values():
            chart.styles.height = chart_h
        self._layout = (cols, chart_w, chart_h, span)
        self.paint()

    def paint(self, _scrolled: object = None) -> None:
        """Draw the charts in view whose runs, size or smoothing changed since they were drawn:
        a chart scrolled away is drawn when it comes back (each costs a few ms of plotext)."""
        if not self._layout:
            return
        cols, chart_w, chart_h, span = self._layout
        charts = self.query_one("#charts", VerticalScroll)
        top, bottom = charts.scroll_y, charts.scroll_y + (charts.size.height or chart_h * 2)
        runs = tuple((r.path, r.version) for r in self.runs)
        for i, (metric, chart) in enumerate(self._charts.items()):
            y = (i // cols) * chart_h
            if y + chart_h <= top or y >= bottom:
                continue
            inputs = (runs, chart_w, chart_h, self.alpha, span)
            if self._drawn.get(metric) != inputs:
                self._drawn[metric] = inputs
                chart.update(chart_text(self.runs, metric, chart_w - 1, chart_h - 1, self.alpha, span))

    def _grid(self, metrics: list[str]) -> None:
        """One chart per metric the runs log, in reading order (a run that starts logging a
        new one adds its chart)."""
        if list(self._charts) == metrics:
            return
        grid = self.query_one(Grid)
        grid.remove_children()
        self._drawn.clear()
        self._charts = {m: Static(classes="chart") for m in metrics}
        if metrics:
            grid.mount_all(self._charts.values())

    def action_smooth(self) -> None:
        self.alpha = SMOOTHING[(SMOOTHING.index(self.alpha) + 1) % len(SMOOTHING)]
        self.redraw()

    def action_close(self) -> None:
        self.dismiss(None)
