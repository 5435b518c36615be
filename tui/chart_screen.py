"""A larger chart (plotext) of any metric the run logs: a picker down the left lists them
all (↑/↓ or a click picks; `m` the next), the chart fills the rest (only the
seven sparkline metrics could be charted, by cycling)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from runtop.tui.help_screen import HELP_BINDING, KeyedScreen
from runtop.view.view import View
from runtop.widgets.metric_sparklines import label, logged, series
from runtop.widgets.render import step_ticks


def chart_text(view: View, name: str, width: int, height: int) -> Text:
    import plotext as plt  # only when a chart is opened: it costs startup time otherwise

    pts = series(view, name, window=2000)
    if not pts:
        return Text(f"{label(name)}: no values yet", style="grey62")
    plt.clf()
    plt.theme("clear")
    plt.plotsize(max(20, width), max(6, height))
    plt.plot([s for s, _ in pts], [v for _, v in pts], marker="braille")
    plt.title(f"{label(name)} by step ({len(pts)} steps)")
    plt.xlabel("step")
    plt.xticks(step_ticks(pts[0][0], pts[-1][0], max(2, width // 12)))
    return Text.from_ansi(plt.build())


class ChartScreen(KeyedScreen[str]):
    BINDINGS = [("escape", "close", "Close"), ("c", "close", "Close"), ("m", "next_metric", "Next metric"), HELP_BINDING]
    HELP_TITLE = "chart: keys"
    KEYS_HELP = [("↑ ↓", "pick a metric"), ("m", "the next metric"), ("Esc c", "close (the chart opens on this metric next time)"), ("?", "these keys")]
    DEFAULT_CSS = """
    ChartScreen { align: center middle; }
    ChartScreen > Horizontal { width: 95%; height: 90%; border: round $accent; background: $surface; }
    ChartScreen OptionList, ChartScreen OptionList:focus { width: 26; height: 1fr; border: none; border-right: solid $primary-darken-2; }
    ChartScreen #chart { width: 1fr; height: 1fr; }
    """

    def __init__(self, view_fn: Callable[[], View], metric: str | int = 0) -> None:
        super().__init__()
        self.view_fn = view_fn
        self.names = logged(view_fn()) or ["reward"]
        self.metric = metric if isinstance(metric, str) and metric in self.names else self.names[int(metric) % len(self.names) if isinstance(metric, int) else 0]

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield OptionList(*(Option(label(n), id=n) for n in self.names), id="picker")
            yield Static(id="chart")

    def on_mount(self) -> None:
        picker = self.query_one(OptionList)
        picker.highlighted = self.names.index(self.metric)
        picker.focus()
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self.metric:
            self.metric = event.option.id
            self.redraw()

    def redraw(self) -> None:
        chart = self.query_one("#chart", Static)
        w, h = chart.size.width or 60, chart.size.height or 20
        chart.update(chart_text(self.view_fn(), self.metric, w - 1, h - 1))
        box = self.query_one(Horizontal)
        box.border_title = f"{label(self.metric)} · ↑↓ pick · m next · Esc close"

    def action_close(self) -> None:
        self.dismiss(self.metric)

    def action_next_metric(self) -> None:
        picker = self.query_one(OptionList)
        picker.highlighted = (self.names.index(self.metric) + 1) % len(self.names)
