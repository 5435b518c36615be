"""Merged tail of the run's logs: source tags, a level filter, search, pause/follow, wrap.

It draws only the lines that fit (a window over the bounded tail), into a fixed-height
area: appending lines never triggers a layout pass, which is what a busy log would
otherwise cost on every refresh. Focused, it shows a cursor line: ↑/↓/PgUp/PgDn/Home move
it (and pause the tail), End follows again, Enter opens the cursor's record whole.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
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

    BINDINGS = [*scroll_bindings(), Binding("enter", "open", "Whole record", show=False)]

    def _pane(self) -> LogsPane | None:
        return self.parent if isinstance(self.parent, LogsPane) else None

    def action_scroll(self, lines: int) -> None:
        if pane := self._pane():
            pane.scroll_by(lines)

    def action_open(self) -> None:
        if pane := self._pane():
            pane.open_record()

    def on_focus(self) -> None:
        if pane := self._pane():
            pane.draw()

    def on_blur(self) -> None:
        if pane := self._pane():
            pane.draw()


class LogsPane(Vertical):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    LogsPane { height: 12; border: round $primary-darken-2; }
    LogsPane > Input { height: 3; display: none; }
    LogsPane.-searching > Input { display: block; }
    LogsPane > LogView { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    class OpenRecord(Message):
        """Enter on a log line: the app shows its record whole."""

        def __init__(self, line: LogLine) -> None:
            super().__init__()
            self.line = line

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.level = 0
        self.query_text = ""
        self.follow = True
        self.wrap = False
        self.back = 0  # the window's bottom, in lines back from the newest (only while paused)
        self.pick = 0  # the cursor line, in lines back from the newest (shown while focused)
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

    def draw(self) -> None:
        self._draw()

    def _retitle(self) -> None:
        parts = [f"logs · {LEVELS[self.level]}+" if self.level else "logs · all levels"]
        if self.wrap:
            parts.append("wrapped")
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
        width = max(20, view.size.width or 120)
        # A narrow pane (a tmux split) gives the source fewer columns and the message more.
        src_w = 16 if width >= 120 else 10
        self.pick = min(self.pick, max(0, len(self._shown) - 1))
        end = len(self._shown) - self.back
        window = self._window(end, height, width - 10 - src_w)
        if self.pick >= self.back + len(window) > 0:  # wrapped rows left the cursor above the window
            self.back = self.pick - len(window) + 1
            end = len(self._shown) - self.back
            window = self._window(end, height, width - 10 - src_w)
        cursor = len(self._shown) - 1 - self.pick if view.has_focus else -1
        out = []
        for i, ln in enumerate(window, end - len(window)):
            t = Text(no_wrap=not self.wrap, overflow="fold" if self.wrap else "ellipsis")
            t.append(f"{ln.time or '        '} ", style="grey50")
            t.append(f"{ln.source[:src_w]:<{src_w}} ", style="cyan")
            t.append(ln.text, style=LEVEL_STYLE.get(ln.level or "", ""))
            if self.query_text:
                # The matches stand out (a search filtered but did not show where).
                t.highlight_words([self.query_text], style="black on yellow", case_sensitive=False)
            if i == cursor:
                t.stylize("reverse")
            out.append(t)
        if not out:
            out = [Text("no log lines" + (" match" if self.level or self.query_text else " yet"), style="italic grey62")]
        view.update(Text("\n", no_wrap=not self.wrap).join(out), layout=False)

    def _window(self, end: int, height: int, text_w: int) -> list[LogLine]:
        """The lines that fill `height` rows ending at `end`: one row each, or (wrapped) as
        many as each needs, the newest always shown."""
        if not self.wrap:
            return self._shown[max(0, end - height) : max(0, end)]
        rows, start = 0, end
        while start > 0:
            need = max(1, -(-cell_len(self._shown[start - 1].text) // max(1, text_w)))
            if rows + need > height and start < end:
                break
            rows += need
            start -= 1
        return self._shown[start:end]

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
        """Move the cursor `lines` older (negative: newer); the window follows it. Looking
        back pauses the tail, as `less +F` does; End (the newest) follows again."""
        if lines <= -len(self._shown) and not self.follow:
            self.toggle_follow()
            self.rerender()
            return
        if self.follow and lines > 0:
            self.follow = False
        height = max(1, self.query_one(LogView).size.height or 8)
        self.pick = max(0, min(len(self._shown) - 1, self.pick + lines))
        if self.pick < self.back:
            self.back = self.pick
        elif self.pick >= self.back + height:
            self.back = self.pick - height + 1
        self._retitle()
        self._draw()

    def cursor_line(self) -> LogLine | None:
        i = len(self._shown) - 1 - self.pick
        return self._shown[i] if 0 <= i < len(self._shown) else None

    def open_record(self) -> None:
        line = self.cursor_line()
        if line is not None:
            self.post_message(self.OpenRecord(line))

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self.query_one(LogView).styles.text_wrap = "wrap" if self.wrap else "nowrap"
        self._retitle()
        self._draw()

    def cycle_level(self) -> None:
        self.level = (self.level + 1) % len(LEVELS)
        self.rerender()

    def toggle_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.back = self.pick = 0
            self._seq = -1  # take the newest lines at the next refresh
            self._pending = 0
        self._retitle()

    def open_search(self) -> None:
        box = self.query_one(Input)
        box.value = ""  # a new search starts empty (`/` reopened the last one)
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
