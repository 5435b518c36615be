"""Every finding of the verdict, with its time and evidence (the header shows the top ones).

An alert takes the rows the pane has: wrapped whole where they fit (at 200×50 one cut line sat
above a band of empty rows), each cut to fewer lines, the first (the gravest) keeping the most,
where they do not; `a` shows every one whole."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from runtop.rules.findings import Finding
from runtop.view.view import Slice, View
from runtop.widgets.pane import Pane

SEVERITY_STYLE = {"down": "bold red", "act now": "bold dark_orange", "warning": "yellow", "info": "grey70"}
INDENT = 8  # the severity's column: wrapped lines start under the time
_WRAP = Console(width=1000, file=io.StringIO(), legacy_windows=False)  # wraps text; prints nothing


class AlertsPane(Pane):
    TITLE = "alerts"
    READS = (Slice.VERDICT,)

    def _room(self) -> int:
        """The rows this pane may fill: its own height where the layout fixes it (the full
        layout's band, a zoom, the compact slot); two in the compact layout's strip."""
        if not self.is_attached or not self.size.height:
            return 1 << 20  # not laid out (a test, a first paint): every alert whole
        if self.screen.has_class("-compact") and not (self.has_class("-slot") or self.has_class("-maximized")):
            return 2
        return self.size.height

    def render_view(self, view: View) -> Text:
        alerts = view.verdict.alerts
        if not alerts:
            return Text("no alerts", style="green" if view.verdict.verdict in ("Healthy", "Finished") else "grey62")
        width = max(20, self.size.width or 76)
        room = self._room()
        shown = alerts if len(alerts) <= room else alerts[: max(0, room - 1)]
        wrapped = [alert_lines(a, width) for a in shown]
        # Every alert has its first line; the rows left go to them in order, the gravest first.
        spare = room - len(shown) - (len(shown) < len(alerts))
        out: list[Text] = []
        for lines in wrapped:
            take = 1 + min(spare, len(lines) - 1)
            spare -= take - 1
            if take < len(lines):
                last = lines[take - 1].copy()
                last.rstrip()
                last.append(" " + lines[take].plain.strip())  # so the cut says there is more
                last.truncate(width, overflow="ellipsis")
                lines = [*lines[: take - 1], last]
            out += lines[:take]
        if len(shown) < len(alerts):
            out.append(Text(f"… {len(alerts) - len(shown)} more: a shows every alert whole", style="grey62 italic"))
        return Text("\n", no_wrap=True, overflow="ellipsis").join(out)


def alert_lines(a: Finding, width: int) -> list[Text]:
    """One alert wrapped to `width`, its wrapped lines indented under its time."""
    line = Text()
    line.append(f"{a.label:<7} ", SEVERITY_STYLE.get(a.label, ""))
    line.append(f"{a.since or '--:--:--'} {a.message}")
    if a.evidence:
        line.append(f"  [{a.evidence}]", "grey62")
    parts = line[INDENT:].wrap(_WRAP, width - INDENT)
    out = []
    for i, part in enumerate(parts):
        head = line[:INDENT] if i == 0 else Text(" " * INDENT)
        out.append(head + part)
    return out or [line]
