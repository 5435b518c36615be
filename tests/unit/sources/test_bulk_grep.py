"""A long stretch of a log is read through a grep child that drops its noise, and
the lines handed on are exactly the ones the Python reading hands on: a record glued before
or behind an access line survives, the newest progress line of a chunk stays in place, a
grep that is missing, not GNU's or dies part-way leaves the bytes to Python and loses nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtop.sources.bulk_grep as bulk_grep
from runtop.engine.reader import RunReader
from runtop.engine.snapshot import RunJudge, read_all
from runtop.frameworks.discovery import discover
from runtop.parsers.skim import ALL_NOISE as BULK_NOISE
from runtop.parsers.skim import BulkNoise, skim
from runtop.sources.tailer import FileTailer
from tests.inner import examples
from tests.unit.parsers.test_skim import LINES

pytestmark = pytest.mark.skipif(bulk_grep.gnu_grep() is None, reason="the bulk pass needs GNU grep")

# vllm-project/vllm#10024: the engine's CRITICAL record glued behind an access line; the same
# interleaving of block-buffered writers can put a record's head before one.
GLUED_BEFORE = b'(EngineCore_0 pid=9) ERROR 11-05 03:07:53 core.py:400 EngineCore hit an exception: CUDA error(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
MORE = [
    GLUED_BEFORE,
    b'(APIServer pid=1) INFO:     127.0.0.1:6 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    b"Processed prompts:  50%|#####     | 4/8 [00:01<00:01]\rProcessed prompts: 100%|##########| 8/8 [00:02<00:00]",
]


def tail_lines(path: str, *, bulk: bool, max_bytes: int | None = None, rule: BulkNoise = BULK_NOISE) -> tuple[list[str], FileTailer]:
    """Every line the tailer hands on, read to the end (through the scan stage with `rule`, or not)."""
    t = FileTailer(path, prefilter=skim, bulk=rule if bulk else None)
    lines: list[str] = []
    while True:
        res = t.read(max_bytes)
        lines += res.lines
        if res.eof:
            return lines, t


@pytest.fixture(autouse=True)
def grep_backend(monkeypatch):
    """These stories are the grep children's (the scan stage's other backends: tests/unit/sources/test_scan.py)."""
    monkeypatch.setenv("RUNTOP_SCAN", "grep")


@pytest.fixture
def bulk_always(monkeypatch):
    monkeypatch.setattr(bulk_grep, "BULK_MIN", 0)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(LINES[:-1] + MORE), max_size=60))
def test_grep_hands_on_the_lines_python_does(tmp_path, bulk_always, picks):
    path = tmp_path / "inference.log"
    path.write_bytes(b"".join(p + b"\n" for p in picks))
    by_grep, t = tail_lines(str(path), bulk=True)
    by_python, _ = tail_lines(str(path), bulk=False)
    assert by_grep == by_python
    assert t.offset == path.stat().st_size


def test_a_record_glued_to_an_access_line_survives_a_week_of_access_lines(tmp_path, bulk_always):
    access = b'(APIServer pid=1) INFO:     127.0.0.1:40001 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    glued_after = b'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OKCRITICAL 11-05 03:07:53 launcher.py:99 MQLLMEngine is already dead\n'
    path = tmp_path / "inference.log"
    path.write_bytes(access * 20000 + GLUED_BEFORE + b"\n" + access * 20000 + glued_after + access * 100)
    lines, t = tail_lines(str(path), bulk=True, max_bytes=256 << 10)
    python, _ = tail_lines(str(path), bulk=False, max_bytes=256 << 10)
    assert lines == python
    # The cleaner splits the glued record off the access line behind it; nothing else is left.
    assert [line for line in lines if "EngineCore hit an exception" in line or "already dead" in line] == [GLUED_BEFORE.decode(), "CRITICAL 11-05 03:07:53 launcher.py:99 MQLLMEngine is already dead"]
    assert len(lines) == 3 and t.offset == path.stat().st_size


def test_the_newest_progress_line_of_each_chunk_stays_in_place(tmp_path, bulk_always):
    """Chunks of 64 KB: each one's newest `Train batch` line, between the step lines around it."""
    out = []
    for i in range(4000):
        out.append(b"14:00:01 INFO Train batch %d/128 (+16 buffered)\n" % (i % 128))
        if i % 500 == 499:
            out.append(b"14:00:02 SUCCESS Step %d | 31.0s | Reward 0.5\n" % (i // 500))
    path = tmp_path / "orchestrator.log"
    path.write_bytes(b"".join(out))
    lines, _ = tail_lines(str(path), bulk=True, max_bytes=64 << 10)
    steps = [line for line in lines if "Step" in line]
    assert steps == [f"14:00:02 SUCCESS Step {k} | 31.0s | Reward 0.5" for k in range(8)]
    assert lines[-1] == "14:00:02 SUCCESS Step 7 | 31.0s | Reward 0.5"  # nothing after it
    progress = [line for line in lines if "Train batch" in line]
    assert 2 <= len(progress) <= len(out) // 50  # one a chunk, not one a line
    # In place: the lines kept are the file's lines in the file's order (a subsequence of it),
    # and the last chunk's newest progress line is the one right before the last step.
    it = iter(line.decode() for line in b"".join(out).split(b"\n"))
    assert all(any(line == o for o in it) for line in lines)
    assert lines[-2] == "14:00:01 INFO Train batch 31/128 (+16 buffered)"  # line 3999's (3999 % 128)


CAP = 64 << 10


@pytest.mark.parametrize(
    "long_line",
    [
        b"y" * (CAP + 5),  # just over the cap: grep hands it on whole
        b"x" * (300 << 10),  # far over it: cut while reading grep's output
        b"ERROR " + b"x" * (300 << 10),  # the rescue grep sees it too (a glue word), and keeps none of it
    ],
    ids=["just-over", "far-over", "seen-by-both-greps"],
)
def test_an_over_long_line_is_cut_and_counted_once_as_python_does(tmp_path, bulk_always, long_line):
    path = tmp_path / "trainer.log"
    path.write_bytes(b"before\n" + long_line + b"\nafter\n")
    by_grep, t = tail_lines(str(path), bulk=True)
    by_python, p = tail_lines(str(path), bulk=False)
    assert by_grep == by_python == ["before", long_line[:CAP].decode(), "after"]
    assert t.capped == p.capped == 1


def _fake_grep(bindir: Path, body: str) -> None:
    bindir.mkdir()
    exe = bindir / "grep"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'grep (GNU grep) 3.8'; exit 0; fi\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    "body",
    [
        "exit 2\n",  # refuses (a bad pattern, a read error)
        'echo "0:half a line"; kill -9 $$\n',  # killed part-way
        'echo "not an offset"\n',  # not GNU's output after all
    ],
    ids=["refuses", "killed-part-way", "odd-output"],
)
def test_a_grep_that_fails_leaves_the_bytes_to_python(tmp_path, bulk_always, monkeypatch, body):
    _fake_grep(tmp_path / "bin", body)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    bulk_grep.gnu_grep.cache_clear()
    try:
        path = tmp_path / "orchestrator.log"
        path.write_bytes(b"14:00:01 INFO Train batch 3/128\n14:00:02 SUCCESS Step 1 | 31.0s\n14:00:03 ERROR boom\n")
        lines, t = tail_lines(str(path), bulk=True)
    finally:
        bulk_grep.gnu_grep.cache_clear()
    assert lines == ["14:00:01 INFO Train batch 3/128", "14:00:02 SUCCESS Step 1 | 31.0s", "14:00:03 ERROR boom"]
    assert t._bulk_off  # and the next stretch is read in Python too


def test_without_gnu_grep_the_bytes_are_read_in_python(tmp_path, bulk_always, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "grep"
    exe.write_text("#!/bin/sh\necho 'grep (BSD grep, GNU compatible) 2.6.0-FreeBSD'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    bulk_grep.gnu_grep.cache_clear()
    try:
        assert bulk_grep.gnu_grep() is None
        path = tmp_path / "orchestrator.log"
        path.write_bytes(b"a\nb\n")
        lines, t = tail_lines(str(path), bulk=True)
    finally:
        bulk_grep.gnu_grep.cache_clear()
    assert lines == ["a", "b"] and t._bulk is None


def test_a_log_replaced_during_the_backfill_starts_over(tmp_path, bulk_always):
    path = tmp_path / "orchestrator.log"
    noise = b"14:00:01 INFO Train batch 1/128 (+16 buffered)\n" * 10
    path.write_bytes(b"".join(b"14:00:01 SUCCESS Step %d | 31.0s\n" % i + noise for i in range(5000)))
    t = FileTailer(str(path), prefilter=skim, bulk=BULK_NOISE)
    first = t.read(16 << 10)
    assert first.lines[0] == "14:00:01 SUCCESS Step 0 | 31.0s" and t._bulk is not None  # still on: mostly noise
    fresh = tmp_path / "new.log"
    fresh.write_bytes(b"14:10:00 SUCCESS Step 0 | 30.0s\n")
    os.replace(fresh, path)  # a relaunch writes a new file under the same name
    res = t.read()
    assert res.restarted == "replaced" and res.lines == ["14:10:00 SUCCESS Step 0 | 30.0s"]



def test_a_live_log_appended_during_the_backfill_loses_and_repeats_nothing(tmp_path, bulk_always):
    """The run goes on writing while its history is read: lines appended past the stretch grep
    was given, and a line half-written when the reads reached it, arrive once each, in order."""
    path = tmp_path / "orchestrator.log"
    noise = b"14:00:01 INFO Train batch 1/128 (+16 buffered)\n" * 10
    path.write_bytes(b"".join(b"14:00:01 SUCCESS Step %d | 31.0s\n" % i + noise for i in range(3000)))
    t = FileTailer(str(path), prefilter=skim, bulk=BULK_NOISE)
    lines = t.read(64 << 10).lines
    assert t._bulk is not None  # part-way through the stretch
    with open(path, "ab") as f:
        f.write(b"14:30:00 SUCCESS Step 3000 | 31.0s\n" + noise + b"14:30:31 SUCCESS Step 30")  # cut mid-write
        f.flush()
        while not (res := t.read(64 << 10)).eof:  # to the end of what is there: the half line held back
            lines += res.lines
        lines += res.lines
        assert t._bulk is None and t.pending
        f.write(b"01 | 31.0s\n14:31:02 WARNING Trace failed in group g1 (env)\n")
    while True:
        res = t.read(64 << 10)
        lines += res.lines
        if res.eof:
            break
    # Every line but the progress noise, once, in order (which progress lines stay, the newest of
    # each read, depends on where the reads fell).
    written = path.read_text().splitlines()
    records = [line for line in lines if "Train batch" not in line]
    assert records == [line for line in written if "Train batch" not in line]
    assert set(lines) - set(records) == {"14:00:01 INFO Train batch 1/128 (+16 buffered)"}
    assert records[-3:] == ["14:30:00 SUCCESS Step 3000 | 31.0s", "14:30:31 SUCCESS Step 3001 | 31.0s", "14:31:02 WARNING Trace failed in group g1 (env)"]
    assert t.offset == path.stat().st_size

def test_the_last_stat_line_counts_when_the_log_ends_in_access_lines(tmp_path):
    """The record held back for its continuation lines is folded at the end even when the
    last chunk was all noise (the newest vLLM stat line was lost this way)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "orchestrator.log").write_text("14:00:01 INFO Train batch 1/8\n")
    stat_line = "(APIServer pid=1) INFO 08-21 14:01:{:02d} [loggers.py:257] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: {} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
    access = '(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    (logs / "inference.log").write_text(stat_line.format(1, 3) + access * 10 + stat_line.format(2, 7) + access * 5000)
    reader = RunReader(discover(str(tmp_path)))
    while True:  # 64 KB a read: the last reads are all access lines
        reader.poll(max_bytes=64 << 10, rescan_every=float("inf"), ckpt_every=float("inf"))
        if reader.done():
            break
    assert reader.state.vllm is not None and reader.state.vllm.running == 7


def test_a_run_read_through_grep_matches_one_read_in_python(tmp_path, monkeypatch):
    """A whole run, big enough for several chunks: the same state either way."""
    from runtop.outputs.report_json import to_json

    logs = tmp_path / "logs"
    logs.mkdir()
    out = []
    for i in range(30000):
        out.append(f"14:{i // 600 % 60:02d}:{i % 60:02d} INFO Train batch {i % 128}/128 (+16 buffered); 3 inflight episodes\n")
        if i % 300 == 0:
            out.append(f"14:{i // 600 % 60:02d}:{i % 60:02d} SUCCESS Step {i // 300} | 31.0s | Reward 0.{i % 97:02d} | Trainable 112/128\n")
        if i % 7001 == 0:
            out.append("14:00:00 WARNING Trace failed in group 1 — ProviderError: Request timed out.\n")
    (logs / "orchestrator.log").write_text("".join(out))

    def state(bulk_min: int) -> dict:
        monkeypatch.setattr(bulk_grep, "BULK_MIN", bulk_min)
        reader = RunReader(discover(str(tmp_path)))
        read_all(reader)
        doc = to_json(reader.state, RunJudge(reader, processes=False, disks=False, gpus=False).verdict())
        doc.pop("generated_at")
        return doc

    by_grep, by_python = state(0), state(1 << 62)
    assert by_grep == by_python
    assert by_grep["progress"]["rollout_step"] == 99


def test_a_log_with_little_noise_goes_back_to_python_after_one_chunk(tmp_path, bulk_always):
    """A SkyRL driver log is records and transcripts, not progress lines: piping every line
    through grep costs more than it saves, so after one chunk the bytes are read here."""
    path = tmp_path / "driver.log"
    path.write_bytes(b"".join(b"(skyrl_entrypoint pid=4101) {'role': 'assistant', 'content': 'step %d'}\n" % i for i in range(20000)))
    t = FileTailer(str(path), prefilter=skim, bulk=BULK_NOISE)
    first = t.read(64 << 10)
    assert t._bulk is None and t._bulk_off
    lines = first.lines
    while True:
        res = t.read(64 << 10)
        lines += res.lines
        if res.eof:
            break
    assert lines == [f"(skyrl_entrypoint pid=4101) {{'role': 'assistant', 'content': 'step {i}'}}" for i in range(20000)]


def test_a_view_closed_during_the_backfill_leaves_no_grep_behind(tmp_path, bulk_always, monkeypatch):
    import time

    import psutil

    import runtop.engine.live as live

    monkeypatch.setattr(live, "BACKFILL_CHUNK", 64 << 10)  # a long backfill, to be closed part-way
    logs = tmp_path / "logs"
    logs.mkdir()
    # A step every 10 lines: what grep keeps is MBs, more than its pipe holds, so a grep nobody
    # reads any more would wait on the pipe for ever.
    block = b"".join(b"14:00:01 INFO Train batch %d/128 (+16 buffered); 3 inflight episodes\n" % (i % 128) for i in range(10))
    with open(logs / "orchestrator.log", "wb") as f:
        f.write(b"".join(block + b"14:00:02 SUCCESS Step %d | 31.0s | Reward 0.5\n" % k for k in range(60000)))
    me = psutil.Process()
    run = live.LiveRun(discover(str(tmp_path)), tail_bytes=1 << 20, processes=False)
    deadline = time.monotonic() + 20
    greps: list[psutil.Process] = []
    while not greps and time.monotonic() < deadline:
        greps = [p for p in me.children() if p.name() == "grep"]
        time.sleep(0.005)
    assert greps, "the backfill never started a grep child"
    run.close()
    run._thread.join(20)
    gone, alive = psutil.wait_procs(greps, timeout=10)
    assert not alive and run._ready is None


def test_the_rescue_grep_hands_python_only_the_blocks_that_can_hold_a_left_out_line(tmp_path):
    """A SkyRL step's own lines hold guard words (`Finished: '…'`, `global_step`, a bar's `%|`), so
    the rescue grep finds each of them again beside the drop grep; a block of its output with no
    drop marker nor hint in it is skipped unread, but for its last line (what keeps each chunk's
    `take` in step with grep), and a transcript with a traceback's words is still found."""
    from runtop.parsers.skim import TRANSCRIPT_NOISE

    step = [
        b"(skyrl_entrypoint pid=4101) 2026-03-02 10:01:01.101 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'",
        b"(skyrl_entrypoint pid=4101) global_step: 1",
        b"(skyrl_entrypoint pid=4101) 2026-03-02 10:01:01.586 | INFO     | skyrl_train.trainer:train:342 - Finished: 'step', time cost: 71.01s",
        b"Training Batches Processed:   1%|          | 1/100 [01:16<?, 71.01s/it]",
    ]
    transcript = b"(skyrl_entrypoint pid=4101) {'role': 'assistant', 'content': 'the answer is 7'}"
    hostile = b"(skyrl_entrypoint pid=4101) {'role': 'tool', 'content': 'Traceback (most recent call last): boom'}"
    steps = 20000  # a few blocks of output (a block is at most PIPE_BUF)
    lines = [line for i in range(steps) for line in ([*step, transcript, hostile] if i == steps // 2 else [*step, transcript])]
    path = tmp_path / "driver.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    st_ = os.stat(path)
    g = bulk_grep.Grep(bulk_grep.gnu_grep() or "grep", str(path), (st_.st_dev, st_.st_ino), 0, TRANSCRIPT_NOISE.rescue_args(), 1 << 20,
                       holding=TRANSCRIPT_NOISE.drop + TRANSCRIPT_NOISE.drop_hint)
    got: list[tuple[int, bytes]] = []
    asked: list[bytes] = []  # what Python was handed, for `rescued` to look at

    def rescued(line: bytes) -> bool:
        asked.append(line)
        return TRANSCRIPT_NOISE.rescued(line)

    try:
        for stop in range(64 << 10, st_.st_size + (64 << 10), 64 << 10):  # chunk by chunk, as the tailer takes them
            assert g.take(stop, got, rescued) == 0
    finally:
        g.close()
    assert [line for _off, line in got] == [hostile]
    assert hostile in asked and len(asked) < steps * len(step) // 4


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_grep_may_write_a_block_ahead_while_the_records_stage_works(tmp_path):
    """grep's output pipe holds a whole block (PIPE_BUF), not 16 pages: grep runs on through the
    next chunk while the reader folds this one, instead of each waiting on the other."""
    import fcntl

    path = tmp_path / "driver.log"
    path.write_bytes(b"x\n" * 1000)
    st_ = os.stat(path)
    g = bulk_grep.Grep(bulk_grep.gnu_grep() or "grep", str(path), (st_.st_dev, st_.st_ino), 0, ["-F", "-e", "x"], 1 << 20)
    try:
        assert fcntl.fcntl(g._out.fileno(), fcntl.F_GETPIPE_SZ) >= bulk_grep.PIPE_BUF
    finally:
        g.close()


# What a guard word may hold: every byte special to a regex, a byte no text decodes, plain letters.
WORD_BYTES = [bytes([b]) for b in b".[]()*+?{}|^$\\-ab \x1b\xff"]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(WORD_BYTES), min_size=1, max_size=4).map(b"".join), min_size=1, max_size=6),
       st.lists(st.lists(st.sampled_from(WORD_BYTES), max_size=12).map(b"".join), max_size=30))
def test_the_rescue_grep_finds_exactly_the_lines_that_hold_a_guard_word(tmp_path_factory, words, lines):
    """A guard word is looked for as the bytes it is, whatever they hold (`.`, `|`, `(`, `}`, `\\`,
    bytes no text decodes): one `-E` alternation finds the lines Python's `in` finds."""
    path = tmp_path_factory.mktemp("rescue") / "log"
    path.write_bytes(b"".join(ln + b"\n" for ln in lines))
    rule = BulkNoise((), (b"drop",), tuple(words))
    st_ = os.stat(path)
    g = bulk_grep.Grep(bulk_grep.gnu_grep() or "grep", str(path), (st_.st_dev, st_.st_ino), 0, rule.rescue_args(), 1 << 20)
    try:
        got: list[tuple[int, bytes]] = []
        assert g.take(path.stat().st_size + 1, got) == 0
    finally:
        g.close()
    assert [ln for _off, ln in got] == [ln for ln in lines if any(w in ln for w in words)]
