"""Merged tail of the run's logs: source tags, a level filter, search, pause/follow.

It draws only the lines that fit (a window over the bounded tail), into a fixed-height
area: appending lines never triggers a layout pass, which is what a busy log would
otherwise cost on every refresh. While paused, ↑/↓/PgUp/PgDn/Home/End move the window.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from runtop.state_parts import LogLine
from runtop.view import View
from runtop.widgets.pane import SafeStatic
from runtop.widgets.render import scroll_bindings

LEVELS = ("ALL", "INFO", "WARNING", "ERROR")
RANK = {"TRACE": 0, "DEBUG": 0, "INFO": 1, "SUCCESS": 1, "WARNING": 2, "ERROR": 3, "CRITICAL": 3}
LEVEL_STYLE = {"WARNING": "yellow", "ERROR": "red", "CRITICAL": "bold red", "SUCCESS": "green"}


class LogView(SafeStatic, can_focus=True):
    """The visible window of log lines."""

    BINDINGS = scroll_bindings()

    def action_scroll(self, lines: int) -> None:
        pane = self.parent
        if isinstance(pane, LogsPane):
            pane.scroll_by(lines)


class LogsPane(Vertical):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    LogsPane { height: 12; border: round $primary-darken-2; }
    LogsPane > Input { height: 3; display: none; }
    LogsPane.-searching > Input { display: block; }
    LogsPane > LogView { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.level = 0
        self.query_text = ""
        self.follow = True
        self.back = 0  # lines back from the newest (only while paused)
        self._seq = 0
        self._pending = 0
        self._lines: list[LogLine] = []
        self._shown: list[LogLine] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the log tail (Enter to apply, empty to clear)", id="log-search")
        yield LogView(id="log-view")

    def on_mount(self) -> None:
        self._retitle()

    def on_resize(self) -> None:
        self._draw()

    def _retitle(self) -> None:
        parts = [f"logs · {LEVELS[self.level]}+" if self.level else "logs · all levels"]
        if self.query_text:
            parts.append(f"/{self.query_text}")
        if self.follow:
            parts.append("following")
        else:
            parts.append(f"paused (+{self._pending} new)" + (f", {self.back} lines back" if self.back else ""))
        self.border_title = " · ".join(parts)

    def _keep(self, line: LogLine) -> bool:
        if self.level and RANK.get(line.level or "INFO", 1) < self.level:
            return False
        return not self.query_text or self.query_text.lower() in line.text.lower()

    def _refilter(self) -> None:
        self._shown = [ln for ln in self._lines if self._keep(ln)]

    def _draw(self) -> None:
        view = self.query_one(LogView)
        height = max(1, view.size.height or 8)
        end = len(self._shown) - self.back
        window = self._shown[max(0, end - height) : max(0, end)]
        out = []
        # A narrow pane (a tmux split) gives the source fewer columns and the message more.
        src_w = 16 if (view.size.width or 120) >= 120 else 10
        for ln in window:
            t = Text(no_wrap=True, overflow="ellipsis")
            t.append(f"{ln.time or '        '} ", style="grey50")
            t.append(f"{ln.source[:src_w]:<{src_w}} ", style="cyan")
            t.append(ln.text, style=LEVEL_STYLE.get(ln.level or "", ""))
            if self.query_text:
                # The matches stand out (issue 14: a search filtered but did not show where).
                t.highlight_words([self.query_text], style="black on yellow", case_sensitive=False)
            out.append(t)
        if not out:
            out = [Text("no log lines" + (" match" if self.level or self.query_text else " yet"), style="italic grey62")]
        view.update(Text("\n", no_wrap=True).join(out), layout=False)

    def update_view(self, view: View) -> bool:
        logs = view.logs
        if logs.seq == self._seq:
            return False
        new = logs.seq - self._seq
        self._seq = logs.seq
        if not self.follow:
            self._pending += new
            self._retitle()
            return False
        self._lines = list(logs.lines)
        self._refilter()
        self._draw()
        return True

    def rerender(self) -> None:
        self._refilter()
        self._pending = 0
        self._retitle()
        self._draw()

    def scroll_by(self, lines: int) -> None:
        if self.follow and lines > 0:
            self.follow = False  # looking back pauses the tail, as `less +F` does
        self.back = max(0, min(len(self._shown) - 1, self.back + lines))
        self._retitle()
        self._draw()

    def cycle_level(self) -> None:
        self.level = (self.level + 1) % len(LEVELS)
        self.rerender()

    def toggle_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.back = 0
            self._seq = -1  # take the newest lines at the next refresh
            self._pending = 0
        self._retitle()

    def open_search(self) -> None:
        box = self.query_one(Input)
        box.value = ""  # a new search starts empty (issue 14: `/` reopened the last one)
        self.add_class("-searching")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.remove_class("-searching")
        self.rerender()
        self.query_one(LogView).focus()

    def clear_search(self) -> None:
        """Esc: close the search box and show every line again."""
        self.remove_class("-searching")
        if self.query_text:
            self.query_text = ""
            self.rerender()
        self.query_one(LogView).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and (self.has_class("-searching") or self.query_text):
            event.stop()
            self.clear_search()
