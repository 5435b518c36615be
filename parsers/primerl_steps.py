"""prime-rl's step lines in batches (docs/reading.md, "Step lines in batches"): the orchestrator's
and the trainer's `Step N | 31.0s | Reward 0.4375 | …` lines, as `parsers.primerl` reads them one
by one, read a shape at a time (`parsers.step_batches`).

A shape is learnt from one line with the record reader's own patterns (`FIELD_RE`, the step
time, `TRAINABLE_RE`): each number they read becomes a group of the shape's pattern with the
grammar they read it with, every other number a group no reader reads, the rest literal text.
A line of that shape has the same fields in the same places, so the record reader would give it
the same event with its own numbers; a line of any other shape is read by the record reader.
"""

from __future__ import annotations

from .events import ORCHESTRATOR, TRAINER
from .primerl import FIELD_RE, ORCH_FIELDS, PERCENT_FIELDS, STEP_RE, TRAINABLE_RE, TRAINER_FIELDS
from .records import Record
from .step_batches import NUMBER, Layout, Layouts, Slot, StepRun, bystanders, read_batch, template
from .text import parse_duration

# A step time as prime-rl prints it (`31.0s`, `1m 18s`, `412ms`): digits, units and spaces only,
# so it can never spell a field.
DURATION = r"[ \t]*[0-9][0-9.]{0,40}[ \t]*(?:ms|[dhms])(?:[ \t]+[0-9][0-9.]{0,40}[ \t]*(?:ms|[dhms])){0,4}[ \t]*"
COUNT = "[0-9]{1,18}"
MAX_DURATIONS = 4096
_DURATIONS: dict[str, float | None] = {}


def duration(text: str) -> float | None:
    """`parse_duration`, remembered: a week of step lines has a few hundred distinct times."""
    try:
        return _DURATIONS[text]
    except KeyError:
        d = parse_duration(text)
        if len(_DURATIONS) < MAX_DURATIONS:
            _DURATIONS[text] = d
        return d


def _seconds(text: str) -> float:
    d = duration(text)
    assert d is not None  # the layout's check lets through only lines whose time reads
    return d


def _percent(text: str) -> float:
    return float(text) / 100.0


Span = tuple[int, int]


def learn(msg: str, role_hint: str) -> Layout | None:
    """The layout of step line `msg`, as `primerl._step_line` reads it (None: a line the batch
    leaves to it, such as v0.5's `Time:` field or a `nan`)."""
    if not STEP_RE.match(msg):
        return None
    parts = msg.split("|", 2)
    head = parts[0].split()
    if len(head) < 2 or head[0] != "Step" or not head[1].isdigit() or not msg.startswith(f"Step {head[1]}"):
        return None
    fields = list(FIELD_RE.finditer(msg))
    keys = {m.group(1).lower() for m in fields}
    if "time" in keys or any(m.group(2) in ("nan", "inf") for m in fields):
        return None
    if keys & {"loss", "entropy", "grad. norm", "mfu", "mismatch kl"}:
        role, table = TRAINER, TRAINER_FIELDS
    elif keys & {"reward", "trainable", "seq. length", "truncation"}:
        role, table = ORCHESTRATOR, ORCH_FIELDS
    else:
        role, table = role_hint, (TRAINER_FIELDS if role_hint == TRAINER else ORCH_FIELDS)
    grammar: dict[Span, str] = {(5, 5 + len(head[1])): COUNT}  # `Step N`: the step, group 0
    values: dict[str, Span] = {}  # name → where its number is, in the record reader's order
    extra: dict[str, Span] = {}
    percent: set[Span] = set()
    timed: Span | None = None
    if len(parts) > 1 and parts[1].strip()[:1].isdigit():
        start = len(parts[0]) + 1
        timed = (start, start + len(parts[1]))
        if duration(parts[1]) is None:
            return None
        grammar[timed] = DURATION
        values["step_time_s"] = timed
    for m in fields:
        k = m.group(1).lower()
        span = (m.start(2), m.end(2))
        grammar[span] = NUMBER
        name = table.get(k)
        if name is None:
            if k not in ("trainable", "step"):
                extra[k] = span
            continue
        values[name] = span
        if m.group(3) and name in PERCENT_FIELDS:
            percent.add(span)
        else:
            percent.discard(span)
    tm = TRAINABLE_RE.search(msg)
    ratio: tuple[Span, Span] | None = None
    if tm:
        if not int(tm.group(2)):
            return None
        ratio = ((tm.start(1), tm.end(1)), (tm.start(2), tm.end(2)))
        for span in ratio:
            grammar[span] = COUNT  # read by FIELD_RE and TRAINABLE_RE alike: what both read
    spans = [(s, e, sub) for (s, e), sub in grammar.items()]
    spans += bystanders(msg, spans)
    pattern = template(msg, spans)
    if pattern is None:
        return None
    group = {(s, e): g for g, (s, e, _sub) in enumerate(sorted(spans))}
    slots = [Slot("values", name, group[span], _seconds if span == timed else _percent if span in percent else float)
             for name, span in values.items()]
    slots += [Slot("extra", name, group[span]) for name, span in extra.items()]
    if ratio is not None:
        slots.append(Slot("extra", "trainable_frac", group[ratio[0]], over=group[ratio[1]]))
    t_group = group[timed] if timed is not None else None
    r_group = group[ratio[1]] if ratio is not None else None

    def check(groups: tuple[str, ...]) -> bool:
        return (t_group is None or duration(groups[t_group]) is not None) and (r_group is None or int(groups[r_group]) != 0)

    return Layout(pattern, [(role, slots)], check)


class PrimeSteps:
    """One prime-rl log's step lines, read in batches (`parsers.step_batches.StepBatch`)."""

    def __init__(self, role: str) -> None:
        self.layouts = Layouts(lambda msg: learn(msg, role))

    def claims(self, rec: Record) -> bool:
        return rec.fmt == "prime" and not rec.cont and rec.message.startswith("Step ")

    def read(self, records: list[Record]) -> list[StepRun | Record]:
        return read_batch(records, self.layouts, [r.message for r in records])

    def stamp(self, records: list[Record]) -> list[str | None]:
        return [r.time for r in records]
