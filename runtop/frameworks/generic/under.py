"""The generic reader under every plug-in (docs/reading.md, "Under every plug-in").

A plug-in's parser reads its framework's records with precision, and passes over what it does
not know: a death in words its framework never prints (slurmstepd's cancel, a worker's
`*** SIGABRT received`, an illegal memory access), an end in words of another version. Each
record that holds such words is read by the plug-in alone first; where the plug-in said nothing
of a death (no error, no fatal notice) or of an end, the generic reader's reading of that record
is added; likewise an evaluation or a save the run says it is in (parsers/pauses.py) that the
plug-in does not read. The plug-in's judgement always wins: a traceback it reads as one failed
request stays one failed request. Records without such words go to the plug-in in one batch, as before.
"""

from __future__ import annotations

import re

from runtop.frameworks.base import Framework, Parse
from runtop.frameworks.layout import JOB, Tracked
from runtop.parsers import ends, pauses
from runtop.parsers.crashes import error_notice, has_traceback
from runtop.parsers.events import (
    INFERENCE,
    TRAINER,
    BatchProgress,
    CheckpointSave,
    Event,
    MaxSteps,
    Notice,
    Phase,
    RoleFinished,
    RolloutFailed,
    VllmStats,
)
from runtop.parsers.records import HeaderFn, Record
from runtop.parsers.step_batches import StepBatch, StepColumns

# Words of a way to die worth a second look in a record's message. NCCL's INFO chatter and
# vLLM's stat lines (`Engine 000: Avg …`) are left to the batch.
DEATH_RE = re.compile(
    r"SIG[A-Z]{2,4} received|Fatal Python error|No space left|Errno 28|out of memory|OutOfMemory|illegal memory|NCCL(?! INFO)"
    r"|nccl[A-Z]|DistBackendError|oom[-_]kill|memory pressure|memory monitor|srun: error|CANCELLED AT|device-side"
    r"|Unhandled error|terminate called|exitcode|Out Of Memory|CUDA error|CUDA Error",
    re.ASCII,
)
# An end's words in a message; SkyRL's timer lines (`Finished: 'generate'`) are not one.
END_RE = re.compile(r"(?:[Ff]inished|[Cc]ompleted?|[Ss]ucceeded|[Dd]one)\b(?!: ')|train_runtime|exits successfully", re.ASCII)
MAX_LOOK_LINES = 40
# END_RE's words as plain substrings, asked one after another (`_end_word`): most messages are
# passed at memory speed (one regex search a step line cost a prime-rl backfill 20 %).
END_WORDS = ("inish", "omplete", "ucceeded", "one", "exits successfully")


def _end_word(msg: str) -> bool:
    """Whether `msg` holds one of END_WORDS: `in` after `in`, with no generator between them
    (`any` over the tuple cost a SkyRL backfill as much as the tests themselves)."""
    return "inish" in msg or "omplete" in msg or "ucceeded" in msg or "one" in msg or "exits successfully" in msg
# A death line that can hide in the continuation of another record (glued under an INFO line).
STRONG_RE = re.compile(r"slurmstepd|srun: error|\*\*\* SIG[A-Z]{2,4} received|Fatal Python error|Traceback \(most recent", re.ASCII)


# An evaluation's or a save's words come in a short line (a bar, a path): longer ones are not read for them.
MAX_PAUSE_LINE = 600
# A death that can hide under a record of another level, as plain words (found at memory speed).
STRONG_WORDS = ("slurmstepd", "srun: error", "*** SIG", "Fatal Python error", "Traceback (most recent")


def worth_a_look(rec: Record) -> bool:
    """A record the generic reader may add to: an end in a short message (an end is one short
    line, or transformers' `train_runtime` summary); a death in an ERROR record's message; a death
    glued under any other record (its continuation lines: slurmstepd's last word under a TRL bar).
    The message of a record with no level is every plug-in's own to read for deaths (its crash
    reading takes prints and orphans whole). Most records cost a length test: a SkyRL transcript is
    not scanned twice (one regex over every message cost 2.4x the backfill)."""
    msg = rec.message
    if len(msg) <= ends.MAX_END_LINE and _end_word(msg) and END_RE.search(msg):
        return True
    if len(msg) <= MAX_PAUSE_LINE and pauses.says(msg):
        return True  # an evaluation or a save said (parsers/pauses.py)
    if msg.startswith("{'train_runtime'"):
        return True
    if rec.level in ("ERROR", "CRITICAL"):
        return DEATH_RE.search(msg, 0, 4000) is not None
    if not rec.cont:
        return False
    text = "\n".join(rec.lines()[:MAX_LOOK_LINES])
    return any(w in text for w in STRONG_WORDS)


class Under:
    """`parse` (a plug-in's) with the generic reader's deaths and ends beneath it."""

    def __init__(self, parse: Parse) -> None:
        self.parse = parse

    def __call__(self, records: list[Record], role: str) -> list[Event]:
        out: list[Event] = []
        batch: list[Record] = []
        for rec in records:
            if not worth_a_look(rec):
                batch.append(rec)
                continue
            if batch:
                out.extend(self.parse(batch, role))
                batch = []
            said = self.parse([rec], role)
            out.extend(said)
            out.extend(beneath(rec, role, said))
        if batch:
            out.extend(self.parse(batch, role))
        return out


