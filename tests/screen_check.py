"""What a screen must never show, read from the screen itself: a pane cut off (its border not
closed where its region ends), a pane drawn over another or outside the screen, a column that
scrolls (a scrollbar outside the frames), a pane left out at a size that claims to show it.

Each check returns the defects it found, in words, so a failing test names them all.
"""

from __future__ import annotations

from textual.widget import Widget

from runtop.tui.panes import PANE_SPECS
from tests.screen_text import screen_text

CORNERS = "╭╮╰╯"


def bordered(app) -> list[Widget]:
    """The panes on screen that draw a border (every pane but the header)."""
    out = []
    zoomed = app.screen.maximized
    for p in PANE_SPECS:
        w = app.query_one(f"#{p.id}")
        if zoomed is not None and w is not zoomed:
            continue
        if not w.display or w.has_class("-hidden") or w.region.area == 0:
            continue
        if w.styles.border_top[0] in ("", "none", "hidden"):
            continue
        out.append(w)
    return out


def frame_defects(app) -> list[str]:
    """Every bordered pane whole and inside the screen, none over another, no column scrolling."""
    width, height = app.size
    rows = [line.ljust(width) for line in screen_text(app).split("\n")]
    rows += [" " * width] * (height - len(rows))
    defects: list[str] = []
    panes = bordered(app)
    for w in panes:
        r = w.region
        name = w.id
        if r.x < 0 or r.y < 0 or r.right > width or r.bottom > height:
            defects.append(f"{name} at {r} runs off the {width}x{height} screen")
            continue
        if r.height < 3:
            defects.append(f"{name} is {r.height} rows tall: not even one line inside its border")
            continue
        corners = rows[r.y][r.x] + rows[r.y][r.right - 1] + rows[r.bottom - 1][r.x] + rows[r.bottom - 1][r.right - 1]
        if corners != CORNERS:
            defects.append(f"{name} at {r}: corners {corners!r}, a border not closed (the pane is cut or drawn over)")
        for y in range(r.y + 1, r.bottom - 1):
            if rows[y][r.x] != "│" or rows[y][r.right - 1] != "│":
                defects.append(f"{name}: row {y} is not closed by its side borders: {rows[y][r.x:r.right]!r}")
                break
        parent = w.parent
        if isinstance(parent, Widget) and parent.id in ("left", "right") and not parent.region.contains_region(r):
            defects.append(f"{name} at {r} reaches outside its column {parent.region}")
    for i, a in enumerate(panes):
        for b in panes[i + 1 :]:
            if a.region.overlaps(b.region):
                defects.append(f"{a.id} {a.region} and {b.id} {b.region} overlap")
    for col in ("#left", "#right"):
        c = app.query_one(col)
        if c.display and c.max_scroll_y > 0:
            defects.append(f"{col} scrolls by {c.max_scroll_y} rows: a pane of it is out of sight")
    return defects


def missing_panes(app) -> list[str]:
    """Panes of the full layout that are not on screen (at 120×40 and up, every pane is)."""
    shown = {w.id for w in bordered(app)}
    return [p.id for p in PANE_SPECS if p.id != "header" and p.id not in shown]
