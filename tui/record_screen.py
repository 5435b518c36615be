"""One log record whole (the Logs pane showed a traceback's first and last two
lines, cut at the pane's edge): every line the parser kept, where it came from, and how
many lines of a very long record's middle were not kept. `w` toggles wrap."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.screen import ModalScreen
from textual.widgets import Static

from runtop.state_parts import LogLine
from runtop.widgets.pane import SafeStatic


def record_text(line: LogLine, wrap: bool) -> Text:
    rec = line.record
    lines = rec.lines if rec is not None else (line.text,)
    out = Text(no_wrap=not wrap, overflow="fold" if wrap else "ignore")
    for i, text in enumerate(lines):
        if rec is not None and rec.dropped and i == rec.head:
            out.append(f"… {rec.dropped} lines not kept (the file has them: {rec.origin})\n", "italic grey62")
        out.append(text + ("\n" if i < len(lines) - 1 else ""), "" if i else "bold")
    return out


class RecordScreen(ModalScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("q", "dismiss", "Close"), ("enter", "dismiss", "Close"), ("w", "wrap", "Wrap")]
    DEFAULT_CSS = """
    RecordScreen { align: center middle; }
    RecordScreen > ScrollableContainer { width: 95%; height: auto; max-height: 100%; border: round $accent; background: $surface; padding: 0 1; }
    RecordScreen #record-body.-nowrap { width: auto; }
    """

    def __init__(self, line: LogLine, wrap: bool = True) -> None:
        super().__init__()
        self.line = line
        self.wrap = wrap

    def compose(self) -> ComposeResult:
        rec = self.line.record
        where = rec.origin if rec is not None else self.line.source
        with ScrollableContainer():
            yield Static(Text.assemble((f"{self.line.time or ''} {self.line.source}", "bold cyan"), f"  {where}  (w wraps, Esc closes)"))
            yield SafeStatic(record_text(self.line, self.wrap), id="record-body", classes="" if self.wrap else "-nowrap")

    def action_wrap(self) -> None:
        self.wrap = not self.wrap
        body = self.query_one("#record-body", SafeStatic)
        body.set_class(not self.wrap, "-nowrap")
        body.update(record_text(self.line, self.wrap))
