"""One log record whole (the Logs pane showed a traceback's first and last two
lines, cut at the pane's edge): every line the parser kept, where it came from, and how
many lines of a very long record's middle were not kept. `w` toggles wrap.

The Logs pane's keys work here too: `/` searches and jumps (read top down, to the first match
at or below the top of the screen; `n` the next one down, `N` back up; the title counts them),
`g`/`G` the first and the last line, `?` the keys."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widgets import Input, Static

from runtop.state.parts import LogLine
from runtop.tui.help_screen import HELP_BINDING, KeyedScreen
from runtop.widgets.log_search import Matches
from runtop.widgets.pane import SafeStatic

MATCH, CURRENT = "black on yellow", "bold black on dark_orange"


def record_lines(line: LogLine) -> tuple[str, ...]:
    rec = line.record
    return rec.lines if rec is not None else (line.text,)


def record_text(line: LogLine, wrap: bool, matches: Matches | None = None) -> Text:
    rec = line.record
    lines = record_lines(line)
    current = matches.hits[matches.at] if matches is not None and 0 <= matches.at < len(matches.hits) else -1
    out = Text(no_wrap=not wrap, overflow="fold" if wrap else "ignore")
    for i, text in enumerate(lines):
        if rec is not None and rec.dropped and i == rec.head:
            out.append(f"… {rec.dropped} lines not kept (the file has them: {rec.origin})\n", "italic grey62")
        piece = Text(text, "" if i else "bold")
        if matches is not None and matches.needle:
            piece.highlight_words([matches.needle], style=CURRENT if i == current else MATCH, case_sensitive=False)
        if i == current:
            piece.stylize("reverse", 0, 1)  # the line jumped to, marked at its start too
        out.append_text(piece)
        if i < len(lines) - 1:
            out.append("\n")
    return out


class RecordScreen(KeyedScreen[None]):
    BINDINGS = [
        ("escape", "close", "Close"), ("q", "dismiss", "Close"), ("enter", "dismiss", "Close"), ("w", "wrap", "Wrap"),
        Binding("slash", "search", "Search", key_display="/"), ("n", "next_match(1)", "Next match"),
        ("N", "next_match(-1)", "Previous match"), ("g", "first", "First line"), ("G", "last", "Last line"), HELP_BINDING,
    ]
    DEFAULT_CSS = """
    RecordScreen { align: center middle; }
    RecordScreen > ScrollableContainer { width: 95%; height: auto; max-height: 100%; border: round $accent; background: $surface; padding: 0 1; }
    RecordScreen #record-body.-nowrap { width: auto; }
    RecordScreen #record-search { display: none; height: 3; }
    RecordScreen.-searching #record-search { display: block; }
    """
    AUTO_FOCUS = None  # the screen's keys, not the (hidden, disabled) search box, take the first key
    HELP_TITLE = "a log record whole: keys"
    KEYS_HELP = [
        ("/", "search: jump to the first match at or below the top of the screen"),
        ("n N", "the next match down / back up (wraps); the title counts them: 3/17"),
        ("g G", "the first / the last line"),
        ("↑ ↓ PgUp PgDn", "scroll"),
        ("w", "wrap long lines, or not"),
        ("Esc", "close the search box, then the search, then this record"),
        ("q Enter", "close"),
        ("?", "these keys"),
    ]

    def __init__(self, line: LogLine, wrap: bool = True) -> None:
        super().__init__()
        self.line = line
        self.wrap = wrap
        self.matches = Matches()

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search this record (n next, N previous; Esc clears)", id="record-search", disabled=True)
        with ScrollableContainer():
            yield Static(self._heading(), id="record-head")
            yield SafeStatic(record_text(self.line, self.wrap), id="record-body", classes="" if self.wrap else "-nowrap")

    def _heading(self) -> Text:
        rec = self.line.record
        where = rec.origin if rec is not None else self.line.source
        out = Text.assemble((f"{self.line.time or ''} {self.line.source}", "bold cyan"), f"  {where}  (/ searches, w wraps, ? keys, Esc closes)")
        if self.matches.needle:
            out.append(f"  /{self.matches.needle} {self.matches.label()}", "bold yellow")
        return out

    def _redraw(self) -> None:
        self.query_one("#record-head", Static).update(self._heading())
        self.query_one("#record-body", SafeStatic).update(record_text(self.line, self.wrap, self.matches))

    def action_wrap(self) -> None:
        self.wrap = not self.wrap
        body = self.query_one("#record-body", SafeStatic)
        body.set_class(not self.wrap, "-nowrap")
        self._redraw()

    def action_search(self) -> None:
        box = self.query_one("#record-search", Input)
        box.value = ""
        box.disabled = False
        self.add_class("-searching")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_box()
        self.matches.find(record_lines(self.line), event.value.strip())
        if not self.matches.needle:
            self._redraw()
            return
        found = self.matches.nearest(self._top_line(), older=False)
        self._redraw()
        if found is None:
            self.app.notify(f"no line of this record holds {self.matches.needle!r}", timeout=3)
        else:
            self._show(found)

    def action_next_match(self, by: int) -> None:
        if not self.matches.needle:
            self.app.notify("no search yet: / searches this record", timeout=3)
            return
        found = self.matches.step(by)
        self._redraw()
        if found is not None:
            self._show(found)

    def action_first(self) -> None:
        self.query_one(ScrollableContainer).scroll_home(animate=False)

    def action_last(self) -> None:
        self.query_one(ScrollableContainer).scroll_end(animate=False)

    def action_close(self) -> None:
        """Esc: the search box first, then the search, then the record."""
        if self.has_class("-searching"):
            self._close_box()
        elif self.matches.needle:
            self.matches = Matches()
            self._redraw()
        else:
            self.dismiss()

    def _close_box(self) -> None:
        self.remove_class("-searching")
        self.query_one("#record-search", Input).disabled = True  # never focused by a stray key or Tab
        self.set_focus(None)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.has_class("-searching"):
            event.stop()
            self.action_close()

    # ---- rows: where a line of the record sits on the screen ---------------------------
    def _rows_before(self, index: int) -> int:
        """Rows above line `index` of the record in the body (the heading's row not counted)."""
        rec = self.line.record
        width = max(1, self.query_one("#record-body", SafeStatic).content_size.width or 80)
        rows = 0
        for i, text in enumerate(record_lines(self.line)[:index]):
            if rec is not None and rec.dropped and i == rec.head:
                rows += 1
            rows += max(1, -(-cell_len(text) // width)) if self.wrap else 1
        if rec is not None and rec.dropped and rec.head == index:
            rows += 1  # the note of lines not kept sits just above this one
        return rows

    def _top_line(self) -> int:
        """The record's line at the top of the screen now."""
        y = self.query_one(ScrollableContainer).scroll_offset.y
        for i in range(len(record_lines(self.line))):
            if self._rows_before(i) + 1 >= y:
                return i
        return 0

    def _show(self, index: int) -> None:
        """Scroll so line `index` is in the middle of the screen, its neighbours around it."""
        box = self.query_one(ScrollableContainer)
        row = 1 + self._rows_before(index)  # below the heading
        box.scroll_to(y=max(0, row - box.scrollable_content_region.height // 2), animate=False)
