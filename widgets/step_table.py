"""The step table the notes in docs/incidents.md kept by hand: the newest steps that fit, scrollable
when focused.

It draws only the rows that fit into a fixed-height area, so a new step repaints this
pane alone: no layout pass, no cache of every row (a DataTable re-renders all of its
rows whenever one is added, which made it half the TUI's CPU on a busy run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from runtop.parsers.columns import STEP_COLUMNS
from runtop.view.view import Slice, View
from runtop.widgets.metric_sparklines import WINDOW
from runtop.widgets.pane import SafeStatic, titled, versions
from runtop.widgets.render import column_format, scroll_bindings

# (header, column, width): fixed widths, so a refresh formats strings instead of measuring a table.
COLUMNS = (("step", None, 6), *((c.short, c.name, c.width) for c in STEP_COLUMNS))


class StepTable(SafeStatic, can_focus=True):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    StepTable { height: 1fr; min-height: 5; border: round $primary-darken-2; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    StepTable:focus { border: round $accent; }
    """
    BINDINGS = scroll_bindings()
    READS = (Slice.STEPS, Slice.RUN)  # rows, and the attempt that marks a row of an earlier one

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self.border_title = "steps"
        self.back = 0  # rows back from the newest
        self._sig: object = None
        self._view: View | None = None

    def _cells(self, view: View, step: int, formats: dict[str, Callable[[float], str]]) -> list[str]:
        row = view.state.steps[step]
        cells = [str(step) if row.attempt == view.state.attempt else f"{step} (#{row.attempt})"]
        for c in STEP_COLUMNS:
            v = row.value(c.name)
            cells.append("" if v is None else (f"{v:.0f}s" if c.name == "step_time_s" else formats[c.name](v)))
        return cells

    def update_view(self, view: View) -> bool:
        sig = (versions(view, self.READS), self.back, self.size)
        if sig == self._sig:
            return False
        self._sig = sig
        self._view = view
        self.update(self._render_table(view), layout=False)
        return True

    def _render_table(self, view: View) -> Text:
        steps = view.state.step_keys()
        if not steps:
            return Text("no steps yet", style="italic grey62")
        height = max(1, (self.size.height or 10) - 1)  # one line for the header
        self.back = max(0, min(self.back, len(steps) - 1))
        end = len(steps) - self.back
        window = steps[max(0, end - height) : end]

        def line(cells: list[str]) -> str:
            return "".join(c.ljust(w) if i == 0 else c[: w - 1].rjust(w) for i, (c, (_l, _c, w)) in enumerate(zip(cells, COLUMNS)))

        # One format per column, from the rows on screen and the newest steps the sparklines
        # draw: a metric reads the same in both panes, and its column does not flip between
        # `1.56e-03` and `0.001380` as the rows scroll.
        rows = [view.state.steps[s] for s in window] + view.state.rows(WINDOW)
        formats = {c.name: column_format([v for r in rows if (v := r.value(c.name)) is not None]) for c in STEP_COLUMNS}
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(line([label for label, _c, _w in COLUMNS]), style="bold")
        for s in window:
            t.append("\n" + line(self._cells(view, s, formats)))
        if self.back:
            titled(self, f"steps · {window[0]}-{window[-1]} of {len(steps)} (End: newest)")
        else:
            titled(self, "steps")
        return t

    def action_scroll(self, rows: int) -> None:
        self.back = max(0, self.back + rows)
        if self._view is not None:
            self._sig = None
            self.update_view(self._view)
