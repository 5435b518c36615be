"""Follow without loss: numbered lines written through each rotation and
replacement a real run's logs go through; every complete line is seen exactly once,
except bytes deleted before any read could see them."""

from __future__ import annotations

import os
import shutil

from runtop.sources.tailer import FileTailer


def numbered(a: int, b: int) -> bytes:
    return b"".join(b"line %06d\n" % i for i in range(a, b + 1))


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


class Seen:
    """Every line a tailer handed on, drained ones included, in order."""

    def __init__(self, tailer: FileTailer) -> None:
        self.tailer = tailer
        self.lines: list[str] = []
        self.restarts: list[str] = []

    def read(self) -> None:
        r = self.tailer.read()
        self.lines += r.drained + r.lines
        if r.restarted:
            self.restarts.append(r.restarted)

    def numbers(self) -> list[int]:
        return [int(x.split()[1]) for x in self.lines if x.startswith("line ")]


def assert_once(seen: Seen, expected: range) -> None:
    nums = seen.numbers()
    assert sorted(nums) == list(expected), f"missing {sorted(set(expected) - set(nums))[:5]}, twice {[n for n in set(nums) if nums.count(n) > 1][:5]}"


def test_copytruncate_racing_the_poll_loses_and_garbles_nothing(tmp_path):
    """logrotate copies the log, truncates it, and the writer writes more than we had read
    before our next poll: the file is longer than our offset again."""
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 100))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    append(p, numbered(101, 150))  # written, not yet read
    shutil.copyfile(p, tmp_path / "trainer.log.1")
    with open(p, "r+b") as f:
        f.truncate(0)
    append(p, numbered(151, 400))
    seen.read()
    assert_once(seen, range(1, 401))
    assert seen.restarts == ["rotated"]


def test_rename_rotation_reads_the_unread_rest_of_the_old_file_first(tmp_path):
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 100))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    append(p, numbered(101, 134))
    os.rename(p, tmp_path / "trainer.log.1")
    append(p, numbered(135, 200))
    seen.read()
    assert seen.numbers() == list(range(1, 201)), "the old file's rest comes before the new file"
    assert seen.restarts == ["rotated"]


def test_a_writer_still_appending_to_the_renamed_file(tmp_path):
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 50))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    old = tmp_path / "trainer.log.1"
    os.rename(p, old)
    seen.read()  # renamed away, nothing new yet: missing, and the old file is followed
    append(old, numbered(51, 60))  # the writer has not reopened its log
    append(old, b"line 0000")  # … and stops mid-line
    seen.read()
    append(old, b"61\n")
    append(p, numbered(62, 70))  # it reopens: the new file
    seen.read()
    append(old, numbered(71, 75))  # one more late line to the old file
    append(p, numbered(76, 80))
    seen.read()
    assert_once(seen, range(1, 81))


def test_a_file_replaced_by_old_plus_new_is_a_continuation(tmp_path):
    """An editor or a sync tool writes the file anew (a new inode) with the old lines kept."""
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 55))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    tmp = tmp_path / "trainer.log.tmp~"
    tmp.write_bytes(p.read_bytes() + numbered(56, 80))
    os.replace(tmp, p)
    seen.read()
    assert_once(seen, range(1, 81))
    assert seen.restarts == []


def test_a_replaced_file_with_other_content_still_starts_over(tmp_path):
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 10))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    tmp = tmp_path / "new"
    tmp.write_bytes(b"attempt 2\n" + numbered(1, 3))
    os.replace(tmp, p)
    seen.read()
    assert seen.restarts == ["replaced"] and seen.lines[-4:] == ["attempt 2", "line 000001", "line 000002", "line 000003"]


def test_truncated_in_place_without_a_copy_is_a_new_file(tmp_path):
    p = tmp_path / "trainer.log"
    append(p, numbered(1, 10))
    seen = Seen(FileTailer(str(p)))
    seen.read()
    p.write_bytes(b"relaunched\n" + numbered(500, 600))  # `>` then more than we had read
    seen.read()
    assert seen.restarts == ["truncated"] and seen.lines[10] == "relaunched" and seen.numbers()[10:] == list(range(500, 601))


def test_logs_latest_repointed_within_one_poll_reads_the_old_attempts_tail(tmp_path):
    """prime-rl relaunches: attempt 1's OOM traceback and `logs/latest` → attempt_2 land
    between two polls. The traceback is read (into attempt 1) before attempt 2 begins."""
    from runtop.engine.reader import RunReader
    from runtop.frameworks.discovery import discover

    root = tmp_path / "run"
    a1 = root / "logs" / "attempt_1"
    a1.mkdir(parents=True)
    for role in ("orchestrator", "trainer"):
        append(a1 / f"{role}.log", b"14:00:00    INFO Starting\n")
    os.symlink("attempt_1", root / "logs" / "latest")
    reader = RunReader(discover(str(root)))
    reader.poll(rescan_every=0.0)
    append(a1 / "trainer.log", b"14:00:01 SUCCESS Step 1 |  1m 18s | Loss 0.0031 | Entropy 0.4127\n")
    append(a1 / "trainer.log", b"14:05:20   ERROR Fatal error in train\nTraceback (most recent call last):\n  File \"train.py\", line 1, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    a2 = root / "logs" / "attempt_2"
    a2.mkdir()
    for role in ("orchestrator", "trainer"):
        append(a2 / f"{role}.log", b"14:06:00    INFO Starting again\n")
    os.unlink(root / "logs" / "latest")
    os.symlink("attempt_2", root / "logs" / "latest")
    reader.poll(rescan_every=0.0)
    s = reader.state
    assert s.attempt == 2
    oom = [e for e in s.errors if e.kind == "torch.OutOfMemoryError"]
    assert oom and "attempt_1" in oom[0].source
    assert s.steps[1].value("loss") == 0.0031 and s.steps[1].attempt == 1


def test_a_rewritten_log_is_not_a_new_attempt(tmp_path):
    from runtop.engine.reader import RunReader
    from runtop.frameworks.discovery import discover

    root = tmp_path / "run"
    logs = root / "logs"
    logs.mkdir(parents=True)
    p = logs / "trainer.log"
    body = b"".join(b"14:00:%02d SUCCESS Step %d |  1m 18s | Loss 0.5 | Entropy 0.4\n" % (i, i) for i in range(1, 40))
    append(p, body)
    append(logs / "orchestrator.log", b"14:00:00    INFO Starting\n")
    reader = RunReader(discover(str(root)))
    reader.poll(rescan_every=0.0)
    tmp = logs / "trainer.log.swp"
    tmp.write_bytes(body + b"14:00:50 SUCCESS Step 40 |  1m 18s | Loss 0.25 | Entropy 0.4\n")
    os.replace(tmp, p)
    reader.poll(rescan_every=0.0)
    assert reader.state.attempt == 1 and sorted(reader.state.steps) == list(range(1, 41))
