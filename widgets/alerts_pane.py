"""Every finding of the verdict, with its time and evidence (the header shows the top ones)."""

from __future__ import annotations

from rich.text import Text

from runtop.view import Slice, View
from runtop.widgets.pane import Pane

SEVERITY_STYLE = {"down": "bold red", "act now": "bold dark_orange", "warning": "yellow", "info": "grey70"}


class AlertsPane(Pane):
    TITLE = "alerts"
    READS = (Slice.VERDICT,)

    def render_view(self, view: View) -> Text:
        alerts = view.verdict.alerts
        if not alerts:
            return Text("no alerts", style="green" if view.verdict.verdict in ("Healthy", "Finished") else "grey62")
        lines = []
        for a in alerts:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{a.label:<7} ", SEVERITY_STYLE.get(a.label, ""))
            line.append(f"{a.since or '--:--:--'} {a.message}")
            if a.evidence:
                line.append(f"  [{a.evidence}]", "grey62")
            lines.append(line)
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)
