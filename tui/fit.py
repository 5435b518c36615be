"""Heights for the panes of a column: each pane as tall as its content, and when the column is
too short for them all, the least needed give up rows first (the checkpoint list before the
processes, the step table's older rows before the rollouts), none below a line of text.

At 120×40 the right column's panes were taller than the column: it scrolled, the GPUs and the
inference pane were cut off below, and a scrollbar sat outside the frame. A pane given fewer
rows than it wants says what it left out (`widgets/pane.py`, `Clipped`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BORDER = 2  # a pane's top and bottom border rows
FLOOR = BORDER + 1  # the least a pane is given: its border and one line


@dataclass(frozen=True)
class Want:
    rows: int  # the rows its whole content takes, border included
    floor: int = FLOOR  # the rows it keeps, however short the column
    give: int = 0  # the order in which panes give up rows: lower gives first
    grow: bool = False  # takes the rows nobody wants (the step table: more history)


def heights(avail: int, wants: Sequence[Want]) -> list[int]:
    """Rows for each pane, in the order given, summing to at most `avail` where the floors allow."""
    out = [max(w.rows, w.floor) for w in wants]
    over = sum(out) - avail
    for i in sorted(range(len(wants)), key=lambda i: wants[i].give):
        if over <= 0:
            break
        cut = min(over, out[i] - wants[i].floor)
        if cut > 0:
            out[i] -= cut
            over -= cut
    growers = [i for i, w in enumerate(wants) if w.grow]
    if over < 0 and growers:
        out[growers[0]] += -over  # the spare rows go to the pane that can use them
    return out
