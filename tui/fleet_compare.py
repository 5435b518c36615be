"""The runs table's part in comparing runs: `space` marks a run (a dot in the colour its
lines will have), `c` opens the compare screen on the marked runs, and `--columns` adds
chosen metrics' latest values as columns.

While the compare screen is open the fleet's thread has the marked runs' engines publish
frozen views (`Fleet.chart`); when it closes they stop, and their copies go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.text import Text
from textual.binding import Binding

from runtop.fleet.compare import RunSeries, SeriesCache, label
from runtop.fleet.runs import Fleet, RunRow
from runtop.widgets.compare_charts import style
from runtop.widgets.render import column_format

BINDINGS = [Binding("space", "toggle_mark", "Mark"), Binding("c", "compare", "Compare marked")]
METRIC_W = 9  # a metric's column: `0.000123`, `1.23e-05`


# Given metrics to show, the columns that make room for them first (the run's own view has them).
MAKE_ROOM = ("att", "framework", "ETA")
CAUSE_MIN = 24  # the cause's fewest characters before a column makes room
CAUSE_FLOOR = 12  # … and before a metric's column does (the table's own narrowest cause)


def metric_columns(cols: tuple[tuple[str, int], ...], metrics: Sequence[str], width: int) -> tuple[tuple[str, int], ...]:
    """The table's columns with the chosen metrics' before the cause (which takes what is left),
    the attempt, framework and ETA columns dropped, in that order, while the cause would be
    narrower than CAUSE_MIN at `width`: a table wider than its terminal scrolls sideways."""
    extra = tuple((m, METRIC_W) for m in metrics if m not in dict(cols))
    if not extra:
        return cols
    names = [n for n, _ in cols]
    at = names.index("cause") if "cause" in names else len(cols)
    out = cols[:at] + extra + cols[at:]
    def cause_room(cols: tuple[tuple[str, int], ...]) -> int:
        return width - (sum(w for _, w in cols) + 2 * len(cols)) - 1

    for name in MAKE_ROOM:
        if cause_room(out) >= CAUSE_MIN:
            break
        out = tuple(c for c in out if c[0] != name)
    # Still too narrow (an 80-column split): the last metrics wait for a wider terminal.
    while cause_room(out) < CAUSE_FLOOR and any(n in metrics for n, _ in out):
        last = [n for n, _ in out if n in metrics][-1]
        out = tuple(c for c in out if c[0] != last)
    return out


def header(col: str) -> str:
    """A column's header: a metric's short name, else the column's own."""
    return label(col) if col not in HEADERLESS else col


HEADERLESS = frozenset({"verdict", "run", "framework", "step", "ETA", "last write", "att", "cause"})


def formats(rows: Sequence[RunRow], metrics: Sequence[str]) -> dict[str, Callable[[float], str]]:
    """One number format per metric column, from every row's value (`1.56e-03` beside
    `0.001380` in one column reads as two scales)."""
    return {m: column_format([r.latest[m] for r in rows if m in r.latest]) for m in metrics}


def decorate(row: RunRow, cells: tuple[Text, ...], cols: tuple[tuple[str, int], ...], fmts: Mapping[str, Callable[[float], str]],
             mark: int | None) -> tuple[Text, ...]:
    """`cells` with the metric columns filled and, for a marked run, its dot in the run's cell
    (`mark`: its place among the marked, which picks its colour)."""
    out = list(cells)
    for i, (name, width) in enumerate(cols):
        if name in fmts:
            v = row.latest.get(name)
            out[i] = Text(fmts[name](v)[:width] if v is not None else "-", justify="right", style="" if v is not None else "grey62")
        elif name == "run" and mark is not None:
            run = out[i].plain
            # The dot and the name in the colour the run's lines have on the compare screen.
            cell = Text("● " + (run if len(run) <= width - 2 else run[: width - 3] + "…"), style(mark))
            out[i] = cell
    return tuple(out)


def feed(fleet: Fleet, paths: Sequence[str]) -> Callable[[], list[RunSeries]]:
    """The marked runs' series, in the order they were marked, from their engines' newest
    frozen views (a run whose first view is not published yet is left out until it is)."""
    cache = SeriesCache()
    names = {r.path: r.name for r in fleet.rows()}

    def runs() -> list[RunSeries]:
        views = fleet.views(paths)
        return [cache.series(p, names.get(p, p), views[p]) for p in paths if p in views]

    return runs
