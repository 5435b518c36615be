"""Merged tail of the run's logs: source tags, a level filter, search, pause/follow, wrap.

It draws only the lines that fit (a window over the bounded tail), into a fixed-height
area: appending lines never triggers a layout pass, which is what a busy log would
otherwise cost on every refresh. Focused, it shows a cursor line: ↑/↓/PgUp/PgDn/Home move
it (and pause the tail), End follows again, Enter opens the cursor's record whole.

As the log viewers researchers know (less, toolong, k9s): `/` searches and jumps to the
newest match at or above the cursor, its line centred among its neighbours, `n` goes on to
the next match up (older) and `N` back down, the title counting them ("3/17"); `f` filters
(only the lines that hold the text); `g`/`G` go to the oldest and the newest line; `t 14:05`
to the first line written at or after that time.
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

from runtop.state.parts import LogLine
from runtop.view.view import View
from runtop.widgets.log_search import Matches, at_time, parse_clock
from runtop.widgets.pane import SafeStatic, titled
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

    def on_resize(self) -> None:
        # The input box above it closed (or opened): the window has other rows to fill.
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

    # What the one input box asks for: (placeholder, what Enter does).
    PROMPTS = {
        "search": "search: jump to the lines that hold this (n older, N newer; Esc clears)",
        "filter": "filter: show only the lines that hold this (empty shows every line)",
        "time": "go to the first line at or after a time: 14:05 or 14:05:30",
    }

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.level = 0
        self.filter_text = ""  # `f`: only the lines holding it are shown
        self.matches = Matches()  # `/`: every line shown, the ones holding it jumped between
        self.mode = "search"  # what the input box is asking for
        self.follow = True
        self.wrap = False
        self.back = 0  # the window's bottom, in lines back from the newest (only while paused)
        self.pick = 0  # the cursor line, in lines back from the newest (shown while focused)
        self._seq = 0
        self._pending = 0
        self._lines: list[LogLine] = []
        self._shown: list[LogLine] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder=self.PROMPTS["search"], id="log-search")
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
        if self.filter_text:
            parts.append(f"filter {self.filter_text}")
        if self.matches.needle:
            parts.append(f"/{self.matches.needle} {self.matches.label()}")
        if self.follow:
            parts.append("following")
        else:
            parts.append(f"paused (+{self._pending} new)" + (f", {self.back} lines back" if self.back else ""))
        titled(self, " · ".join(parts))

    def _keep(self, line: LogLine) -> bool:
        if self.level and RANK.get(line.level or "INFO", 1) < self.level:
            return False
        return not self.filter_text or self.filter_text.lower() in line.text.lower()

    def _refilter(self) -> None:
        self._shown = [ln for ln in self._lines if self._keep(ln)]
        if self.matches.needle:
            self.matches.refind([ln.text for ln in self._shown])

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
            # The text searched for or filtered by stands out where it is.
            words = [w for w in (self.filter_text, self.matches.needle) if w]
            if words:
                t.highlight_words(words, style="black on yellow", case_sensitive=False)
            if i == cursor:
                t.stylize("reverse")
            out.append(t)
        if not out:
            out = [Text("no log lines" + (" match" if self.level or self.filter_text else " yet"), style="italic grey62")]
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

    def open_search(self, mode: str = "search") -> None:
        """The input box for `mode`: "search" (`/`), "filter" (`f`) or "time" (`t`)."""
        self.mode = mode
        box = self.query_one(Input)
        box.placeholder = self.PROMPTS[mode]
        # A new search starts empty (`/` reopened the last one); a filter shows the one it changes.
        box.value = self.filter_text if mode == "filter" else ""
        self.add_class("-searching")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.remove_class("-searching")
        self.query_one(LogView).focus(scroll_visible=False)
        # Once the box has gone and the window has its rows back: a jump centres its line in them.
        if self.mode == "filter":
            self.filter_text = text
            self.call_after_refresh(self.rerender)
        elif self.mode == "time":
            self.call_after_refresh(self.go_to_time, text)
        else:
            self.call_after_refresh(self.search, text)

    def search(self, text: str) -> None:
        """Find `text` in the lines shown and jump to the newest match at or above the cursor."""
        self.matches.find([ln.text for ln in self._shown], text)
        if not text:
            self._retitle()
            self._draw()
            return
        found = self.matches.nearest(len(self._shown) - 1 - self.pick)
        if found is None:
            self._retitle()
            self._draw()
            self.app.notify(f"no line holds {text!r}", timeout=3)
            return
        self.jump_to(found)

    def next_match(self, by: int) -> None:
        """`n` (by -1: the next match up, older) and `N` (by 1: back down, newer)."""
        if not self.matches.needle:
            self.app.notify("no search yet: / searches the logs", timeout=3)
            return
        found = self.matches.step(by)
        if found is None:
            self.app.notify(f"no line holds {self.matches.needle!r}", timeout=3)
            return
        self.jump_to(found)

    def go_to_time(self, text: str) -> None:
        when = parse_clock(text)
        if when is None:
            self.app.notify(f"{text!r} is not a time: give 14:05 or 14:05:30", timeout=4)
            return
        found = at_time([ln.time for ln in self._shown], when)
        if found is None:
            self.app.notify(f"no line at or after {when}: the newest is shown", timeout=4)
            found = len(self._shown) - 1
        if found >= 0:
            self.jump_to(found)

    def jump_to(self, index: int) -> None:
        """Put the cursor on line `index` of the lines shown (oldest first), with its
        neighbours above and below it; the tail pauses there, as any look back does."""
        if not self._shown:
            return
        index = max(0, min(len(self._shown) - 1, index))
        height = max(1, self.query_one(LogView).size.height or 8)
        self.follow = False
        self.pick = len(self._shown) - 1 - index
        self.back = max(0, self.pick - height // 2)
        self._retitle()
        self.query_one(LogView).focus(scroll_visible=False)  # the cursor (shown while focused) marks the line jumped to
        self._draw()

    def oldest(self) -> None:
        """`g`: the oldest line kept."""
        self.jump_to(0)

    def newest(self) -> None:
        """`G`: the newest line, following again."""
        if not self.follow:
            self.toggle_follow()
        self.back = self.pick = 0
        self.rerender()

    def clear_search(self) -> None:
        """Esc: close the input box; else forget the search; else the filter (every line again)."""
        if self.has_class("-searching"):
            self.remove_class("-searching")
        elif self.matches.needle:
            self.matches = Matches()
            self.rerender()
        elif self.filter_text:
            self.filter_text = ""
            self.rerender()
        self.query_one(LogView).focus(scroll_visible=False)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and (self.has_class("-searching") or self.filter_text or self.matches.needle):
            event.stop()
            self.clear_search()
