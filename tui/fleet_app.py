"""The runs table: every run of a fleet on one line, most troubled first.

`runtop DIR` on a directory of runs opens this; Enter opens the run under the cursor in its
own full view (the app exits with its path and the command line runs the run's app), Esc
there comes back here. The table reads `Fleet.rows()` once a second and never touches a
file: the fleet's own thread reads the runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input, Static

from runtop.fleet.runs import Fleet, RunRow
from runtop.tui import fleet_compare
from runtop.tui.help_screen import HelpScreen
from runtop.widgets.render import duration

VERDICT_STYLE = {"Down": "bold white on red", "cannot read": "bold red", "Degraded": "bold black on yellow", "Unknown": "grey62",
                 "Healthy": "bold green", "Finished": "bold blue"}
# (column, width): the cause takes what the others leave (the run's own view has it whole).
COUNT_STYLE = {"Down": "bold red", "cannot read": "bold red", "Degraded": "bold yellow", "Unknown": "grey62",
               "Healthy": "bold green", "Finished": "bold blue"}
COLUMNS = (("verdict", 10), ("run", 26), ("framework", 9), ("step", 11), ("ETA", 6), ("last write", 10), ("att", 3), ("cause", 0))
# Under 110 columns (an 80×24 split) the verdict, the run, its last write and the cause: the rest
# waits for the run's view. The last write stays: a run silent for an hour is news at any width.
NARROW = (("verdict", 10), ("run", 20), ("last write", 10), ("cause", 0))
NARROW_BELOW = 110


def columns(width: int) -> tuple[tuple[str, int], ...]:
    return NARROW if width < NARROW_BELOW else COLUMNS


def fixed_width(cols: tuple[tuple[str, int], ...]) -> int:
    return sum(w for _, w in cols) + 2 * len(cols)  # DataTable pads each cell by one each side


DETAIL_RE = re.compile(r" \((?:[^()]|\([^()]*\)){12,}\)")


def short_cause(cause: str, width: int) -> str:
    """The cause's first clause, its long parentheses (the exception's message) left to the
    run's own view, cut to `width`: `trainer died: torch.OutOfMemoryError`."""
    first = cause.split("; ", 1)[0]
    if len(first) > width:
        first = DETAIL_RE.sub("", first)
    return first if len(first) <= width else first[: max(1, width - 1)] + "…"


# The orders `s` steps through: (name, key of a row). Trouble is the fleet's own (worst first,
# then the newest write); the others as a researcher scans for one run.
SORTS: tuple[tuple[str, Callable[[RunRow], object]], ...] = (
    ("trouble", lambda r: (r.trouble, -(r.last_write or 0.0), r.name)),
    ("run", lambda r: r.name.lower()),
    ("last write", lambda r: (-(r.last_write or 0.0), r.name)),
    ("step", lambda r: (-(r.step if r.step is not None else -1), r.name)),
    ("framework", lambda r: (r.framework, r.trouble, r.name)),
    ("verdict", lambda r: (r.verdict, r.name)),
)
SORT_COLUMN = {"trouble": "verdict", "run": "run", "last write": "last write", "step": "step", "framework": "framework", "verdict": "verdict"}


def matches(row: RunRow, text: str) -> bool:
    """`/` keeps the runs whose name, path, framework, verdict or cause holds `text` (any case)."""
    t = text.lower()
    return any(t in field.lower() for field in (row.name, row.path, row.framework, row.verdict, row.cause))


FLEET_HELP: list[tuple[str, str]] = [
    ("Enter", "open the run under the cursor in its full view (Esc there comes back)"),
    ("↑ ↓ PgUp PgDn", "move between runs"),
    ("/", "filter: keep the runs whose name, framework, verdict or cause holds the text (Esc clears)"),
    ("s", "sort by the next column: " + ", ".join(name for name, _ in SORTS)),
    ("r", "look for new runs and read every row now"),
    ("?", "these keys"),
    ("q", "quit"),
]


