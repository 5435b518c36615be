"""grep leaves a noisy orchestrator's chatter out itself, and puts back the headers `gate` keeps:
the lines handed on, chunk by chunk, are the Python reference's (`BulkNoise.keeps`, then `gate`
over each chunk) on any mix of the log's lines."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtop.sources.bulk_grep as bulk_grep
import runtop.sources.grep_gate as grep_gate
import runtop.sources.scan as scan
from runtop.parsers.skim import ORCHESTRATOR_NOISE
from runtop.sources.grep_gate import GatedGrep
from tests.inner import examples
from tests.unit.sources.test_bulk_grep import tail_lines

pytestmark = pytest.mark.skipif(not bulk_grep.pcre(), reason="no GNU grep with -P here")

ESC = "\x1b"
T = f"{ESC}[2m14:00:01{ESC}[0m"


def info(msg: str, level: str = "   INFO") -> str:
    return f"{T} {ESC}[1m{level}{ESC}[0m {ESC}[1m{ESC}[22m{msg}{ESC}[0m{ESC}[0m"


BAR = "\rRollouts (step 3):   4%|▍         | 7/170 [00:01<00:27,  6.02it/s]\rRollouts (step 3):   5%|▍         | 8/170 [00:01<00:27,  6.02it/s]"
# Every kind of line a prime-rl orchestrator writes between two steps, and the hostile ones: the
# guard words of an end or a death (one across the colour code before the message), a frame or a
# record glued in, lines under a record, a traceback, plain (uncoloured) loguru lines.
KINDS = [
    info("Dispatched 17 requests to the inference pool (101 in flight)"),
    info("Sampled 19 examples from env reverse-text (epoch 10, 103 left)"),
    info("Received 18 rollouts for group 00000000001f from env reverse-text (reward 0.0042, 131 tokens)"),
    info("Train batch 122/128 (95.3%) (+16 buffered); 116 inflight episodes (train=116, eval=0)"),
    info("Step 3 |   31.0s | Reward 0.5 | Turns 1.0", f"{ESC}[32m{ESC}[1mSUCCESS"),
    info("Trace failed in group 0000000000001834 (reverse-text)", f"{ESC}[33m{ESC}[1mWARNING"),
    info("Starting orchestrator with max_steps=40"),
    info("the evaluation is done"),
    info("emory pressure on the buffer"),
    info("waiting on CUDA graphs"),
    info("eval 40%| frame glued in"),
    "14:00:02    INFO Sampled 16 examples from env reverse-text",
    "14:00:02    INFO Train batch 5/128 (3.9%)",
    "14:00:02 SUCCESS Step 4 |   30.0s | Reward 0.5",
    BAR,
    BAR + "14:00:02    INFO Saving checkpoint",
    BAR + " ERROR in the env",
    "Rollouts (step 4):  50%|█████     | 85/170",
    "    a line of its own under the record before it",
    "Traceback (most recent call last):",
    '  File "orchestrator.py", line 12, in run',
    "RuntimeError: the env died",
    "",
]
# Bytes no text decodes: a CRLF record, a NUL, bytes that are not UTF-8, a non-ASCII message.
RAW = [info("Dispatched 17 requests\r").encode(), b"\xff\xfe\x00 junk under a record", info("Sampled 19 ex\u00e1mples").encode(),
       "\r".encode() + info("Buffer holds 112 samples").encode()]


def reference(data: bytes, stops: list[int]) -> list[list[tuple[int, bytes]]]:
    """The Python reference: each chunk's lines that `keeps` keeps, through `gate`."""
    out, pos, chunk = [], 0, []
    ends = iter(stops)
    stop = next(ends)
    for line in data.split(b"\n")[:-1]:
        while pos >= stop:
            out.append(ORCHESTRATOR_NOISE.gate(chunk))
            chunk, stop = [], next(ends)
        if ORCHESTRATOR_NOISE.keeps(line):
            chunk.append((pos, line))
        pos += len(line) + 1
    out.append(ORCHESTRATOR_NOISE.gate(chunk))
    return out + [[] for _ in ends]


def through_grep(path: str, stops: list[int]) -> list[list[tuple[int, bytes]]]:
    st_ = os.stat(path)
    s = scan.open_scan("grep", path, (st_.st_dev, st_.st_ino), 0, st_.st_size, ORCHESTRATOR_NOISE, 64 * 1024)
    assert isinstance(s, GatedGrep)
    try:
        out = []
        for stop in stops:
            taken = s.take(stop)
            assert taken is not None and taken[1] == 0
            out.append(taken[0])
        return out
    finally:
        s.close()


def line_ends(picks: list[bytes], at: list[int]) -> list[int]:
    """Chunk stops after the lines numbered `at` (and the last line)."""
    ends, pos = [], 0
    for line in picks:
        pos += len(line) + 1
        ends.append(pos)
    return sorted({ends[i] for i in at if i < len(ends)} | {ends[-1]})


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.sampled_from([k.encode() for k in KINDS] + RAW), min_size=1, max_size=60), at=st.lists(st.integers(0, 60), max_size=6))
def test_grep_leaves_out_the_chatter_gate_leaves_out_chunk_by_chunk(tmp_path, picks, at):
    data = b"".join(p + b"\n" for p in picks)
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    stops = line_ends(picks, at)
    assert through_grep(str(path), stops) == reference(data, stops)


def test_a_header_goes_only_where_the_next_line_asked_about_starts_a_record(tmp_path):
    """A header before a progress line and a line under a record is the record's (the progress
    line is not asked about): kept; one before a progress line and a step goes; a chunk's first
    and last lines are kept whatever they are."""
    quiet, batch, below, step = (KINDS[0].encode(), KINDS[3].encode(), KINDS[18].encode(), KINDS[4].encode())
    lines = [quiet, quiet, step, quiet, batch, below, quiet, batch, BAR.encode(), step, quiet, quiet]
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    stops = [len(data)]
    got = [line for _off, line in through_grep(str(path), stops)[0]]
    assert got == [quiet, step, quiet, below, step, quiet]
    assert through_grep(str(path), stops) == reference(data, stops)


