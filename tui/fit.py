"""Heights for the panes of a column, and what fits in a toast: each pane as tall as its content, and when the column is
too short for them all, the least needed give up rows first (the checkpoint list before the
processes, the step table's older rows before the rollouts), none below a line of text.

At 120×40 the right column's panes were taller than the column: it scrolled, the GPUs and the
inference pane were cut off below, and a scrollbar sat outside the frame. A pane given fewer
rows than it wants says what it left out (`widgets/pane.py`, `Clipped`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from textual.geometry import Size
from textual.widget import Widget

from runtop.units import words
from runtop.widgets.pane import Pane

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


# Who gives up rows first when a column is short, and the rows each keeps. The checkpoint list
# and the step table's older rows go first; the GPUs and the inference server's numbers, one
# line each per device, go last.
GIVE = {"disk": 0, "procs": 1, "gpus": 2, "inference": 3, "steps": 0, "env": 1, "rollouts": 2}
KEEP = {"disk": FLOOR + 2, "procs": FLOOR + 1, "steps": 5}


def fit_column(column: Widget, full: bool) -> None:
    """Each pane of a column of the full layout its rows (inline heights); where `full` is
    False (the compact layout, a zoomed pane: sized by CSS) the heights are let go."""
    shown = [w for w in column.children if full and not w.has_class("-hidden")]
    for w in column.children:
        if w not in shown:
            if isinstance(w, Pane):
                w.fitted = False
            if w.styles.inline.height is not None:
                w.styles.inline.clear_rule("height")
                w.refresh(layout=True)
    avail = column.size.height
    if not shown or not avail:
        return
    wants, sized = [], []
    for w in shown:
        pid = w.id or ""
        if isinstance(w, Pane):
            rows = (w.natural or 1) + BORDER
            wants.append(Want(rows, min(rows, KEEP.get(pid, FLOOR)), GIVE.get(pid, 0)))
        elif pid == "steps":  # a few rows of its own, and every row nobody else wants
            wants.append(Want(KEEP["steps"], KEEP["steps"], GIVE.get(pid, 0), grow=True))
        else:  # a pane that sizes itself (the env calls' table): its rows are taken as they are
            rows = w.outer_size.height
            wants.append(Want(rows, rows, GIVE.get(pid, 0)))
            continue
        sized.append((w, len(wants) - 1))
    given = heights(avail, wants)
    for w, i in sized:
        if isinstance(w, Pane):
            w.fitted = True
        if w.styles.inline.height is None or w.styles.inline.height.cells != given[i]:
            w.styles.height = given[i]


def toast_text(message: str, titled: bool, screen: Size) -> str:
    """`message` cut (between words) to what a toast may cover: a third of the screen's rows,
    in Textual's toast (60 columns, at most half the width, a row of margin, padding and
    border). Opening a dead run at 80×24, the crash's toast covered half the screen; the
    alerts pane and `a` have the message whole."""
    width = max(10, min(60, screen.width // 2) - 4)
    rows = max(1, screen.height // 3 - 3 - (1 if titled else 0))
    lines = textwrap.wrap(message, width)
    if len(lines) <= rows:
        return message
    kept = lines[:rows]
    kept[-1] = words(f"{kept[-1]} {lines[rows]}", width)  # the last line ends in "…"
    return " ".join(kept)