def summary(rows: list[RunRow], where: str = "", *, shown: int | None = None, query: str = "", sort: str = "trouble") -> Text:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    out = Text(f" {len(rows)} runs" if shown is None or shown == len(rows) and not query else f" {shown} of {len(rows)} runs", "bold")
    if query:
        out.append(f" matching /{query}", "bold yellow")
    if where:
        out.append(f" in {where}", "grey62")
    for word in VERDICT_STYLE:
        if counts.get(word):
            out.append("  ·  ")
            out.append(f"{counts[word]} {word}", COUNT_STYLE[word])
    reading = [r for r in rows if r.read < 1.0]
    if reading:
        out.append(f"  ·  reading history of {len(reading)}", "italic grey62")
    if sort != "trouble":
        out.append(f"  ·  sorted by {sort}", "grey62")
    out.append("   Enter opens a run, space marks, c compares, ? keys", "grey62")
    return out


def _compact(n: int) -> str:
    """`24.4k`, `1.0M`: rounded down, so a cell never shows more progress than was made."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n // 100 / 10:.1f}k" if n < 100_000 else f"{n // 1000}k"
    return f"{n // 100_000 / 10:.1f}M"


def step_text(step: int | None, max_steps: int | None, width: int = dict(COLUMNS)["step"]) -> str:
    """`step/max` in `width` characters: exact where it fits, the total shortened first, then
    both. Cut by the table instead, 24486/1000000 read `24486/1`: a run one step long."""
    a, b = ("-" if step is None else str(step)), (str(max_steps) if max_steps else "?")
    for text in (f"{a}/{b}", f"{a}/{_compact(max_steps) if max_steps else b}"):
        if len(text) <= width:
            return text
    return f"{_compact(step) if step is not None else a}/{_compact(max_steps) if max_steps else b}"


def cells(row: RunRow, now: float, cause_width: int = 60, cols: tuple[tuple[str, int], ...] = COLUMNS) -> tuple[Text, ...]:
    step = step_text(row.step, row.max_steps)
    age = duration(now - row.last_write) if row.last_write else "-"
    eta = duration(row.eta_s) if row.eta_s and row.verdict not in ("Finished", "Down") else "-"
    # While the history is read, the verdict comes from the log's tail: its cause is still the
    # news (a Down run whose cell said only "reading its history (5%)" hid why it was Down for
    # the minute a 1 GB SkyRL log takes; seen in tmux).
    if row.read >= 1.0:
        cause = short_cause(row.cause, cause_width)
    elif row.cause:
        # The progress only where the cause keeps its words (the summary counts the runs reading).
        cause = short_cause(row.cause, cause_width)
        more = f" · history {int(row.read * 100)}% read"  # rounded down: 99.9% is not 100%
        if len(cause) + len(more) <= cause_width and not cause.endswith("…"):
            cause += more
    else:
        cause = short_cause(f"reading its history ({int(row.read * 100)}%)", cause_width)
    run_w = dict(cols).get("run", 26)
    every = {
        "verdict": Text(f" {row.verdict} ", VERDICT_STYLE.get(row.verdict, "")),
        "run": Text(row.name if len(row.name) <= run_w else row.name[: run_w - 1] + "…", "bold"),
        "framework": Text(row.framework, "grey62"),
        "step": Text(step, justify="right"),
        "ETA": Text(eta, justify="right"),
        "last write": Text(age, justify="right"),
        "att": Text(str(row.attempt or "-"), justify="right"),
        "cause": Text(cause, "red" if row.verdict == "Down" else "italic grey62" if row.read < 1.0 and not row.cause else ""),
    }
    return tuple(every.get(name, Text()) for name, _ in cols)  # a metric's column is filled by fleet_compare


class FleetApp(App[str | None]):
    """Exits with the path of the run to open, or None to quit."""

    TITLE = "runtop"
    CSS = """
    #summary { height: 1; background: $panel; }
    DataTable { height: 1fr; }
    #filter { height: 3; display: none; }
    #filter.-open { display: block; }
    """
    BINDINGS = [
        Binding("enter", "open_run", "Open run"), Binding("q", "quit_fleet", "Quit"), Binding("r", "refresh_now", "Refresh"),
        Binding("slash", "filter", "Filter", key_display="/"), Binding("s", "sort", "Sort"),
        Binding("question_mark", "help", "Help", key_display="?"), *fleet_compare.BINDINGS,
    ]

    def __init__(self, fleet: Fleet, *, select: str | None = None, clock: object = time.time, refresh_s: float = 2.0,
                 where: str = "", metrics: Sequence[str] = (), compare: Sequence[str] = ()) -> None:
        super().__init__()
        self.metrics = tuple(metrics)  # `--columns`: metrics whose latest values are columns
        self.marked: list[str] = list(compare)  # runs marked to compare, in the order marked
        self._compare_first = len(self.marked) > 1  # `runtop compare A B`: open on the compare screen
        self.where = where  # the dir (or dirs) the runs came from, for the summary line
        self.fleet = fleet
        self.selected = select  # the run to put the cursor on first (the one just left)
        self.clock = clock
        self.refresh_s = refresh_s  # 2 s: a fleet's ages need no finer grain, and each refresh repaints 20 rows
        self._paths: list[str] = []
        self._cols: tuple[tuple[str, int], ...] = ()
        self._drawn: dict[str, tuple[Text, ...]] = {}  # what each row shows now
        self._summary = ""
        self._sorted_by = ""
        self.query_text = ""  # `/`: the rows shown hold it
        self.sort = "trouble"  # `s`: the order of the rows

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        yield Input(placeholder="filter runs: name, framework, verdict or cause (Enter keeps it, Esc clears)", id="filter")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.refill()
        self.set_interval(self.refresh_s, self.refill)
        self.query_one(DataTable).focus()
        if self._compare_first:
            self.action_compare()

    def refill(self) -> None:
        """Redraw what changed: cells in place while the order holds (a second's new ages
        touch one column), the whole table when a run moves or the columns change."""
        every = self.fleet.rows()
        rows = [r for r in every if matches(r, self.query_text)] if self.query_text else every
        if self.sort != "trouble":
            rows.sort(key=dict(SORTS)[self.sort])  # type: ignore[arg-type]
        now = self.clock()  # type: ignore[operator]
        text = summary(every, self.where, shown=len(rows), query=self.query_text, sort=self.sort)
        if text.plain != self._summary:
            self._summary = text.plain
            self.query_one("#summary", Static).update(text)
        cols = fleet_compare.metric_columns(columns(self.size.width or 120), self.metrics, self.size.width or 120)
        cause_width = max(12, (self.size.width or 120) - fixed_width(cols) - 1)
        table: DataTable[Text] = self.query_one(DataTable)
        # The cursor follows its run, not its row, when a re-sort moves it.
        keep = self.selected if self.selected is not None else (
            self._paths[table.cursor_row] if 0 <= table.cursor_row < len(self._paths) else None)
        self.selected = None
        fmts = fleet_compare.formats(rows, [m for m, _ in cols if m in self.metrics])
        drawn = {r.path: fleet_compare.decorate(r, cells(r, now, cause_width, cols), cols, fmts,
                                                self.marked.index(r.path) if r.path in self.marked else None) for r in rows}
        paths = [r.path for r in rows]
        if cols == self._cols and paths == self._paths:
            for path, new in drawn.items():
                old = self._drawn.get(path, ())
                for (name, _), before, after in zip(cols, old, new, strict=False):
                    if before.plain != after.plain or before.style != after.style:
                        table.update_cell(path, name, after)
            self._drawn = drawn
            return
        sorted_by = SORT_COLUMN[self.sort]
        if (cols, sorted_by) != (self._cols, self._sorted_by):  # the terminal crossed NARROW_BELOW, or `s`
            table.clear(columns=True)
            for col, width in cols:
                # The column the rows are sorted by is underlined (the summary names the order).
                label = Text(fleet_compare.header(col), "bold underline" if col == sorted_by and self.sort != "trouble" else "")
                table.add_column(label, key=col, width=width or None)
            self._cols, self._sorted_by = cols, sorted_by
        table.clear()
        self._paths, self._drawn = paths, drawn
        for path in paths:
            table.add_row(*drawn[path], key=path)
        if keep in self._paths:
            table.move_cursor(row=self._paths.index(keep), animate=False)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self.exit(event.row_key.value)

    def action_open_run(self) -> None:
        table: DataTable[Text] = self.query_one(DataTable)
        if self._paths and 0 <= table.cursor_row < len(self._paths):
            self.exit(self._paths[table.cursor_row])

    def action_quit_fleet(self) -> None:
        self.exit(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The table's keys act on the table alone: while the compare screen is on top, its
        keys are its own (Enter there opened the run under a hidden cursor)."""
        if len(self.screen_stack) > 1 and action in TABLE_ACTIONS:
            return False
        return True

    def action_toggle_mark(self) -> None:
        """Mark the run under the cursor to compare (or unmark it), and step down to the next."""
        table: DataTable[Text] = self.query_one(DataTable)
        if not (self._paths and 0 <= table.cursor_row < len(self._paths)):
            return
        path = self._paths[table.cursor_row]
        if path in self.marked:
            self.marked.remove(path)
        else:
            self.marked.append(path)
        self.refill()
        table.move_cursor(row=min(table.cursor_row + 1, len(self._paths) - 1), animate=False)

    def action_compare(self) -> None:
        """The compare screen on the marked runs; their engines publish while it is open."""
        from runtop.tui.compare_screen import CompareScreen

        unread = [p for p in self.marked if self.fleet.engines.get(p) is None]
        paths = [p for p in self.marked if p not in unread]
        if unread:  # a run runtop cannot read has no numbers to draw: its row says why
            names = {r.path: r.name for r in self.fleet.rows()}
            self.notify(f"{', '.join(names.get(p, p) for p in unread)}: cannot be read, left out", timeout=4)
        if len(paths) < 2:
            self.notify("mark two runs or more with space, then c compares them", timeout=4)
            return
        self.fleet.chart(paths)
        self.push_screen(CompareScreen(fleet_compare.feed(self.fleet, paths), len(paths)), lambda _: self.fleet.chart(()))

    def action_refresh_now(self) -> None:
        self.fleet.rescan_soon()  # a run started a moment ago: the fleet's thread looks for it now
        self.refill()
        self.set_timer(1.0, self.refill)  # and the table shows it a second later, not a refresh later

    def action_help(self) -> None:
        self.push_screen(HelpScreen(FLEET_HELP, "runs table keys"))

    def action_sort(self) -> None:
        names = [name for name, _ in SORTS]
        self.sort = names[(names.index(self.sort) + 1) % len(names)]
        table: DataTable[Text] = self.query_one(DataTable)
        if 0 <= table.cursor_row < len(self._paths):
            self.selected = self._paths[table.cursor_row]  # the cursor stays on its run
        self._paths = []  # the order changed: every row again
        self.refill()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = self.query_text
        box.add_class("-open")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        # The rows narrow as the text is typed (k9s' way): no Enter needed to see them.
        self.query_text = event.value.strip()
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        event.input.remove_class("-open")
        self.refill()
        self.query_one(DataTable).focus()

    def on_key(self, event: events.Key) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and (box.has_class("-open") or self.query_text):
            event.stop()
            box.value = ""
            box.remove_class("-open")
            self.query_text = ""
            self.refill()
            self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        self.refill()  # the cause column takes the new width


# Every key of the table but quit (the table's own bindings, whoever adds one).
TABLE_ACTIONS = frozenset(b[1] if isinstance(b, tuple) else b.action for b in FleetApp.BINDINGS) - {"quit_fleet"}
