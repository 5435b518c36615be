"""The tailer on real files: appended, cut mid-line, truncated, replaced, deleted, recreated."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtop.parsers.hygiene import UNSAFE_RE
from runtop.sources.tailer import FileTailer
from tests.inner import examples


def write(path, data: bytes, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)


def test_appended_lines_arrive_once_each(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"one\ntwo\n")
    t = FileTailer(str(p))
    assert t.read().lines == ["one", "two"]
    assert t.read().lines == []
    write(p, b"three\n")
    assert t.read().lines == ["three"]


def test_a_partial_line_is_held_back_until_its_newline(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"14:01:58 SUCCESS Step 1 | 31.0s | Rew")
    t = FileTailer(str(p))
    r = t.read()
    assert r.lines == [] and t.pending
    write(p, b"ard 0.5412\nnext")
    assert t.read().lines == ["14:01:58 SUCCESS Step 1 | 31.0s | Reward 0.5412"]
    write(p, b"\n")
    assert t.read().lines == ["next"]


def test_truncation_restarts_from_the_top(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"old 1\nold 2\nold 3\n")
    t = FileTailer(str(p))
    t.read()
    write(p, b"new 1\n", "wb")  # `> file`: same inode, smaller
    r = t.read()
    assert r.restarted == "truncated" and r.lines == ["new 1"]


def test_replacement_by_a_new_inode_restarts(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"attempt 1 line\n")
    t = FileTailer(str(p))
    t.read()
    tmp = tmp_path / "a.log.new"
    write(tmp, b"attempt 2 line, a longer file than before\nmore\n")
    os.replace(tmp, p)
    r = t.read()
    assert r.restarted == "replaced" and r.lines == ["attempt 2 line, a longer file than before", "more"]


def test_a_repointed_symlink_is_a_replacement(tmp_path):
    for n in (1, 2):
        (tmp_path / f"attempt_{n}").mkdir()
        write(tmp_path / f"attempt_{n}" / "trainer.log", f"attempt {n}\n".encode())
    latest = tmp_path / "latest"
    latest.symlink_to("attempt_1")
    t = FileTailer(str(latest / "trainer.log"))
    assert t.read().lines == ["attempt 1"]
    latest.unlink()
    latest.symlink_to("attempt_2")
    r = t.read()
    assert r.restarted == "replaced" and r.lines == ["attempt 2"]


def test_deleted_then_recreated(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"before\n")
    t = FileTailer(str(p))
    t.read()
    os.unlink(p)
    assert t.read().missing
    write(p, b"after\n")
    r = t.read()
    assert r.restarted == "recreated" and r.lines == ["after"]


def test_a_file_created_after_start(tmp_path):
    p = tmp_path / "later.log"
    t = FileTailer(str(p))
    assert t.read().missing
    write(p, b"hello\n")
    r = t.read()
    assert r.lines == ["hello"] and r.restarted is None


def test_giant_lines_are_capped_and_counted(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"A" * 300_000 + b"\nshort\n" + b"B" * 200_000)
    t = FileTailer(str(p), max_line=1000, chunk_size=4096)
    lines = t.read().lines
    assert lines[0] == "A" * 1000 and lines[1] == "short"
    assert lines[2] == "B" * 1000  # the unfinished giant line is cut now, not held in memory
    write(p, b"B" * 100 + b"\nend\n")
    assert t.read().lines == ["end"]
    assert t.capped == 2


def test_carriage_return_frames_and_colour_codes(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"\rProgress 10%\rProgress 100%\x1b[0m14:00:00    INFO Train batch 1/2\r\n")
    lines = [x for x in FileTailer(str(p)).read().lines if x]
    assert lines == ["Progress 10%", "Progress 100%14:00:00    INFO Train batch 1/2"]


def test_cold_start_reads_the_tail_from_a_line_boundary(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"".join(f"line {i}\n".encode() for i in range(1000)))
    t = FileTailer(str(p))
    t.seek_tail(30)
    lines = t.read().lines
    assert lines[-1] == "line 999" and all(x.startswith("line ") for x in lines) and len(lines) < 5


def test_reads_are_bounded_by_max_bytes(tmp_path):
    p = tmp_path / "a.log"
    write(p, b"x" * 10 + b"\n" + b"y" * 10 + b"\n")
    t = FileTailer(str(p))
    r = t.read(max_bytes=11)
    assert r.lines == ["x" * 10] and not r.eof
    assert t.read().lines == ["y" * 10]


# Pieces of real lines: ASCII, a tqdm bar's blocks, an em dash (prime-rl's warnings), CJK text,
# and what must never reach the screen: C1 controls (U+009B is an 8-bit CSI) and bidi overrides.
_PIECES = ["Step 12 | Reward 0.5", "  50%|█████     | 2/4", " — ", "训练步骤", "\u009b31m", "\u202eevil\u202c", "\u2066x\u2069", "\u200f", "°", "\ufffd"]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), min_size=1, max_size=40))
def test_c1_and_bidi_are_removed_whichever_way_the_chunk_is_cleaned(tmp_path, lines):
    """C1 controls and bidi overrides are removed line by line where few lines are non-ASCII and by one
    regex where most are (the regex over a whole 4 MB chunk was 4 s a GB of SkyRL
    log): either way the lines are those of one regex over the whole decoded chunk."""
    p = tmp_path / "trainer.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = FileTailer(str(p)).read().lines
    assert got == UNSAFE_RE.sub("", "\n".join(lines)).split("\n")
    assert not any(ch in line for line in got for ch in "\u009b\u202e\u2066\u200f")
