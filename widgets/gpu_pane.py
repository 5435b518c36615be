"""GPUs (NVML): utilisation, memory and power over the last readings (sparklines), the
temperature, and which run role holds each.

One line per GPU, its sparklines as wide as the pane leaves them: "the GPUs went idle twenty
minutes ago" is a flat line at the bottom, not a number that reads the same as a moment's lull.
The histories are the engine's (`runtop.view.history`); this pane only draws them.
"""

from __future__ import annotations

from rich.text import Text

from runtop.view.history import GpuHistory
from runtop.view.view import GpuReading, Slice, View
from runtop.widgets.pane import Pane, titled
from runtop.widgets.render import age, human_bytes, sparkline

# A sparkline's colour says what it draws (no room for labels on a GPU's one line).
UTIL, MEM, POWER = "green", "magenta", "yellow"
MIN_SPARK = 4  # narrower than this, a sparkline says nothing: the number stands alone


class GpuPane(Pane):
    TITLE = "gpus"
    READS = (Slice.GPU, Slice.PROCESS, Slice.CLOCK)

    def render_view(self, view: View) -> Text:
        g = view.system.gpu
        err = view.system.errors.get("gpu")
        if g is None:
            return Text(err or "probing NVML…", style="red" if err else "italic grey62")
        if g.error:
            # No NVML library or no GPU: one line, the rest of runtop works.
            return Text(g.error, style="grey62")
        # The demo's readings say so, in the pane's title where the eye lands first; the
        # bottom border names the sparklines' colours.
        titled(self, "gpus · simulated" if g.simulated else self.TITLE,
               f"[{UTIL}]util[/] [{MEM}]mem[/] [{POWER}]power[/] · last {view.system.history.span()}")
        roles = {p.pid: p.role for p in view.system.procs.procs} if view.system.procs else {}
        inner = max(20, self.size.width or 56)  # the content region, inside the border and padding
        lines: list[Text] = []
        if err:
            # A slow or failing probe keeps its last reading on screen, marked as such.
            lines.append(Text(f"! {err}; showing the reading of {age(view.now - g.taken_at)} ago", style="yellow"))
        rows: list[tuple[GpuReading, GpuHistory, list[str]]] = []
        for d in g.gpus:
            if d.error:
                lines.append(Text.assemble(f"{d.index} ", (d.error, "bold red")))
                continue
            holders = sorted({roles.get(p.pid) or f"pid {p.pid}" for p in d.processes})
            rows.append((d, view.system.history.gpus.get(d.index, GpuHistory()), holders))
        lines += gpu_lines(rows, inner)
        return Text("\n").join(lines) if lines else Text("no GPU found", style="grey62")


def _texts(d: GpuReading, holders: list[str]) -> dict[str, str]:
    return {
        "index": str(d.index),
        "util": f"{d.util_pct:3.0f}%" if d.util_pct is not None else " n/a",
        "mem": f"{human_bytes(d.mem_used)}/{human_bytes(d.mem_total)}" if d.mem_used is not None and d.mem_total else "mem n/a",
        "used": human_bytes(d.mem_used) if d.mem_used is not None else "n/a",
        "power": f"{d.power_w:.0f}W" if d.power_w is not None else "",
        "temp": f"{d.temp_c:.0f}°C" if d.temp_c is not None else "",
        "who": ", ".join(holders) if holders else "idle",
    }


def gpu_lines(rows: list[tuple[GpuReading, GpuHistory, list[str]]], inner: int) -> list[Text]:
    """`0 ▂▅▇█ 97% ▆▆▆▆ 71.0G/80.0G ▃▅▄▅ 512W 64°C trainer`, one line per GPU: the numbers
    keep their width, the three sparklines share what is left, and every GPU's columns line
    up under the others'."""
    texts = [_texts(d, holders) for d, _h, holders in rows]

    def width(key: str) -> int:
        return max((len(t[key]) for t in texts), default=0)

    who_w = min(width("who"), 14)
    # Wide: every number whole; narrow: the memory's used part alone and no temperature.
    for mem, temp in (("mem", "temp"), ("used", "")):
        fixed = width("index") + 1 + width("util") + 1 + width(mem) + 1 + width("power") + 1 + (width(temp) + 1 if temp else 0) + who_w
        sparks = inner - fixed - 3  # a space after each sparkline
        if sparks >= 3 * MIN_SPARK:
            break
    each = max(0, sparks // 3)
    widths = (each + sparks - 3 * each, each, each) if each >= MIN_SPARK else (max(0, sparks), 0, 0)
    out = []
    for (d, h, holders), t in zip(rows, texts):
        line = Text(f"{t['index']:>{width('index')}} ")
        # Each on a scale from zero (utilisation to 100 %, memory to the card's size): a GPU
        # at 97 % all along is a full bar, not a flat middle line, and 0.5 GB of noise no cliff.
        scales = ((h.util_pct, widths[0], UTIL, t["util"], width("util"), 100.0),
                  (h.mem_used, widths[1], MEM, t[mem], width(mem), float(d.mem_total or 0) or None),
                  (h.power_w, widths[2], POWER, t["power"], width("power"), None))
        for series, w, style, text, text_w, top in scales:
            if w >= MIN_SPARK:
                # Now at the right edge, as the history grows (nvitop's way): a young history
                # does not read as a GPU that went idle.
                line.append(sparkline(list(series), w, lo=0.0, hi=top).rjust(w), style)
                line.append(" ")
            line.append(f"{text:>{text_w}} ")
        if temp:
            line.append(f"{t[temp]:>{width(temp)}} ", "grey62")
        line.append(t["who"], "grey62" if not holders else "")
        line.truncate(inner, overflow="ellipsis")
        out.append(line)
    return out
