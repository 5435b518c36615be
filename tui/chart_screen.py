"""A larger chart (plotext) of one step metric; `m` picks the next metric."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Static

from runtop.view import View
from runtop.widgets.metric_sparklines import METRICS, series


def chart_text(view: View, metric: int, width: int, height: int) -> Text:
    import plotext as plt  # only when a chart is opened: it costs startup time otherwise

    column, label = METRICS[metric % len(METRICS)]
    pts = series(view, column, window=2000)
    if not pts:
        return Text(f"{label}: no values yet", style="grey62")
    plt.clf()
    plt.theme("clear")
    plt.plotsize(max(20, width), max(6, height))
    plt.plot([s for s, _ in pts], [v for _, v in pts], marker="braille")
    plt.title(f"{label} by step ({len(pts)} steps)")
    plt.xlabel("step")
    plt.xticks(step_ticks(pts[0][0], pts[-1][0], max(2, width // 12)))
    return Text.from_ansi(plt.build())


def step_ticks(first: int, last: int, most: int) -> list[int]:
    """Whole steps to mark on the x axis, a round stride (1, 2, 5, 10, 20, 50, …) apart and
    at most `most` of them (issue 14: ticks at step 1.75)."""
    span = max(1, last - first)
    k, stride = 0, 1
    while span // stride >= most:
        k += 1
        stride = (1, 2, 5)[k % 3] * 10 ** (k // 3)
    start = -(-first // stride) * stride  # the first multiple of the stride
    return sorted({first, *range(start, last + 1, stride)})


class ChartScreen(ModalScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("c", "dismiss", "Close"), ("m", "next_metric", "Next metric")]
    DEFAULT_CSS = """
    ChartScreen { align: center middle; }
    ChartScreen > Static { width: 95%; height: 90%; border: round $accent; background: $surface; }
    """

    def __init__(self, view_fn: Callable[[], View], metric: int = 0) -> None:
        super().__init__()
        self.view_fn = view_fn
        self.metric = metric

    def compose(self) -> ComposeResult:
        yield Static(id="chart")

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        chart = self.query_one("#chart", Static)
        w, h = chart.size.width or 80, chart.size.height or 20
        chart.update(chart_text(self.view_fn(), self.metric, w - 2, h - 2))
        chart.border_title = f"{METRICS[self.metric % len(METRICS)][1]} · m: next metric · Esc: close"

    def action_next_metric(self) -> None:
        self.metric += 1
        self.redraw()