# Events that touch nothing a step's numbers touch (the run's total, vLLM's stats, the batch's
# progress, a timer's phase, a warning: counted by its kind, whatever the step): a step line's
# batch may be folded past them. An error is not one (it is judged against the steps around it).
COMMUTES = (MaxSteps, VllmStats, BatchProgress, Phase)


def _commutes(ev: Event, clears: bool) -> bool:
    """`clears`: every step line of the batch is a rollout step with numbers, which clears the
    rollouts failed since the last step; a failed rollout between two of them is cleared by the
    next one whichever goes first."""
    return (isinstance(ev, COMMUTES) or (isinstance(ev, Notice) and ev.level == "WARNING" and not ev.fatal)
            or (clears and isinstance(ev, RolloutFailed)))


def read_records(records: list[Record], parse: Parse, batch: StepBatch | None, role: str) -> list[Event | StepColumns]:
    """`records` as events, in order; the step records `batch` claims (and the generic reader
    would not look at) read in one batch (docs/reading.md, "Step lines in batches"): their steps
    as columns, cut where a record between them says something a step could change (an error, a
    save, a wait), and the records the batch gives back read by `parse`, each in its place.
    Each claimed record's time is stamped as the reader reaches it (a parser's clock)."""
    if batch is None:
        return list(parse(records, role))
    looks = isinstance(parse, Under)
    claimed = [i for i, rec in enumerate(records) if batch.claims(rec) and not (looks and worth_a_look(rec))]
    if not claimed:
        return list(parse(records, role))
    out: list[Event | StepColumns] = []
    done = k = 0  # records before `done` are read; `k` claimed records are
    for item in batch.read([records[i] for i in claimed]):
        if isinstance(item, Record):
            i = claimed[k]
            out.extend(parse(records[done:i], role))
            out.extend(parse([item], role))
            done, k = i + 1, k + 1
            continue
        first = 0  # where the part of the run not yet given starts
        clears = any(c.role != TRAINER and c.values for c in item.columns)
        times: list[str | None] = []
        held: list[Event] = []  # what stood between the part's lines: it commutes, so it goes first
        for a in range(item.n):
            i = claimed[k + a]
            if done < i:
                between = parse(records[done:i], role)
                if a == first:
                    out.extend(between)
                elif all(_commutes(e, clears) for e in between):
                    held.extend(between)
                else:
                    out.extend(held)
                    out.extend(item.part(first, a).stamped(times))
                    out.extend(between)
                    held, times, first = [], [], a
            times.extend(batch.stamp([records[i]]))
            done = i + 1
        out.extend(held)
        out.extend((item if first == 0 else item.part(first, item.n)).stamped(times))
        k += item.n
    out.extend(parse(records[done:], role))
    return out


def beneath(rec: Record, role: str, said: list[Event]) -> list[Event]:
    """What the generic reader adds to what a plug-in `said` of `rec`."""
    out: list[Event] = []
    judged = any(isinstance(e, Notice) and (e.fatal or e.level in ("ERROR", "CRITICAL")) for e in said)
    if not judged:
        notice = _death(rec, role)
        if notice is not None:
            out.append(notice)
    if not any(isinstance(e, RoleFinished) for e in said) and not any(isinstance(e, Notice) for e in out):
        if ends.QUICK_RE.search(rec.message) and ends.says_ended(rec.message):
            out.append(RoleFinished(role, rec.time))
    if len(rec.message) <= MAX_PAUSE_LINE and not any(isinstance(e, (Phase, CheckpointSave)) for e in said):
        out.extend(pauses.pauses_in(rec.message, rec.time, role))  # a pause the plug-in does not read
    return out


def _death(rec: Record, role: str) -> Notice | None:
    lines = [rec.message, *rec.lines()]
    if rec.level in ("ERROR", "CRITICAL") or rec.level is None or has_traceback(lines):
        notice = error_notice(rec, role, traceback_is_fatal=False)
        if notice is not None and notice.kind != "error" and notice.fatal:
            return notice
        return None
    # An INFO or WARNING record with a death glued under it (slurmstepd's last word after the
    # run's last line, a worker's dump with no prefix of its own).
    cont = rec.lines()
    for i, line in enumerate(cont):
        if STRONG_RE.search(line):
            sub = Record("orphan", rec.time, None, line, proc=rec.proc)
            for more in cont[i + 1:]:
                sub.add(more)
            notice = error_notice(sub, role, traceback_is_fatal=False)
            if notice is not None and notice.fatal:
                return notice
            return None
    return None


def reading(fw: Framework, tracked: Tracked, batch_rollouts: int | None) -> tuple[HeaderFn | None, Parse, StepBatch | None]:
    """How one followed log is read: a SLURM job's output by the generic reader for its deaths
    and end; the generic plug-in's logs by itself; any other plug-in's with the generic reader
    under it, and its step lines in batches where the plug-in reads them so."""
    from runtop.frameworks.generic import GENERIC
    from runtop.frameworks.generic.parse import GenericParser, header

    if tracked.role == JOB:
        return header, GenericParser(progress=False, tracebacks_fatal=False).parse, None
    if tracked.role == INFERENCE and not fw.reads_inference_logs:
        # A vLLM server's log beside the run (`trl vllm-serve`): vLLM's own reading, where one
        # failed request's traceback is no death and the engine's is.
        from runtop.parsers.logs import parse_records

        return None, Under(parse_records), None
    parse = fw.parser(tracked, batch_rollouts)
    if fw is GENERIC or tracked.kind != "log":
        return fw.header(tracked), parse, None
    return fw.header(tracked), Under(parse), fw.step_batch(tracked, parse)
