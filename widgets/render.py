"""Small text helpers shared by the panes: sizes, durations, sparklines, bars."""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text
from textual.binding import Binding, BindingType

from runtop import units

BLOCKS = "▁▂▃▄▅▆▇█"


def human_bytes(n: float | None) -> str:
    return units.human_bytes(n, short=True)


duration = units.duration


def age(seconds: float | None) -> str:
    """A coarse age that changes as often as it is repainted: 10 s steps, then minutes."""
    if seconds is None:
        return "n/a"
    if seconds < 60:
        return f"{int(seconds // 10) * 10}s"
    return duration(seconds - seconds % 60)


def num(v: float | None, digits: int = 4) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    if v != 0 and (abs(v) < 10 ** -(digits - 1) or abs(v) >= 1e6):
        return f"{v:.2e}"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def column_format(values: list[float], digits: int = 4) -> Callable[[float], str]:
    """One number format for a column (`9.30e-04` above `0.00136` in one column).
    Exponents for all when any value is tiny or huge, else the same decimals for all: enough
    for `digits` significant digits of the smallest, at most 6."""
    vals = [abs(v) for v in values if math.isfinite(v) and v != 0]
    if not vals:
        return lambda v: num(v, digits)
    small, big = min(vals), max(vals)
    if small < 10 ** -(digits - 1) or big >= 1e6:
        return lambda v: f"{v:.2e}" if math.isfinite(v) else "n/a"
    if big >= 1000:
        return lambda v: f"{v:.0f}" if math.isfinite(v) else "n/a"
    decimals = max(0, min(6, digits - 1 - math.floor(math.log10(small))))
    return lambda v: f"{v:.{decimals}f}" if math.isfinite(v) else "n/a"


def sparkline(values: list[float], width: int, lo: float | None = None, hi: float | None = None) -> str:
    """Finite values only (NaN/inf are dropped, not drawn as zero); the newest `width` of them.
    `lo`/`hi` fix the scale (a reading's natural range: 0-100 % for a utilisation); by
    default it is the values' own."""
    vals = [v for v in values if math.isfinite(v)][-width:]
    if not vals:
        return ""
    lo = min(vals) if lo is None else min(lo, min(vals))
    hi = max(vals) if hi is None else max(hi, max(vals))
    if hi == lo:
        return BLOCKS[3] * len(vals)
    scale = (len(BLOCKS) - 1) / (hi - lo)
    return "".join(BLOCKS[int((v - lo) * scale)] for v in vals)


def trend(values: list[float]) -> str:
    vals = [v for v in values if math.isfinite(v)]
    if len(vals) < 2:
        return " "
    recent = vals[-min(len(vals), 5) :]
    delta = recent[-1] - recent[0]
    spread = (max(vals) - min(vals)) or abs(recent[-1]) or 1.0
    if abs(delta) < 0.05 * spread:
        return "→"
    return "↑" if delta > 0 else "↓"


CALM = "grey62"  # a value that is fine: drawn, not shouted


def bar(fraction: float, width: int, warn: float = 0.85, caution: float = 0.7) -> Text:
    """A fill bar: calm while fine, yellow from `caution`, red from `warn` (a disk's use);
    pass both above 1 for a value whose high is good (a GPU's utilisation)."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(round(fraction * width))
    # Calm while fine: colour only where a value is bad (lime 100 % bars outshouted a dead run).
    style = "red" if fraction >= warn else "yellow" if fraction >= caution else CALM
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="grey37")


def scroll_bindings() -> list[BindingType]:
    """Keys that move a drawn window back (older) and forward (newer): `action_scroll(lines)`."""
    return [
        Binding("up", "scroll(1)", "Older", show=False),
        Binding("down", "scroll(-1)", "Newer", show=False),
        Binding("pageup", "scroll(10)", "Older page", show=False),
        Binding("pagedown", "scroll(-10)", "Newer page", show=False),
        Binding("home", "scroll(1000000)", "Oldest", show=False),
        Binding("end", "scroll(-1000000)", "Newest", show=False),
    ]


def step_ticks(first: int, last: int, most: int) -> list[int]:
    """Whole steps to mark on the x axis, a round stride (1, 2, 5, 10, 20, 50, …) apart and
    at most `most` of them (ticks at step 1.75)."""
    span = max(1, last - first)
    k, stride = 0, 1
    while span // stride >= most:
        k += 1
        stride = (1, 2, 5)[k % 3] * 10 ** (k // 3)
    start = -(-first // stride) * stride  # the first multiple of the stride
    return sorted({first, *range(start, last + 1, stride)})
