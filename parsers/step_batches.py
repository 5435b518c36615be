"""Step lines read in batches (docs/reading.md, "Step lines in batches").

A week-old log is mostly step lines of one shape, written thousands of times with only their
numbers changed. A plug-in that reads them in batches learns each shape once (a `Layout`: the
line with its numbers cut out, compiled, and where each number goes), then reads a chunk's step
lines of that shape with one pattern pass over them joined, and their numbers with one conversion
per column, into `StepColumns`: the same `StepMetrics` events the record-by-record reading
gives, one column a name, folded into the state in one call (`runtop.state.steps`). A line of a
shape it has not learnt, or one whose numbers the record reader would take otherwise (a step
time it cannot read, a ratio of nothing), is handed back whole to the record-by-record reading,
in its place.

Pure: records in, columns out; no clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .events import StepMetrics
from .records import Record

# How many shapes a reader keeps per log (a log has one or two: the trainer's and the
# orchestrator's step lines, a version's and the next's).
MAX_LAYOUTS = 8
# How many lines of shapes it could not learn before it stops trying (a log whose step lines are
# all different is read record by record).
MAX_MISSES = 64


@dataclass(slots=True)
class StepColumns:
    """Consecutive steps' events of one role and one shape: `values[name][j]` is step `steps[j]`'s
    (every step of the batch has every name), as `StepMetrics(role, steps[j], {name: values[name][j]},
    {phase: phases[phase][j]}, origin, times[j], {name: extra[name][j]})` would give it."""

    role: str
    origin: str
    steps: list[int]
    times: list[str | None]
    values: dict[str, list[float]] = field(default_factory=dict)
    phases: dict[str, list[float]] = field(default_factory=dict)
    extra: dict[str, list[float]] = field(default_factory=dict)

    def part(self, a: int, b: int) -> StepColumns:
        return StepColumns(self.role, self.origin, self.steps[a:b], self.times[a:b], {k: v[a:b] for k, v in self.values.items()},
                           {k: v[a:b] for k, v in self.phases.items()}, {k: v[a:b] for k, v in self.extra.items()})


@dataclass(slots=True)
class StepRun:
    """`n` consecutive step lines of one shape: each event's columns over them, in the order the
    record reader gives a line's events."""

    n: int
    columns: list[StepColumns]

    def part(self, a: int, b: int) -> StepRun:
        return StepRun(b - a, [c.part(a, b) for c in self.columns])

    def stamped(self, times: list[str | None]) -> list[StepColumns]:
        """Its columns, with their steps' times."""
        for c in self.columns:
            c.times = times
        return self.columns


class StepBatch(Protocol):
    """What a plug-in's batch reader of one log offers the reader (`frameworks.generic.under`)."""

    def claims(self, rec: Record) -> bool:
        """A record this reader may read (a cheap look: its shape is checked by `read`)."""
        ...

    def read(self, records: list[Record]) -> list[StepRun | Record]:
        """Claimed records, in order: runs of their steps (their times not yet set), and the
        records it gives back."""
        ...

    def stamp(self, records: list[Record]) -> list[str | None]:
        """The events' times of these claimed records, asked in log order as the reader reaches
        them (a parser's clock moves with every record it reads)."""
        ...


# A number as the frameworks' step lines write it (and `float` reads it exactly as the record
# readers' own patterns do): no `nan` or `inf` (readers skip or keep those their own ways).
NUMBER = r"[-+]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][-+]?[0-9]{1,4})?"
# A number no reader reads (`(87.5%)` after `Trainable 112/128`): digits only, so it can never
# spell a key.
BYSTANDER = r"[0-9]{1,40}(?:\.[0-9]{1,40})?"
_NUM_CHARS = frozenset("0123456789.eE+-")


@dataclass
class Slot:
    """Where one number of a layout goes: `side` is "values", "phases" or "extra"; `group` is its
    group in the layout's pattern (0 is the step); `convert` turns its text into the number the
    record reader would give."""

    side: str
    name: str
    group: int
    convert: Callable[[str], float] = float
    over: int | None = None  # a second group: the value is group / over, both counts (`Trainable 112/128`)


@dataclass
class Layout:
    """One shape of step line: its pattern (group 0 the step number, the others its numbers),
    the events it gives, (role, slots) in the order the record reader gives them and each
    event's slots in the order its dicts take their names, and `check`: False for a line's
    numbers the record reader would take otherwise."""

    pattern: str
    events: list[tuple[str, list[Slot]]]
    check: Callable[[tuple[str, ...]], bool] | None = None
    # Every line of a chunk at once, `\n`-joined; its `fullmatch` reads one line as the pattern
    # alone would (no part of a layout matches a line break): one compile, not two (a verl step
    # line's hundred numbers took 19 ms each, a tenth of a first status).
    many: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.many = re.compile(f"^{self.pattern}$", re.ASCII | re.MULTILINE)


