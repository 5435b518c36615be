"""Sizes and durations as runtop writes them: one formatter for the check-in, the rules and the panes."""

from __future__ import annotations

import math

_SIZES = (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10))


def human_bytes(n: float | None, short: bool = False) -> str:
    """`1.5 GB` (`1.5G` when `short`, for the panes)."""
    if n is None:
        return "n/a"
    for unit, size in _SIZES:
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}" if short else f"{n / size:.1f} {unit}B"
    return f"{int(n)}B" if short else f"{int(n)} B"


def duration(seconds: float | None, sep: str = "") -> str:
    """`2d3h`, `1h05m`, `4m09s`, `12s` (`sep=" "`: `1h 05m`, for prose)."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    s = int(max(0, seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h >= 24:
        return f"{h // 24}d{sep}{h % 24}h"
    if h:
        return f"{h}h{sep}{m:02d}m"
    return f"{m}m{sep}{sec:02d}s" if m else f"{sec}s"


def words(text: str, n: int) -> str:
    """`text` in at most `n` characters, cut between two words with an ellipsis (a cut
    mid-word, `GPU memory ran ou…`, reads as a typo); a single long word is cut where it must be."""
    if len(text) <= n:
        return text
    cut = text[: max(1, n - 1)]
    space = cut.rfind(" ")
    if space >= n // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"
