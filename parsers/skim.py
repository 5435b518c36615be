"""A cheap first pass over raw log lines, before cleaning and record grouping.

Most lines of a long run say little: an orchestrator writes a `Train batch …`
progress line every few seconds, vLLM an access line per request and a stat line
every 10 s. Only the newest progress or stat line means anything, and a 2xx access
line means nothing. Dropping them with a substring test (C speed, no regex, no
decoding) before the per-line Python work is what keeps a GB backfill in seconds
(benchmarks/backfill.py). Any other line, including every WARNING/ERROR, passes.
"""

from __future__ import annotations

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

    def drop_args(self) -> list[str]:
        return ["-v", "-F", *_e([m.decode("latin-1") for m in self.latest_wins + self.drop + self.drop_hint])]

    def rescue_args(self) -> list[str]:
        """The glue words as fixed strings (grep -F: faster than one `-E` pattern of both, 0.65
        against 1.1 s a GB); of what it finds, `rescued` keeps the lines with a drop marker.
        None when nothing is dropped that could be kept."""
        if not ((self.drop or self.drop_re) and self.glue):
            return []
        return ["-F", *_e([w.decode("latin-1") for w in self.glue])]

    def stray_args(self) -> list[str]:
        """The lines that hold a hint but that no `drop_re` matches (one PCRE, anchored: as fast
        as `-F` on a log of transcripts); `keeps` says which of them the rule keeps."""
        if not self.drop_re:
            return []
        shapes = b"|".join(self.drop_re)
        hints = b"|".join(re.escape(h) for h in self.drop_hint)
        return ["-P", "-e", (b"^(?!(?:" + shapes + b")).*(?:" + hints + b")").decode("latin-1")]

    def rescued(self, line: bytes) -> bool:
        """A line the rescue grep found that `skim` keeps and the drop grep dropped."""
        return any(m in line for m in self.drop) or (any(h in line for h in self.drop_hint) and self.keeps(line))

    def drop_patterns(self) -> tuple[re.Pattern[bytes], ...]:
        return _compiled(self.drop_re)

    def keeps(self, line: bytes) -> bool:
        """The rule on one line (no latest-wins put back): the reference every scanner is held to."""
        if any(m in line for m in self.latest_wins):
            return False
        if any(m in line for m in self.drop) or any(r.match(line) for r in self.drop_patterns()):
            return any(w in line for w in self.glue)
        return True


@cache
def _compiled(patterns: tuple[bytes, ...]) -> tuple[re.Pattern[bytes], ...]:
    return tuple(re.compile(p) for p in patterns)


def _e(patterns: list[str]) -> list[str]:
    return [a for p in patterns for a in ("-e", p)]


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
