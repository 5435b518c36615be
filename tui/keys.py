"""One key table: it makes the app's BINDINGS, the Footer and the help screen (W&B LEET's way)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

from runtop.actions.vetted import REGISTRY as ACTIONS
from runtop.tui.panes import PANE_SPECS


@dataclass(frozen=True)
class Key:
    key: str
    action: str
    description: str
    show: bool = True
    shown_key: str | None = None  # how the help screen writes it


# Number keys: (key, pane id, title). Large layout: zoom that pane; compact: show it in the slot.
PANES = tuple(sorted((p.key, p.id, p.title) for p in PANE_SPECS if p.key))

KEYS: tuple[Key, ...] = (
    Key("q", "quit", "Quit"),
    # What every terminal program does on ctrl+c (Textual reserves it for copy).
    Key("ctrl+c", "quit", "Quit (as q)", show=False, shown_key="ctrl+c"),
    Key("question_mark", "help", "Help", shown_key="?"),
    *(Key(k, f"pane('{pid}')", f"{title}", show=False) for k, pid, title in PANES),
    Key("minus", "hide_pane", "Hide the selected pane", show=False, shown_key="-"),
    Key("plus", "show_all", "Show hidden panes", show=False, shown_key="+"),
    # Vetted actions, from the one action registry: each opens the confirmation modal
    # first (the check-in writes at once); none in read-only mode.
    *(
        Key(a.key, "checkin" if a.name == "checkin" else f"act('{a.name}')", a.label, show=a.shown, shown_key=a.key)
        for a in ACTIONS
    ),
    Key("a", "alerts", "Alerts in full", show=False),
    Key("F", "forensics", "Hang forensics: py-spy stacks, process states, log tails", show=False),
    Key("enter", "alerts", "Alerts in full (but on a log line: its record)", show=False, shown_key="Enter"),
    Key("c", "chart", "Chart"),
    Key("m", "next_metric", "Next chart metric", show=False),
    Key("l", "log_level", "Log level"),
    Key("slash", "search", "Search logs", shown_key="/"),
    Key("n", "next_match(-1)", "Next match up (older)", show=False),
    Key("N", "next_match(1)", "Next match down (newer)", show=False),
    Key("f", "filter_logs", "Filter logs: only the lines that hold a text", show=False),
    Key("g", "logs_oldest", "Logs: the oldest line", show=False),
    Key("G", "logs_newest", "Logs: the newest line, following again", show=False),
    Key("t", "logs_time", "Logs: go to a time (14:05)", show=False),
    Key("p", "toggle_follow", "Pause logs"),
    Key("w", "wrap_logs", "Wrap log lines", show=False),
    Key("o", "sort_processes", "Order the processes: tree, CPU, memory, age", show=False),
    Key("r", "refresh", "Refresh now", show=False),
    Key("escape", "go_back", "Back: unzoom a pane; from a fleet, to the runs table", show=False, shown_key="Esc"),
)


def bindings() -> list[BindingType]:
    return [Binding(k.key, k.action, k.description, show=k.show) for k in KEYS]


def palette_entries() -> list[tuple[str, str, str]]:
    """(title, help, action) for the command palette (ctrl+p): every command of the key
    table, named in words, with its key (the palette held none of runtop's)."""
    out = []
    seen: set[str] = set()
    for k in KEYS:
        if k.action in seen:
            continue  # one entry per command (q and ctrl+c quit; a and Enter show the alerts)
        seen.add(k.action)
        title = f"Zoom the {k.description} pane" if k.action.startswith("pane(") else k.description
        out.append((title, f"key {k.shown_key or k.key}", k.action))
    return out


def help_rows(no_launcher: str | None = None) -> list[tuple[str, str]]:
    """Every key and what it does; `no_launcher`: why the actions typed into a tmux Launcher pane
    cannot act here (the demo's run), said in one row instead of theirs."""
    rows = []
    for k in KEYS:
        if k.action.startswith("pane("):
            continue
        if no_launcher is not None and k.action.startswith("act("):
            continue
        desc = k.description
        if k.action.startswith("act("):
            desc += " (shows the exact command; you confirm)"
        rows.append((k.shown_key or k.key, desc))
    if no_launcher is not None:
        rows.append((" ".join(a.key for a in ACTIONS if a.name != "checkin"), f"not here: {no_launcher}"))
    rows.insert(2, ("0-9", "zoom a pane (compact: show it; 0 zooms the metrics): " + ", ".join(f"{k} {t}" for k, _, t in PANES)))
    # Moving inside a pane (the steps, the logs): the scroll keys every such pane binds.
    rows += [
        ("↑ ↓", "one line older / newer (steps, logs)"),
        ("PgUp PgDn", "a page older / newer"),
        ("Home End", "the oldest / the newest (End: follow again)"),
        ("Enter", "on a log line (logs focused): its record whole, a traceback whole; there / n N g G work too"),
        ("Tab", "move between panes that scroll"),
        ("Esc", "close a screen; in the logs the input box, then the search, then the filter"),
        ("ctrl+p", "command palette: every command by name"),
    ]
    return rows