def template(text: str, spans: Sequence[tuple[int, int, str]]) -> str | None:
    """`text` as a pattern: each span (start, end, sub-pattern) a group, the rest literal.
    None where a number is followed by a character a number could go on with (the pattern's
    groups must end where the reader's own do), or the text holds a line break."""
    if "\n" in text or "\r" in text:
        return None
    out: list[str] = []
    pos = 0
    for start, end, sub in sorted(spans):
        if start < pos:
            return None
        if end < len(text) and text[end] in _NUM_CHARS:
            return None
        out.append(re.escape(text[pos:start]))
        out.append(f"({sub})")
        pos = end
    out.append(re.escape(text[pos:]))
    return "".join(out)


def bystanders(text: str, taken: Sequence[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Numbers in `text` outside the `taken` spans, as groups no reader reads (so a line with
    another `(75.0%)` there is of the same shape)."""
    out = []
    for m in re.finditer(r"(?<![\w.])[0-9]+(?:\.[0-9]+)?(?![\w.])", text, re.ASCII):
        s, e = m.start(), m.end()
        if not any(s < te and ts < e for ts, te, _ in taken):
            out.append((s, e, BYSTANDER))
    return out


class Layouts:
    """The shapes learnt from one log; `learn(message)` gives the layout of a line whose shape
    is new (None: that line is read record by record)."""

    def __init__(self, learn: Callable[[str], Layout | None]) -> None:
        self._learn = learn
        self.layouts: list[Layout] = []
        self.misses = 0

    def match(self, msg: str) -> tuple[Layout, tuple[str, ...]] | None:
        for layout in self.layouts:
            m = layout.many.fullmatch(msg)
            if m is not None:
                return layout, m.groups()
        if self.misses >= MAX_MISSES or len(self.layouts) >= MAX_LAYOUTS:
            return None
        learnt = self._learn(msg)
        m = learnt.many.fullmatch(msg) if learnt is not None else None
        if learnt is None or m is None:  # a layout must read the line it was learnt from
            self.misses += 1
            return None
        self.layouts.append(learnt)
        return learnt, m.groups()

    def all_of_one(self, messages: list[str]) -> tuple[Layout, list[tuple[str, ...]]] | None:
        """Every message of one learnt shape, read in one pass (the common case: a chunk of one
        log's step lines), or None."""
        joined = "\n".join(messages)
        for layout in self.layouts:
            found = layout.many.findall(joined)
            if len(found) == len(messages):
                groups = found if layout.many.groups > 1 else [(g,) for g in found]
                if layout.check is None or all(map(layout.check, groups)):
                    return layout, groups
                return None
        return None


def read_batch(records: list[Record], layouts: Layouts, messages: list[str], origin: str = "log") -> list[StepRun | Record]:
    """Claimed step records, in order (`messages[j]` is the text a layout reads of
    `records[j]`), as runs of columns, one per run of lines of one layout, and the records no
    layout reads, in their places."""
    whole = layouts.all_of_one(messages) if layouts.layouts else None
    if whole is not None:
        return [run_of(whole[0], whole[1], origin)]
    out: list[StepRun | Record] = []
    run: list[tuple[str, ...]] = []
    current: Layout | None = None
    for rec, msg in zip(records, messages):
        got = layouts.match(msg)
        if got is None or (got[0].check is not None and not got[0].check(got[1])):
            if current is not None and run:
                out.append(run_of(current, run, origin))
            run, current = [], None
            out.append(rec)
            continue
        if got[0] is not current:
            if current is not None and run:
                out.append(run_of(current, run, origin))
            run, current = [], got[0]
        run.append(got[1])
    if current is not None and run:
        out.append(run_of(current, run, origin))
    return out


def run_of(layout: Layout, lines: list[tuple[str, ...]], origin: str) -> StepRun:
    """One layout's lines as columns: one conversion a column, C speed where it is `float`."""
    by_group = list(zip(*lines))
    steps = list(map(int, by_group[0]))
    times: list[str | None] = [None] * len(steps)  # stamped as the reader reaches them
    out = []
    for role, slots in layout.events:
        cols = StepColumns(role, origin, steps, times)
        for slot in slots:
            texts = by_group[slot.group]
            if slot.over is not None:
                col = [int(a) / int(b) for a, b in zip(texts, by_group[slot.over])]
            elif slot.convert is float:
                col = list(map(float, texts))
            else:
                col = list(map(slot.convert, texts))
            getattr(cols, slot.side)[slot.name] = col
        out.append(cols)
    return StepRun(len(lines), out)


def events_of_columns(cols: StepColumns) -> list[StepMetrics]:
    """The batch as the events the record reader gives, one a step (the state's slow path, and
    the tests' reference)."""
    return [StepMetrics(cols.role, step, {k: v[j] for k, v in cols.values.items()}, {k: v[j] for k, v in cols.phases.items()},
                        cols.origin, cols.times[j], {k: v[j] for k, v in cols.extra.items()})
            for j, step in enumerate(cols.steps)]
