"""A cheap first pass over raw log lines, before cleaning and record grouping.

Most lines of a long run say little: an orchestrator writes a `Train batch …`
progress line every few seconds, vLLM an access line per request and a stat line
every 10 s. Only the newest progress or stat line means anything, and a 2xx access
line means nothing. Dropping them with a substring test (C speed, no regex, no
decoding) before the per-line Python work is what keeps a GB backfill in seconds
(benchmarks/backfill.py). Any other line, including every WARNING/ERROR, passes.
"""

from __future__ import annotations

from dataclasses import dataclass

# Lines whose newest instance is all that matters (the state keeps only the latest).
LATEST_WINS = (b"Train batch ", b"Avg prompt throughput")
# Lines that carry nothing runtop reports: successful HTTP requests, metric scrapes.
DROP = (b'HTTP/1.1" 2', b"GET /metrics HTTP")
# …unless another record is glued behind the access line (`… 200 OKCRITICAL 11-05 …
# MQLLMEngine is already dead`, seen in vllm-project/vllm#10024): the cleaner splits it off.
GLUE_WORDS = (b"ERROR", b"CRITICAL", b"WARNING", b"INFO ", b"SUCCESS")


@dataclass(frozen=True)
class BulkNoise:
    """What a grep child may drop from a long stretch before `skim`, in `skim`'s own
    terms, so the two agree by construction: every line holding a latest-wins marker (the newest
    of each chunk is put back) or a `drop` marker (fixed strings: `grep -F`, at memory speed),
    less the `drop` lines that also hold a `glue` word, which a second grep, beside it on
    another core, hands back."""

    latest_wins: tuple[bytes, ...]
    drop: tuple[bytes, ...] = ()
    glue: tuple[bytes, ...] = ()

    def drop_args(self) -> list[str]:
        return ["-v", "-F", *_e([m.decode("ascii") for m in self.latest_wins + self.drop])]

    def rescue_args(self) -> list[str]:
        """The glue words as fixed strings (grep -F: faster than one `-E` pattern of both, 0.65
        against 1.1 s a GB); of what it finds, `rescued` keeps the lines with a drop marker.
        None when nothing is dropped that could be kept."""
        if not (self.drop and self.glue):
            return []
        return ["-F", *_e([w.decode("ascii") for w in self.glue])]

    def rescued(self, line: bytes) -> bool:
        """A line the rescue grep found that `skim` keeps and the drop grep dropped."""
        return any(m in line for m in self.drop)


def _e(patterns: list[str]) -> list[str]:
    return [a for p in patterns for a in ("-e", p)]


# A plug-in names, per log, which of them its lines carry (`Framework.bulk_noise`): a marker
# that never comes costs a backwards read of every chunk to prove it absent.
ALL_NOISE = BulkNoise(LATEST_WINS, DROP, GLUE_WORDS)
PROGRESS_NOISE = BulkNoise((LATEST_WINS[0],))
VLLM_NOISE = BulkNoise((LATEST_WINS[1],), DROP, GLUE_WORDS)


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
