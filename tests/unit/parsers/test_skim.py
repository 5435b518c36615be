"""The backfill's first pass drops exactly what the earlier two-pass skim dropped:
the same lines out, in the same order, for any mix of noise, glued records and duplicates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers.skim import DROP, GLUE_WORDS, LATEST_WINS, skim
from tests.inner import examples

LINES = [
    b"14:00:01 INFO Train batch 12/128 (9.4%) (+16 buffered); 3 inflight",
    b"14:00:02 INFO Train batch 13/128 (10.2%) (+16 buffered); 3 inflight",
    b"14:00:03 SUCCESS Step 4 | 31.0s | Reward 0.5",
    b"(APIServer pid=1) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: 1678.0 tokens/s",
    b'(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    b'INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1" 200 OK',
    b'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OKCRITICAL 11-05 MQLLMEngine is already dead',
    b"14:00:04 ERROR Error in scoring",
    b"Traceback (most recent call last):",
    b"",
]


def reference(data: bytes) -> bytes:
    """The earlier skim (two list passes per kind), kept as the oracle."""
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
    return data if lines is None else b"\n".join(lines)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=40))
def test_the_one_pass_skim_drops_what_the_two_pass_one_did(picked):
    data = b"\n".join(picked) + b"\n"
    assert skim(data) == reference(data)


def test_only_the_newest_progress_line_stays_in_place_even_when_an_older_one_is_identical():
    a, b = LINES[0], LINES[1]
    data = b"\n".join([a, LINES[2], a, LINES[7], b, a]) + b"\n"
    assert skim(data) == b"\n".join([LINES[2], LINES[7], a]) + b"\n"
