"""The help screen, generated from the key table."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
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

    def compose(self) -> ComposeResult:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column()
        for key, what in help_rows():
            t.add_row(key, what)
        # Scrolls when the terminal is shorter than the list (cut at 80×24).
        with VerticalScroll():
            yield Static("[b]runtop keys[/b]  (Esc closes)\n")
            yield Static(t)
