"""The help screen, generated from the key table."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from runtop.tui.keys import help_rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("q", "dismiss", "Close"), ("question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80%; max-width: 100; height: auto; max-height: 100%; border: round $accent; background: $surface; padding: 1 2; }
    """

    def __init__(self, rows: list[tuple[str, str]] | None = None, title: str = "runtop keys") -> None:
        """`rows` of (key, what it does): the run's view's own by default; the runs table, the
        record and the other screens pass theirs, so `?` answers in every screen."""
        super().__init__()
        self.rows = rows if rows is not None else help_rows()
        self.title_text = title

    def compose(self) -> ComposeResult:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column()
        for key, what in self.rows:
            t.add_row(key, what)
        # Scrolls when the terminal is shorter than the list (cut at 80×24).
        with VerticalScroll():
            yield Static(Text.assemble((self.title_text, "bold"), "  (Esc closes)\n"))
            yield Static(t)


ResultType = TypeVar("ResultType")


class KeyedScreen(ModalScreen[ResultType]):
    """A screen whose `?` lists its own keys (`KEYS_HELP`): every screen answers `?`."""

    HELP_TITLE = "keys"
    KEYS_HELP: ClassVar[list[tuple[str, str]]] = []

    def action_screen_help(self) -> None:
        self.app.push_screen(HelpScreen(self.KEYS_HELP, self.HELP_TITLE))


HELP_BINDING = Binding("question_mark", "screen_help", "Keys", key_display="?")
