"""The confirmation modal: the exact text that will be sent and where it goes.

A destructive action needs its token typed (the step number, or `stop`): the focus is in
that input, Enter with the right token sends, and Enter with an empty or wrong one, or
Esc, cancels (the token was typed into a focused Cancel button). A
non-destructive one opens with Cancel focused, so Enter on a fresh modal never sends."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from runtop.actions.vetted import Plan
from runtop.parsers.hygiene import mask
from runtop.tui.help_screen import HELP_BINDING, KeyedScreen


class ConfirmScreen(KeyedScreen[str | None]):
    """Dismisses with the typed confirmation (or "" for a non-destructive action), or None."""

    BINDINGS = [("escape", "cancel", "Cancel"), HELP_BINDING]
    HELP_TITLE = "confirm an action: keys"
    KEYS_HELP = [("Tab", "move between the token, Cancel and Send"), ("Enter", "on Send, or in the token box with the right token: send"),
            ("Esc", "cancel: nothing is sent"), ("?", "these keys (in the token box, ? is typed)")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 90%; max-width: 120; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    ConfirmScreen #text { border: round $accent; padding: 0 1; margin: 1 0; }
    ConfirmScreen Horizontal { height: auto; align: right middle; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        p = self.plan
        with Vertical():
            yield Static(Text.assemble((f"{p.name}", "bold"), f": {p.description}"))
            if p.disabled:
                yield Static(Text(mask(f"disabled: {p.disabled}"), style="bold red"), id="reason")
            if p.text:
                yield Static(Text(mask(p.text)), id="text")
            for note in p.notes:
                yield Static(Text(mask(note), style="grey70"))
            if p.confirm and not p.disabled:
                yield Input(placeholder=f"type {p.confirm} to confirm", id="token")
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                if not p.disabled:
                    yield Button("Send", id="send", variant="warning", disabled=bool(p.confirm))

    def on_mount(self) -> None:
        if self.plan.confirm and not self.plan.disabled:
            self.query_one("#token", Input).focus()
        else:
            self.query_one("#cancel", Button).focus()  # Enter on an open modal never sends

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#send", Button).disabled = event.value.strip() != self.plan.confirm

    def on_input_submitted(self, event: Input.Submitted) -> None:
        token = event.value.strip()
        self.dismiss(token if token == self.plan.confirm else None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "send":
            token = self.query_one("#token", Input).value.strip() if self.plan.confirm else ""
            self.dismiss(token)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