def test_lines_past_the_cap_are_judged_whole_and_handed_on_as_their_heads(tmp_path):
    """An env's bar longer than the cap with a record glued at its end is kept (its guard word is
    in it, as the in-process scan sees it whole), and a chunk's first line, a header past the cap,
    is put back: both as grep hands a long line, its head, counted as cut."""
    long_bar = ("\rRollouts (step 9):  50%|█████     | 85/170" * 1300 + "14:00:02    INFO Saving checkpoint").encode()
    long_quiet = info("Dispatched " + "x" * 70000).encode()
    step, quiet = KINDS[4].encode(), KINDS[0].encode()
    lines = [long_quiet, quiet, step, long_bar, quiet, step]
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    st_ = os.stat(path)
    s = scan.open_scan("grep", str(path), (st_.st_dev, st_.st_ino), 0, st_.st_size, ORCHESTRATOR_NOISE, 64 * 1024)
    try:
        taken = s.take(st_.st_size)
    finally:
        s.close()
    assert taken is not None
    kept, cut = taken
    assert [line for _off, line in kept] == [long_quiet[: 64 * 1024], step, long_bar[: 64 * 1024], step]
    assert cut == 2
    assert [off for off, _line in kept] == [0, data.index(step), data.index(long_bar[:100]), data.rindex(step)]


@pytest.mark.parametrize(
    "body",
    [
        'case "$*" in *"-v -P"*) exit 2;; esac\n',  # the second grep refuses its pattern
        'case "$*" in *"-v -F"*) echo "0:half a line"; kill -9 $$;; esac\n',  # the first is killed part-way
    ],
    ids=["second-refuses", "first-killed"],
)
def test_a_gated_grep_that_fails_leaves_the_bytes_to_python(tmp_path, monkeypatch, body):
    """Either grep of the pipe failing is grep failing: the tailer reads the stretch in Python."""
    real = bulk_grep.gnu_grep()
    assert real is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "grep"
    exe.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'grep (GNU grep) 3.8'; exit 0; fi\n{body}exec {real} \"$@\"\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RUNTOP_SCAN", "grep")
    monkeypatch.setattr(bulk_grep, "BULK_MIN", 0)
    lines = [KINDS[0], KINDS[3], KINDS[4], KINDS[0], KINDS[19]]
    path = tmp_path / "orchestrator.log"
    path.write_text("".join(line + "\n" for line in lines))
    bulk_grep.gnu_grep.cache_clear()
    try:
        assert bulk_grep.pcre()
        got, t = tail_lines(str(path), bulk=True, rule=ORCHESTRATOR_NOISE)
    finally:
        bulk_grep.gnu_grep.cache_clear()
    assert t._bulk_off  # grep failed: the rest is Python's too
    assert got == tail_lines(str(path), bulk=False)[0]


def test_without_pcre_the_orchestrator_s_rule_goes_through_the_drop_grep_and_gate(tmp_path, monkeypatch):
    """A GNU grep built without PCRE: the drop grep's lines, through `gate` in Python."""
    data = b"".join(k.encode() + b"\n" for k in KINDS)
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    st_ = os.stat(path)
    monkeypatch.setattr(bulk_grep, "pcre", lambda: False)
    s = scan.open_scan("grep", str(path), (st_.st_dev, st_.st_ino), 0, st_.st_size, ORCHESTRATOR_NOISE, 64 * 1024)
    try:
        assert isinstance(s, bulk_grep.BulkGrep)
        taken = s.take(st_.st_size)
    finally:
        s.close()
    assert taken is not None and [taken[0]] == reference(data, [len(data)])


SGR = st.sampled_from(["", "\x1b[2m", "\x1b[0m", "\x1b[1;32m\x1b[22m", "\x1b["])
# A loguru line's slots, each drawn near and off its shape.
LOGURU = st.tuples(SGR, st.sampled_from(["14:00:01", "1:00:01", "14:00:0x", ""]), SGR, st.sampled_from([" ", "\t", "", "   "]), SGR,
                   st.sampled_from(["", " ", "  "]), st.sampled_from(["INFO", "INFOS", "SUCCESS", "WARNING", "info"]), SGR,
                   st.sampled_from([" ", "", "\t"]), SGR, st.sampled_from(["Dispatched 17", "Step 3", "Train batch 2", "", "\r", "ended"]))


@settings(max_examples=examples(300), deadline=None)
@given(LOGURU)
def test_every_gated_header_starts_a_record_itself(pieces):
    """What lets grep's gate look at one next line: a line a gated shape matches starts a record."""
    line = "".join(pieces).encode()
    if any(re.match(g, line) for g in ORCHESTRATOR_NOISE.gated):
        assert ORCHESTRATOR_NOISE.starts_record().match(line)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.sampled_from([k.encode() for k in KINDS] + RAW), min_size=1, max_size=60), at=st.lists(st.integers(0, 60), max_size=6),
       block=st.integers(1, 300))
def test_the_lines_put_back_are_found_whatever_block_they_are_read_in(tmp_path, monkeypatch, picks, at, block):
    """The lines beside what grep left out are read back a block at a time, forwards and
    backwards: blocks that cut lines anywhere (and lines longer than a block) find the same."""
    monkeypatch.setattr(grep_gate, "BLOCK", block)
    data = b"".join(p + b"\n" for p in picks)
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    stops = line_ends(picks, at)
    assert through_grep(str(path), stops) == reference(data, stops)
