"""A cheap first pass over raw log lines, before cleaning and record grouping.

Most lines of a long run say little: an orchestrator writes a `Train batch …`
progress line every few seconds, vLLM an access line per request and a stat line
every 10 s. Only the newest progress or stat line means anything, and a 2xx access
line means nothing. Dropping them with a substring test (C speed, no regex, no
decoding) before the per-line Python work is what keeps a GB backfill in seconds
(benchmarks/backfill.py). Any other line, including every WARNING/ERROR, passes.
"""

from __future__ import annotations

# Lines whose newest instance is all that matters (the state keeps only the latest).
LATEST_WINS = (b"Train batch ", b"Avg prompt throughput")
# Lines that carry nothing runtop reports: successful HTTP requests, metric scrapes.
DROP = (b'HTTP/1.1" 2', b"GET /metrics HTTP")
# …unless another record is glued behind the access line (`… 200 OKCRITICAL 11-05 …
# MQLLMEngine is already dead`, seen in vllm-project/vllm#10024): the cleaner splits it off.
GLUE_WORDS = (b"ERROR", b"CRITICAL", b"WARNING", b"INFO ", b"SUCCESS")


def skim(data: bytes) -> bytes:
    """`data` (complete lines) minus the noise; of each latest-wins kind only the newest
    line stays, in place.

    In place matters: "the role was still working after its fatal error" is read from
    order, and a stat line moved past an engine crash would say the engine lived on.
    The substring tests run on the whole chunk first, so a chunk without noise is
    returned untouched without being split.
    """
    lines: list[bytes] | None = None
    for marker in DROP:
        if marker in data:
            lines = lines if lines is not None else data.split(b"\n")
            lines = [line for line in lines if marker not in line or any(w in line for w in GLUE_WORDS)]
    for marker in LATEST_WINS:
        if data.count(marker) > 1:
            lines = lines if lines is not None else data.split(b"\n")
            hits = [line for line in lines if marker in line]
            if len(hits) > 1:
                newest = hits[-1]
                lines = [line for line in lines if line is newest or marker not in line]
    if lines is None:
        return data
    return b"\n".join(lines)
