"""A cheap first pass over raw log lines, before cleaning and record grouping.

Most lines of a long run say little: an orchestrator writes a `Train batch …`
progress line every few seconds, vLLM an access line per request and a stat line
every 10 s. Only the newest progress or stat line means anything, and a 2xx access
line means nothing. Dropping them with a substring test (C speed, no regex, no
decoding) before the per-line Python work is what keeps a GB backfill in seconds
(benchmarks/backfill.py). Any other line, including every WARNING/ERROR, passes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache

# Lines whose newest instance is all that matters (the state keeps only the latest).
LATEST_WINS = (b"Train batch ", b"Avg prompt throughput")
# Lines that carry nothing runtop reports: successful HTTP requests, metric scrapes.
DROP = (b'HTTP/1.1" 2', b"GET /metrics HTTP")
# …unless another record is glued behind the access line (`… 200 OKCRITICAL 11-05 …
# MQLLMEngine is already dead`, seen in vllm-project/vllm#10024): the cleaner splits it off.
GLUE_WORDS = (b"ERROR", b"CRITICAL", b"WARNING", b"INFO ", b"SUCCESS")


@dataclass(frozen=True)
class BulkNoise:
    """A plug-in's keep rule for one log: which lines the scan stage may leave out of a long
    stretch before the records stage, in `skim`'s own terms so every scanner agrees with it by
    construction (docs/reading.md, "The scan stage"). Left out: every line holding a latest-wins
    marker (the newest of each chunk is put back) or a `drop` marker (fixed strings), and every
    line a `drop_re` pattern matches at its start (a shape the plug-in knows carries nothing:
    an agent's transcript), less the dropped lines that also hold a `glue` word (another record
    glued to the line, or words of a death or an end), which are kept."""

    latest_wins: tuple[bytes, ...]
    drop: tuple[bytes, ...] = ()
    glue: tuple[bytes, ...] = ()
    drop_re: tuple[bytes, ...] = ()
    # For each `drop_re`, a fixed string every line it matches holds: grep leaves out every
    # line with it at memory speed (`-F`), and hands back those the pattern does not match.
    drop_hint: tuple[bytes, ...] = ()
    # Record headers that carry nothing (an INFO line of chatter), each with its hint: left out
    # only where the next line kept starts a record (`starts`: its first bytes), so no line of
    # another record is taken for one of its continuation lines; the first and last line of a
    # stretch are kept (what comes before or after them is not known). Applied to what the
    # other tests keep, by every backend (`gate`).
    gated: tuple[bytes, ...] = ()
    gated_hint: tuple[bytes, ...] = ()
    # Shapes left out by `gate` too (after the other tests, in Python, by every backend), with no
    # condition but the glue words: rare lines (one a step) not worth grep's rescue passes.
    late: tuple[bytes, ...] = ()
    late_hint: tuple[bytes, ...] = ()
    starts: bytes = b""  # a pattern at a line's start: the line starts a record
    gated_glue: tuple[bytes, ...] = ()  # words that keep a gated header (an end's, a death's)

    def drop_args(self) -> list[str]:
        return ["-v", "-F", *_e([os.fsdecode(m) for m in self.latest_wins + self.drop + self.drop_hint])]

    def rescue_args(self) -> list[str]:
        """The glue words as one `-E` alternation of literals; of what it finds, `rescued` keeps
        the lines with a drop marker. Empty when nothing is dropped that could be kept. Not `-F`:
        GNU grep's many-string matcher is half as fast as its DFA once the words are many and
        start with common letters (an agent's transcripts, 36 guard words: 7.2 against 3.3 s a
        GB; 5 glue words over vLLM's lines: the same, 0.3 s)."""
        if not ((self.drop or self.drop_re) and self.glue):
            return []
        return ["-E", "-e", os.fsdecode(b"|".join(_ere(w) for w in self.glue))]

    def stray_args(self) -> list[str]:
        """The lines that hold a hint but that no `drop_re` matches (one PCRE, anchored: as fast
        as `-F` on a log of transcripts); `keeps` says which of them the rule keeps."""
        if not self.drop_re:
            return []
        shapes = b"|".join(self.drop_re)
        hints = b"|".join(re.escape(h) for h in self.drop_hint)
        return ["-P", "-e", os.fsdecode(b"^(?!(?:" + shapes + b")).*(?:" + hints + b")")]

    def grep_gates(self) -> bool:
        """Whether grep leaves out the gated headers and late shapes itself (`gate_args`): a rule
        with gated or late shapes and no drop markers or shapes of its own. Each gated shape must
        start a record (`starts` matches every line it matches): then a gated header goes exactly
        where the next line kept starts a record, a test of its next line alone."""
        return bool(self.gated or self.late) and not (self.drop or self.drop_re)

    def gate_args(self) -> list[list[str]]:
        """The greps, in a pipe, that leave out the latest-wins lines (`-F`, at memory speed), then
        the late shapes that hold no guard word and the gated headers that hold no gated guard
        word (one anchored PCRE over what is left, each line behind its `OFFSET:`); the headers
        `gate` keeps are put back (`runtop.sources.grep_gate`). The words are looked for a byte
        at a time, each first byte asking for its words' rest: a `.*(?:…)` of 30 words backtracks
        at every byte (3.3 s over a noisy orchestrator's 256 MB, the loop under 1 s)."""
        shapes = [b"(?=" + g + b")" + _no_word(self.gated_glue) for g in self.gated]
        shapes += [b"(?=" + g + b")" + _no_word(self.glue) for g in self.late]
        drop = b"(?:" + b"|".join(shapes) + b")"
        if not self.latest_wins:
            return [["-v", "-P", "-e", os.fsdecode(b"^" + drop)]]
        return [["-v", "-F", *_e([os.fsdecode(m) for m in self.latest_wins])], ["-v", "-P", "-e", os.fsdecode(b"^[0-9]+:" + drop)]]

    def kept_ungated(self, line: bytes) -> bool:
        """`keeps`, less the late shapes that hold no guard word: the lines `gate` asks about."""
        if not self.keeps(line):
            return False
        if any(h in line for h in self.late_hint) and any(p.match(line) for p in _compiled(self.late)):
            return any(w in line for w in self.glue)
        return True

    def starts_record(self) -> re.Pattern[bytes]:
        return _compiled((self.starts,))[0]

    def rescued(self, line: bytes) -> bool:
        """A line the rescue grep found that `skim` keeps and the drop grep dropped: never one
        without a drop marker or a hint (`BulkGrep` skips blocks of such lines unread)."""
        return any(m in line for m in self.drop) or (any(h in line for h in self.drop_hint) and self.keeps(line))

    def drop_patterns(self) -> tuple[re.Pattern[bytes], ...]:
        return _compiled(self.drop_re)

    def gate(self, kept: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """`kept` (offset, line), in order, less the `late` shapes that hold no glue word, and the
        `gated` headers whose next kept line starts a record and that hold no gated glue word."""
        if self.late:
            kept = self._late(kept)
        if not self.gated or len(kept) < 3:
            return kept
        n = len(kept)
        cands = []
        for h in self.gated_hint:
            cands += [k for k in range(1, n - 1) if h in kept[k][1]]
        if not cands:
            return kept
        if len(self.gated_hint) > 1:
            cands = sorted(set(cands))
        # One pass over the candidates joined: a line's group is set where a gated shape starts it.
        found = _gated_lines(self.gated).findall(b"\n".join(kept[k][1] for k in cands))
        cands = [k for k, g in zip(cands, found) if g]
        blob = b"\n".join(kept[k][1] for k in cands)
        words = [w for w in self.gated_glue if w in blob]
        drop = set()
        # Which lines start a record: one pass over the lines after each candidate, joined.
        after = sorted({k + 1 for k in cands} | {n - 1})
        starts = dict(zip(after, _gated_lines((self.starts,)).findall(b"\n".join(kept[k][1] for k in after))))
        nxt = n - 1  # the next line kept after the candidate looked at
        for k in reversed(cands):
            if k + 1 not in drop:
                nxt = k + 1
            if starts[nxt] and not (words and any(w in kept[k][1] for w in words)):
                drop.add(k)
        return [item for k, item in enumerate(kept) if k not in drop] if drop else kept

    def _late(self, kept: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        pats = _compiled(self.late)
        hit = [k for h in self.late_hint for k, (_off, line) in enumerate(kept) if h in line and any(p.match(line) for p in pats)]
        if not hit:
            return kept
        blob = b"\n".join(kept[k][1] for k in hit)  # the guard words looked for once over them all
        words = [w for w in self.glue if w in blob]
        drop = {k for k in hit if not (words and any(w in kept[k][1] for w in words))}
        return [item for k, item in enumerate(kept) if k not in drop] if drop else kept

    def keeps(self, line: bytes) -> bool:
        """The rule on one line (no latest-wins put back, no gated header left out): the reference
        every scanner is held to."""
        if any(m in line for m in self.latest_wins):
            return False
        if any(m in line for m in self.drop) or any(r.match(line) for r in self.drop_patterns()):
            return any(w in line for w in self.glue)
        return True


@cache
def _compiled(patterns: tuple[bytes, ...]) -> tuple[re.Pattern[bytes], ...]:
    return tuple(re.compile(p) for p in patterns)


@cache
def _gated_lines(patterns: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """Every line of a `\n`-joined blob, once each, with group 1 set where one of `patterns`
    matches at its start."""
    return re.compile(rb"^((?:" + b"|".join(patterns) + rb")|)[^\n]*$", re.M)


# Bytes by how often a log's text holds them (English's letters, then capitals and digits): the
# words' first bytes are tried in this order, the commonest first.
_COMMON = b"etaoinsrhdlucmfwgypbvkjxqzETAOINSRHDLUCMFWGYPBVKJXQZ0123456789"


def _no_word(words: tuple[bytes, ...]) -> bytes:
    """A PCRE that matches the rest of a line holding none of `words`: runs of bytes no word
    starts with, and each byte one does where none of its words' rests follows, the commonest
    bytes asked first (a word of one byte: that byte is never taken)."""
    rests: dict[bytes, list[bytes]] = {}
    for w in words:
        rests.setdefault(w[:1], []).append(w[1:])
    firsts = b"".join(re.escape(c) for c in sorted(rests))
    order = sorted(rests, key=lambda c: _COMMON.find(c) if c in _COMMON else 256 + c[0])
    each = [re.escape(c) + b"(?!" + b"|".join(re.escape(r) for r in rests[c]) + b")" for c in order if all(rests[c])]
    return b"(?:[^" + firsts + b"]++" + b"".join(b"|" + e for e in each) + b")*+$" if words else b""


def _e(patterns: list[str]) -> list[str]:
    return [a for p in patterns for a in ("-e", p)]


def _ere(word: bytes) -> bytes:
    """`word` as a POSIX extended regex that matches it literally (a byte at a time, C locale):
    its special bytes escaped, not `]` or `}` (literal alone; POSIX leaves a backslash before a
    byte that is not special undefined)."""
    return re.sub(rb"([.\[()*+?{|^$\\])", rb"\\\1", word)


# A plug-in names, per log, which of them its lines carry (`Framework.bulk_noise`): a marker
# that never comes costs a backwards read of every chunk to prove it absent.
ALL_NOISE = BulkNoise(LATEST_WINS, DROP, GLUE_WORDS)
PROGRESS_NOISE = BulkNoise((LATEST_WINS[0],))
VLLM_NOISE = BulkNoise((LATEST_WINS[1],), DROP, GLUE_WORDS)

# An agent's transcript as a SkyRL generator prints it under Ray's prefix: `(skyrl_entrypoint
# pid=4101) {'role': 'assistant', 'content': …}`. It gives no event (its dict holds no number
# runtop reads), and a week-old agent run's log is mostly these: left out before the records
# stage, unless it holds a word that could make it count (the generic reader reads deaths in
# any record) or another record is glued to it.
TRANSCRIPT_RE = rb"(?:\x1b\[3\dm)?\([\w.:-]+ pid=\d+(?:, ip=[\d.]+)?\)(?:\x1b\[0m)? \{'role': '"
TRANSCRIPT_GUARD = GLUE_WORDS + (
    b"rror", b"xception", b"Traceback", b"SIG", b"Fatal", b"illed", b"out of memory", b"OutOfMemory", b"NCCL", b"nccl", b"CUDA",
    b"No space", b"Errno", b"exitcode", b"died", b"dead", b"Dead", b"inish", b"omplete", b"ucceeded", b"train_runtime",
    b"CANCELLED", b"slurmstepd", b"srun", b"terminate called", b"memory", b"global_step", b"Step ", b"%|", b"}\x1b", b"}(",
)
TRANSCRIPT_NOISE = BulkNoise((LATEST_WINS[1],), DROP, TRANSCRIPT_GUARD, (TRANSCRIPT_RE,), (b"{'role': '",))

# A prime-rl orchestrator's chatter between two steps (docs/reading.md, "The scan stage"): the
# lines of tqdm frames an env's bar draws (no header of their own), and INFO records whose
# message is none the orchestrator's reader reads (`parsers.primerl.parse_record`: steps, batch
# progress, rollouts, saves, resumes, the filter, waits, ends). An INFO record is left out only
# where the next line kept starts a record (no continuation line changes hands), and never with
# an end's or a death's words in it (the generic reader reads those in any record).
_SGR = rb"(?:\x1b\[[0-9;]*m)*"
LOGURU_START = _SGR + rb"[0-9]{2}:[0-9]{2}:[0-9]{2}" + _SGR + rb"[ \t]+" + _SGR + rb"[ \t]*(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\b"
QUIET_INFO_RE = (
    _SGR + rb"[0-9]{2}:[0-9]{2}:[0-9]{2}" + _SGR + rb"[ \t]+" + _SGR + rb"[ \t]*INFO" + _SGR + rb" " + _SGR
    + rb"(?!" + _SGR + rb"(?:Step |Train batch |rollout |Saving|Resuming|Detected |Orchestrator|Pausing|Waiting for|Policy inference"
    rb"|Starting|RL trainer|SFT trainer|Training|Active tasks))"
)
BAR_LINE_RE = rb"\r?(?!" + _SGR + rb"[0-9]{2}:[0-9]{2}:[0-9]{2})[^\x1b\r\n]{0,200}?[0-9]{1,3}%\|"
END_OR_DEATH = (
    b"inish", b"omplete", b"ucceeded", b"one", b"exits successfully", b"train_runtime", b"max_steps", b"rror", b"xception",
    b"Traceback", b"SIG", b"Fatal", b"illed", b"memory", b"NCCL", b"nccl", b"CUDA", b"No space", b"Errno", b"exitcode", b"died",
    b"dead", b"Dead", b"CANCELLED", b"slurmstepd", b"srun", b"terminate called", b"%|",
)
ORCHESTRATOR_NOISE = BulkNoise(
    (LATEST_WINS[0],), glue=GLUE_WORDS + END_OR_DEATH[:-1], late=(BAR_LINE_RE,), late_hint=(b"%|",),
    gated=(QUIET_INFO_RE,), gated_hint=(b"INFO",), starts=LOGURU_START, gated_glue=END_OR_DEATH,
)

# The tables `rich` draws (TRL's `log_completions`: a prompt, its completion and its rewards a
# row): lines that start with a box-drawing character carry no record of their own.
TABLE_NOISE = BulkNoise(
    (LATEST_WINS[1],), DROP, TRANSCRIPT_GUARD, (rb"\xe2\x94[\x80-\xbf]", rb"\xe2\x95[\x80-\xbf]"), (b"\xe2\x94", b"\xe2\x95"),
)


def skim(data: bytes) -> bytes:
    """`data` (complete lines) minus the noise; of each latest-wins kind only the newest
    line stays, in place.

    In place matters: "the role was still working after its fatal error" is read from
    order, and a stat line moved past an engine crash would say the engine lived on.
    The substring tests run on the whole chunk first (`find`, stopping at the second hit),
    so a chunk without noise is returned untouched without being split; a chunk with noise
    is split once per kind present and filtered in one pass (the two passes per
    kind were a quarter of a GB backfill).
    """
    drops = [m for m in DROP if m in data]
    if drops:
        lines = data.split(b"\n")
        e, c, w, i, s = GLUE_WORDS  # spelt out: `in` is C, a regex or a generator per line is not
        for m in drops:
            lines = [line for line in lines if m not in line or e in line or c in line or w in line or i in line or s in line]
        data = b"\n".join(lines)
    for marker in LATEST_WINS:
        last = data.rfind(marker)
        if last < 0 or data.find(marker) == last:
            continue  # none, or only one: nothing to drop
        start = data.rfind(b"\n", 0, last) + 1
        lines = data.split(b"\n")
        # The newest hit's line number, counted from the end: it is near the end of a chunk.
        newest = len(lines) - 1 - data.count(b"\n", start)
        kept = [line for line in lines[:newest] if marker not in line]
        kept.append(lines[newest])
        kept += [line for line in lines[newest + 1 :] if marker not in line]
        data = b"\n".join(kept)
    return data
