"""A long stretch of a log read with its noise dropped in C: a GNU `grep -v` child.

A week-old log is mostly lines runtop keeps one of or none of (progress lines, 2xx access
lines). Splitting a GB into lines in Python to throw them away costs seconds; `grep` drops
them at memory speed and hands on only the rest, each line with its byte offset, so the
tailer can cut the stretch into chunks and put back, in place, the newest progress line of
each chunk (found by reading backwards: it is near the end).

This is only ever a shortcut: what it hands on still goes through the Python filter
(`parsers.skim`), whose own markers grep is given, and where `grep` is
missing, is not GNU's, or fails, the tailer reads the bytes itself. Nothing is lost: a chunk
is taken only once `grep` has written every kept line of it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from bisect import bisect_left
from collections.abc import Callable
from functools import cache
from typing import IO

from runtop.parsers.skim import BulkNoise
from runtop.sources.regular import open_regular

# Below this many unread bytes the Python path is as quick (a child costs a few ms).
BULK_MIN = 32 << 20
# Where grep keeps more than this share of a chunk's bytes, the pipe costs more than it saves.
WORTH_IT = 0.5
# grep's stdout is read in blocks; a line longer than the tailer's cap is cut there.
PIPE_BUF = 1 << 20
# A line of grep's output: its byte offset, a colon, the line (`-b`).
_OFFSET_LINE = re.compile(rb"^(\d+):(.*)$", re.MULTILINE)
# grep holds a whole line in memory: a 3 GB line of NULs (a sparse file) took its RSS to 5 GB on
# the machine that trains. Its address space is capped (it needs 2 MB; lines to about 100 MB
# still pass); past the cap grep fails ("memory exhausted") and the tailer reads those bytes
# itself, a line at most `max_line` long in memory.
GREP_MEMORY = 256 << 20


@cache
def gnu_grep() -> str | None:
    """The path of GNU grep, or None (BSD and busybox greps differ in `-b`; not used)."""
    path = shutil.which("grep")
    if path is None or limited_shell() is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if b"GNU grep" in out else None


def pcre() -> bool:
    """Whether GNU grep here takes `-P` (built with PCRE)."""
    grep = gnu_grep()
    return grep is not None and _takes_pcre(grep)


@cache
def _takes_pcre(grep: str) -> bool:
    try:
        rc = subprocess.run([grep, "-q", "-P", "^(?=a)"], input=b"b\n", capture_output=True, timeout=5, check=False).returncode
    except (OSError, subprocess.SubprocessError):
        return False
    return rc == 1  # no line selected; 2: no `-P` here


@cache
def limited_shell() -> str | None:
    """A POSIX shell that caps a child's memory before it `exec`s it (`ulimit -v`): set in the
    child itself, never in a `preexec_fn` (unsafe beside the reader's threads)."""
    return shutil.which("sh")


def capped(argv: list[str], limit: int = GREP_MEMORY) -> list[str]:
    """`argv` run with its address space capped at `limit` bytes."""
    shell = limited_shell()
    assert shell is not None
    return [shell, "-c", 'ulimit -v "$0" || exit 2; exec "$@"', str(limit >> 10), *argv]


def _widen(pipe: int) -> bool:
    """Let grep write a block of output ahead (Linux: the pipe at PIPE_BUF, 16 pages by default)
    while the records stage works on the last chunk: with 64 KB grep waited on the reader and the
    reader on grep, chunk after chunk (a dense SkyRL driver log, 256 MB: 1.5 s of a backfill
    spent waiting on its rescue grep). False where the pipe keeps its size (not Linux, or the
    user's pipe pages are spent): grep runs as before, a pipe's worth ahead."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is None:
        return False
    try:
        fcntl.fcntl(pipe, setsize, PIPE_BUF)
    except OSError:
        return False
    return True


class Grep:
    """One grep child over the file from `origin`, its `OFFSET:line` output read in order."""

    def __init__(self, grep: str, path: str, ident: tuple[int, int], origin: int, args: list[str], max_line: int,
                 then: list[str] | None = None, holding: tuple[bytes, ...] = ()) -> None:
        """`then`: a second grep's arguments, run over the first's `OFFSET:line` output (in a pipe,
        on another core). `holding`: words every line the caller keeps holds; a block of output
        with none of them is handed on as its last line alone, which keeps `take` in step with
        grep (the rescue grep's lines are kept only with a drop marker or hint; a SkyRL step's own
        lines hold guard words and came to Python twice, 196k of them in a dense 256 MB log). A
        pipe with a second grep that picks them would wait for the file's end when none comes."""
        self.origin, self.max_line, self.holding = origin, max_line, holding
        self.bad = False  # grep wrote a line that is not `OFFSET:text`
        # Lines read but not yet taken: their offsets (ascending), texts, and which were cut.
        self._offs: list[int] = []
        self._lines: list[bytes] = []
        self._cut: set[int] = set()
        self._i = 0
        self._rest = b""  # the start of a line whose end has not come yet
        self._skipping = False  # inside a line longer than the cap, its head handed on
        self._eof = False
        fd = open_regular(path)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != ident:
                raise OSError("the file was replaced")
            os.lseek(fd, origin, os.SEEK_SET)  # grep reads its stdin from here
            env = dict(os.environ, LC_ALL="C")
            env.pop("GREP_OPTIONS", None)
            self.procs = [subprocess.Popen(capped([grep, "-a", "-b", "--color=never", *args]), stdin=fd, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, env=env, bufsize=PIPE_BUF)]
            if then is not None:
                first = self.procs[0].stdout
                try:
                    self.procs.append(subprocess.Popen(capped([grep, "-a", "--color=never", *then]), stdin=first, stdout=subprocess.PIPE,
                                                       stderr=subprocess.DEVNULL, env=env, bufsize=PIPE_BUF))
                except OSError:
                    self.close()
                    raise
                finally:
                    assert first is not None
                    first.close()  # the second reads it
            self.proc = self.procs[-1]
        finally:
            os.close(fd)
        self._out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        _widen(self._out.fileno())

    def take(self, stop: int, into: list[tuple[int, bytes]], keep: Callable[[bytes], bool] | None = None) -> int | None:
        """Append the lines that start before `stop` (those `keep` takes); how many of them were
        cut at the tailer's cap, or None when grep failed."""
        cut = 0
        while True:
            offs, i = self._offs, self._i
            if i >= len(offs):
                if not self._fill():
                    return None if self._failed() else cut
                continue
            j = bisect_left(offs, stop, i)
            if j > i:
                batch = list(zip(offs[i:j], self._lines[i:j]))
                self._i = j
                if keep is not None:
                    batch = [item for item in batch if keep(item[1])]
                into.extend(batch)
                if self._cut:
                    cut += sum(1 for off, _line in batch if off in self._cut)
            if j < len(offs):
                return cut  # the next line starts at or past `stop`

    def _fill(self) -> bool:
        """Read grep's output a block at a time into whole lines (offsets and texts); False at
        its end, or at a line that is not `OFFSET:text` (`bad`)."""
        self._offs, self._lines, self._i = [], [], 0
        self._cut.clear()
        limit = self.max_line + 24  # `OFFSET:` and a cap's worth of line: longer is cut
        while not self._eof and not self._offs:
            data = os.read(self._out.fileno(), PIPE_BUF)
            if not data:
                self._eof = True
                if self._rest and not self._skipping:
                    self._parse([self._rest], limit, last_unended=True)  # cut short at the end
                self._rest = b""
                break
            buf = self._rest + data if self._rest else data
            self._rest = b""
            if self._skipping:
                # Inside a line longer than the cap: its head was handed on, the rest is skipped.
                nl = buf.find(b"\n")
                if nl < 0:
                    continue
                buf, self._skipping = buf[nl + 1 :], False
            last = buf.rfind(b"\n")
            if last >= 0:
                self._parse_block(buf[:last], limit)
                buf = buf[last + 1 :]
            if len(buf) >= limit and not self.bad:
                self._parse([buf], limit, last_unended=True)  # its head now, the rest skipped
                self._skipping = True
            else:
                self._rest = buf
        return bool(self._offs)

    def _parse_block(self, body: bytes, limit: int) -> None:
        """Whole lines, joined: one pattern pass where every line is `OFFSET:text` under the cap
        (a week-old log hands on millions), else line by line."""
        if self.bad:
            return
        if self.holding and not any(w in body for w in self.holding):
            body = body[body.rfind(b"\n") + 1 :]  # no line of it is kept: the last keeps the offsets moving
        pairs = _OFFSET_LINE.findall(body)
        offs = [o for o, _t in pairs]
        lines = [t for _o, t in pairs]
        # The longest offset and the longest line, over the cap together: line by line (no line
        # is longer than the two, and a rare long line costs only the slower way, never a miss).
        if len(pairs) != body.count(b"\n") + 1 or max(map(len, offs)) + max(map(len, lines)) + 1 >= limit:
            self._parse(body.split(b"\n"), limit)
            return
        origin = self.origin
        self._offs.extend([origin + int(o) for o in offs])
        self._lines.extend(lines)

    def _parse(self, raws: list[bytes], limit: int, last_unended: bool = False) -> None:
        if self.bad:
            return
        offs, lines = self._offs, self._lines
        for k, raw in enumerate(raws):
            colon = raw.find(b":")
            if colon <= 0 or not raw[:colon].isdigit():
                self._eof = self.bad = True
                return
            off = self.origin + int(raw[:colon])
            if len(raw) >= limit or (last_unended and k == len(raws) - 1):
                # Longer than the cap (or cut short at the end): its head, as the tailer keeps. A
                # line that came whole is cut (and counted) where Python's lines are, in `_emit`.
                lines.append(raw[colon + 1 : colon + 1 + self.max_line])
                self._cut.add(off)
            else:
                lines.append(raw[colon + 1 :])
            offs.append(off)

    def _failed(self) -> bool:
        if self.bad:
            return True
        try:
            codes = [proc.wait(timeout=30) for proc in self.procs]
        except subprocess.TimeoutExpired:
            return True
        return any(rc not in (0, 1) for rc in codes)  # 1: no line selected

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if proc.stdout is not None:
                proc.stdout.close()


class BulkGrep:
    """[start, end) of one file through `grep -v` (and the rescue grep beside it, on another
    core, and for a rule with shapes, the stray grep of lines that hold a hint but no shape); `take(stop)` hands the kept lines that start before `stop`, as (offset, line
    without its newline), in order."""

    def __init__(self, path: str, ident: tuple[int, int], start: int, end: int, noise: BulkNoise, max_line: int) -> None:
        self.ident, self.pos, self.end = ident, start, end
        self._noise = noise
        grep = gnu_grep()
        if grep is None:
            raise OSError("no GNU grep")
        self._greps = [Grep(grep, path, ident, start, noise.drop_args(), max_line)]
        self._keeps: list[Callable[[bytes], bool] | None] = [None]
        try:
            rescue = noise.rescue_args()
            if rescue:
                self._greps.append(Grep(grep, path, ident, start, rescue, max_line, holding=noise.drop + noise.drop_hint))
                self._keeps.append(noise.rescued)
            stray = noise.stray_args()
            if stray:
                self._greps.append(Grep(grep, path, ident, start, stray, max_line))
                self._keeps.append(noise.keeps)
        except OSError:
            self.close()
            raise

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None:
        """The kept lines of [pos, stop) and how many were cut at the cap; None when a grep
        failed (the caller reads the bytes)."""
        got: list[tuple[int, bytes]] = []
        cut = 0
        for g, keep in zip(self._greps, self._keeps):
            n = g.take(stop, got, keep)
            if n is None:
                return None
            cut += n
        if len(self._greps) > 1:
            got.sort()  # the rescued lines go back in place (the drop grep's hold no drop marker or hint)
            if len(self._greps) > 2:
                # A line both the rescue and the stray grep found (a glue word, and a hint no shape matches): once.
                got = [item for i, item in enumerate(got) if i == 0 or item[0] != got[i - 1][0]]
        self.pos = stop
        return self._noise.gate(got), cut

    def close(self) -> None:
        for g in self._greps:
            g.close()


def newest_line(fd: int, lo: int, hi: int, marker: bytes) -> tuple[int, bytes] | None:
    """The last line of [lo, hi) (whole lines) that holds `marker`: read backwards in blocks
    that grow from 64 KB to 1 MB, so a progress line near the end costs one small read."""
    pos, block = hi, 1 << 16
    while pos > lo:
        start = max(lo, pos - block)
        buf = os.pread(fd, pos - start, start)
        i = buf.rfind(marker)
        if i >= 0:
            at = start + i
            first = line_start(fd, lo, at)
            nl = buf.find(b"\n", i)
            stop = start + nl if nl >= 0 else line_end(fd, start + len(buf), hi)
            return first, os.pread(fd, stop - first, first)
        if start == lo:
            return None
        pos = start + len(marker) - 1  # a marker across the block's edge is found in the next
        block = min(block * 2, 1 << 20)
    return None


def line_start(fd: int, lo: int, at: int) -> int:
    """The offset of the line that holds `at` (`lo` when it starts before)."""
    pos = at
    while pos > lo:
        start = max(lo, pos - 65536)
        buf = os.pread(fd, pos - start, start)
        i = buf.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return lo


def line_end(fd: int, at: int, hi: int) -> int:
    """The offset of the first newline at or after `at` (`hi` when none before it)."""
    pos = at
    while pos < hi:
        buf = os.pread(fd, min(65536, hi - pos), pos)
        i = buf.find(b"\n")
        if i >= 0:
            return pos + i
        pos += len(buf)
    return hi


def last_line_end(fd: int, lo: int, hi: int) -> int:
    """The offset just after the last newline in [lo, hi) (`lo` when none)."""
    start = max(lo, hi - 65536)
    while True:
        buf = os.pread(fd, hi - start, start)
        i = buf.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        if start == lo:
            return lo
        hi, start = start, max(lo, start - 65536)
