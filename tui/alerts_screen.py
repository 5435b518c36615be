"""Every alert in full (alert text and its evidence were cut to one line at every
size, even zoomed): the whole message, the cause an expert names, the wrapper that reported
it, what the run was doing, the evidence, since when, and the next step."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from runtop.rules.advice import advise
from runtop.tui.help_screen import HELP_BINDING, KeyedScreen
from runtop.view.view import View
from runtop.widgets.alerts_pane import SEVERITY_STYLE
from runtop.widgets.pane import SafeStatic


def alerts_text(view: View, keys: dict[str, str]) -> Text:
    v = view.verdict
    out = Text()
    out.append(f"{v.verdict}", style="bold")
    advice = advise(view.state, v)
    if advice is not None:
        key = keys.get(advice.action or advice.pane or "")
        out.append(f" · next ({key}): " if key else " · next: ", style="bold")
        out.append(advice.text, style="bold")
        if advice.refused and advice.action is None:
            out.append(f"\n  resume not offered: {advice.refused}", "grey62")
    if not v.alerts:
        out.append("\n\nno alerts", style="green")
    for a in v.alerts:
        out.append("\n\n")
        out.append(f"{a.label} ", SEVERITY_STYLE.get(a.label, ""))
        out.append(f"{a.rule}", "bold")
        out.append(f"  since {a.since or '?'}\n", "grey62")
        out.append(a.message)
        for label, value in (("error", a.detail), ("cause", a.cause), ("reported by", a.wrapper), ("while", a.phase), ("evidence", a.evidence)):
            if value:
                out.append(f"\n  {label}: ", "grey62")
                out.append(value)
    return out


class AlertsScreen(KeyedScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("q", "dismiss", "Close"), ("enter", "dismiss", "Close"), HELP_BINDING]
    HELP_TITLE = "alerts in full: keys"
    KEYS_HELP = [("↑ ↓ PgUp PgDn", "scroll"), ("Esc q Enter", "close"), ("?", "these keys")]
    DEFAULT_CSS = """
    AlertsScreen { align: center middle; }
    AlertsScreen > VerticalScroll { width: 90%; height: auto; max-height: 100%; border: round $accent; background: $surface; padding: 1 2; }
    AlertsScreen Static { text-wrap: wrap; }
    """

    def __init__(self, view: View, keys: dict[str, str]) -> None:
        super().__init__()
        self._text = alerts_text(view, keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("[b]alerts in full[/b]  (Esc closes, ? keys)\n")
            yield SafeStatic(self._text)
