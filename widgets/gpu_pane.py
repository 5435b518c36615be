"""GPUs (NVML): utilisation, memory, temperature, power, and which run role holds each."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from runtop.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import age, bar, human_bytes


class GpuPane(Pane):
    TITLE = "gpus"
    READS = (Slice.GPU, Slice.PROCESS, Slice.CLOCK)

    def render_view(self, view: View) -> Table | Text:
        g = view.system.gpu
        err = view.system.errors.get("gpu")
        if g is None:
            return Text(err or "probing NVML…", style="red" if err else "italic grey62")
        if g.error:
            # No NVML library or no GPU: one line, the rest of runtop works.
            return Text(g.error, style="grey62")
        # The demo's readings say so, in the pane's title where the eye lands first.
        self.border_title = "gpus · simulated" if g.simulated else self.TITLE
        roles = {p.pid: p.role for p in view.system.procs.procs} if view.system.procs else {}
        width = max(5, min(16, (self.size.width or 60) - 52))
        t = Table.grid(padding=(0, 1))
        for _ in range(6):
            t.add_column(no_wrap=True)
        if err:
            # A slow or failing probe keeps its last reading on screen, marked as such.
            t.add_row("!", Text(f"{err}; showing the reading of {age(view.now - g.taken_at)} ago", style="yellow"), "", "", "", "")
        for d in g.gpus:
            if d.error:
                t.add_row(f"{d.index}", Text(d.error, style="bold red"), "", "", "", "")
                continue
            util = d.util_pct
            mem = (d.mem_used / d.mem_total) if d.mem_used is not None and d.mem_total else None
            holders = sorted({roles.get(p.pid) or f"pid {p.pid}" for p in d.processes})
            t.add_row(
                f"{d.index}",
                bar((util or 0) / 100, width, warn=1.01, caution=1.01),  # a busy GPU is a good one
                f"{util:3.0f}%" if util is not None else "n/a",
                f"{human_bytes(d.mem_used)}/{human_bytes(d.mem_total)}" if mem is not None else "mem n/a",
                f"{d.temp_c:.0f}°C {d.power_w:.0f}W" if d.temp_c is not None and d.power_w is not None else "",
                Text(", ".join(holders) if holders else "idle", style="grey62" if not holders else ""),
            )
        return t
