"""verl's `step:N - key:value - …` lines in batches (docs/reading.md, "Step lines in batches"),
as `VerlParser` reads them one by one (`parse.step_events`), a shape at a time.

A shape is learnt from one line: its keys and separators literal, each number `PAIR_RE` and
`strict_float` read a group with their grammar. Where each key's number goes (the rollout side,
the trainer's, a phase, an extra) is what `events_of` makes of the line's keys, asked once with
each key's group number as its value: it decides by the keys alone, so every line of the shape
goes the same way. A line whose numbers `events_of` would skip (`1e400` reads as inf) or whose
step is 0 (the validation before training) is read by the record reader.
"""

from __future__ import annotations

import math

from runtop.frameworks.verl.parse import KEYS, PAIR_RE, PHASE, STEP_RE, VerlParser
from runtop.parsers.events import StepMetrics
from runtop.parsers.metrics_generic import events_of
from runtop.parsers.numbers import strict_float
from runtop.parsers.records import Record
from runtop.parsers.step_batches import NUMBER, Layout, Layouts, Slot, StepRun, read_batch, template

STEP = "[0-9]{1,9}"


def learn(msg: str) -> Layout | None:
    m = STEP_RE.match(msg)
    if m is None or int(m.group(1)) == 0:
        return None
    spans = [(m.start(1), m.end(1), STEP)]
    data: dict[str, float] = {}
    pairs = list(PAIR_RE.finditer(msg, m.end() - 3))
    for j, p in enumerate(pairs, start=1):
        raw = p.group(2)
        if strict_float(raw) is None or not math.isfinite(float(raw)) or raw in ("nan", "inf", "-inf"):
            return None  # a value the record reader skips: the line stays its
        spans.append((p.start(2), p.end(2), NUMBER))
        data[p.group(1)] = float(j)
    pattern = template(msg, spans)
    if pattern is None:
        return None
    events: list[tuple[str, list[Slot]]] = []
    for ev in events_of(1, data, KEYS, PHASE, origin="log"):
        assert isinstance(ev, StepMetrics)
        slots = [Slot(side, name, int(g)) for side, got in (("values", ev.values), ("phases", ev.phases_s), ("extra", ev.extra))
                 for name, g in got.items()]
        events.append((ev.role, slots))
    used = sorted({s.group for _, slots in events for s in slots})

    def check(groups: tuple[str, ...]) -> bool:
        return int(groups[0]) != 0 and all(math.isfinite(float(groups[g])) for g in used)

    return Layout(pattern, events, check)


class VerlSteps:
    """One verl driver log's step lines, read in batches, on its parser's clock."""

    def __init__(self, parser: VerlParser) -> None:
        self.parser = parser
        self.layouts = Layouts(learn)

    def claims(self, rec: Record) -> bool:
        return rec.fmt == "verl-step" and not rec.cont

    def read(self, records: list[Record]) -> list[StepRun | Record]:
        return read_batch(records, self.layouts, [rec.message.strip() for rec in records])

    def stamp(self, records: list[Record]) -> list[str | None]:
        times = []
        p = self.parser
        for rec in records:  # the parser's clock, moved as `VerlParser._record` moves it
            if rec.time:
                p.last_time = rec.time
            times.append(rec.time or p.last_time)
        return times

