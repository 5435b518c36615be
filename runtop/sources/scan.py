"""The scan stage: a long stretch of a log narrowed to the lines a plug-in's keep rule keeps,
each with its byte offset, before any of them becomes a `str` (docs/reading.md, "The scan stage").

Backends (`RUNTOP_SCAN` names one; `off` reads every line in Python; else `backend` picks):
- `hyperscan`: Intel's Hyperscan (the maintained Vectorscan build), the extra `runtop-rl[fast]`:
  every pattern of the rule in one pass over the bytes, in this process;
- `grep`: GNU grep children (`bulk_grep`), for a stretch of 32 MB and more;
- `re`: Python alone, the reference the others are held to: one `split` and C-level `in` tests
  and `match` calls over each window, the guard words looked for once over all the lines left out.

Every backend hands on exactly the lines `BulkNoise.keeps` keeps; the tailer puts each chunk's
newest latest-wins line back in place (`FileTailer._bulk_read`), whichever backend ran. A window
is read with `pread` (the page cache holds the bytes, this process holds one window), and a line
longer than a window is judged by its head, as the tailer judges one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

from runtop.parsers.skim import BulkNoise
from runtop.sources import bulk_grep

BACKENDS = ("hyperscan", "grep", "re", "off")
# An in-process scan has no child to start: worth it from a few MB on (the bounded first status
# reads 8 MB of each long log).
INPROC_MIN = 2 << 20
WINDOW = 8 << 20


class Scan(Protocol):
    ident: tuple[int, int]
    pos: int
    end: int

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None: ...

    def close(self) -> None: ...


@cache
def _hyperscan() -> Any:
    try:
        import hyperscan
    except ImportError:
        return None
    return hyperscan


def backend(rule: BulkNoise | None = None, stretch: int | None = None) -> str:
    """The backend for a log of this rule: `RUNTOP_SCAN`, else the quickest one installed here
    for its kind of noise (measured: docs/reading.md, "The scan stage"). Hyperscan hands each hit
    to Python, so it wins where grep's one `-F` pass cannot say it all: shapes (an agent's
    transcripts) and their many guard words. Fixed markers on nearly every line (progress, access
    lines) are GNU grep's: its children hand on only the kept lines, with no call per line."""
    want = os.environ.get("RUNTOP_SCAN", "").strip().lower()
    hs, grep = _hyperscan() is not None, bulk_grep.gnu_grep() is not None
    if want in BACKENDS and (want != "hyperscan" or hs) and (want != "grep" or grep):
        return want
    short = stretch is not None and stretch < bulk_grep.BULK_MIN
    if hs and (not grep or short or (rule is not None and rule.drop_re)):
        return "hyperscan"
    return "grep" if grep else "re"


def min_stretch(name: str) -> int:
    """Below this many unread bytes a stretch is read line by line in Python."""
    return bulk_grep.BULK_MIN if name == "grep" else min(INPROC_MIN, bulk_grep.BULK_MIN)


def open_scan(name: str, path: str, ident: tuple[int, int], start: int, end: int, rule: BulkNoise, max_line: int) -> Scan:
    if name == "grep":
        return bulk_grep.BulkGrep(path, ident, start, end, rule, max_line)
    finder = HyperscanFinder(rule) if name == "hyperscan" else PythonFinder(rule)
    return InProcessScan(path, ident, start, end, max_line, finder)


Finder = Callable[[bytes], list[tuple[int, bytes]]]


class InProcessScan:
    """[start, end) of one file, window by window, through a finder: `take(stop)` hands the kept
    lines that start before `stop` as (offset, line without its newline), as `BulkGrep` does."""

    def __init__(self, path: str, ident: tuple[int, int], start: int, end: int, max_line: int, finder: Finder) -> None:
        self.ident, self.pos, self.end, self.max_line = ident, start, end, max_line
        self._find = finder
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(self._fd)
        if (st.st_dev, st.st_ino) != ident:
            os.close(self._fd)
            raise OSError("the file was replaced")

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None:
        got: list[tuple[int, bytes]] = []
        cut = 0
        cap = self.max_line
        while self.pos < stop:
            base = self.pos
            buf = os.pread(self._fd, min(WINDOW, stop - base), base)
            if not buf:
                return None  # the file shrank under us: the tailer reads on in Python
            nl = buf.rfind(b"\n")
            if nl < 0:
                # A line longer than a window: judged by its head, and skipped to its end.
                after = bulk_grep.line_end(self._fd, base + len(buf), stop)
                for _off, line in self._find(buf[:cap] + b"\n"):
                    got.append((base, line))
                    cut += 1
                self.pos = min(after + 1, stop)
                continue
            if nl + 1 < len(buf):
                buf = buf[: nl + 1]
            for off, line in self._find(buf):
                if len(line) > cap:
                    line, cut = line[:cap], cut + 1
                got.append((base + off, line))
            self.pos = base + len(buf)
        return got, cut

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _with_offsets(buf: bytes, kept: list[bytes]) -> list[tuple[int, bytes]]:
    """Each kept line's offset in `buf`, found forward from the last (C speed: few lines are kept)."""
    out = []
    pos = 0
    for line in kept:
        at = buf.find(line, pos)
        # A kept line's text may also stand inside an earlier line: its own starts a line.
        while at > 0 and buf[at - 1] != 0x0A or buf[at + len(line) : at + len(line) + 1] != b"\n":
            at = buf.find(line, at + 1)
        out.append((at, line))
        pos = at + len(line) + 1
    return out


class PythonFinder:
    """The reference: the rule's tests over a window's lines, each a C-level pass."""

    def __init__(self, rule: BulkNoise) -> None:
        self.rule = rule
        self._patterns = rule.drop_patterns()

    def __call__(self, buf: bytes) -> list[tuple[int, bytes]]:
        rule = self.rule
        lines = buf.split(b"\n")
        lines.pop()  # whole lines: the last piece is empty
        for m in rule.latest_wins:
            if m in buf:
                lines = [ln for ln in lines if m not in ln]
        for m in rule.drop:
            if m in buf:
                lines = self._drop(lines, lambda ln, m=m: m in ln)  # type: ignore[misc]
        for r in self._patterns:
            lines = self._drop(lines, r.match)
        return _with_offsets(buf, lines)

    def _drop(self, lines: list[bytes], hit: Callable[[bytes], object]) -> list[bytes]:
        dropped = [ln for ln in lines if hit(ln)]
        if not dropped:
            return lines
        # The guard words, looked for once over everything left out: a line is kept back only
        # where one of them is there at all.
        blob = b"\n".join(dropped)
        words = [w for w in self.rule.glue if w in blob]
        if not words:
            return [ln for ln in lines if not hit(ln)]
        return [ln for ln in lines if not hit(ln) or any(w in ln for w in words)]


# Hyperscan pattern ids: which part of the rule a hit is.
_LATEST, _DROP, _GLUE = 0, 1, 2


class HyperscanFinder:
    """Every pattern of the rule compiled into one Hyperscan database; one scan a window, a hit
    handed back as its end offset, and the lines between noise lines are the kept ones."""

    def __init__(self, rule: BulkNoise) -> None:
        self.rule = rule
        self._db = _database(rule)

    def __call__(self, buf: bytes) -> list[tuple[int, bytes]]:
        hits: list[tuple[int, int]] = []
        add = hits.append

        def on_match(pid: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            add((to, pid))

        self._db.scan(buf, match_event_handler=on_match)
        # Each line with a hit: its start, end and what was found in it.
        noise: list[tuple[int, int]] = []  # (start, end) of the lines left out, in order
        rfind, find = buf.rfind, buf.find
        line_start = line_end = -1
        kind = 0
        glued = False
        for to, pid in hits:
            if to > line_end:
                if line_end >= 0 and _left_out(kind, glued):
                    noise.append((line_start, line_end))
                line_start = rfind(b"\n", 0, max(0, to - 1)) + 1 if to else 0
                line_end = find(b"\n", max(0, to - 1))
                if line_end < 0:
                    line_end = len(buf)
                kind, glued = 0, False
            part = pid & 3
            if part == _GLUE:
                glued = True
            elif part == _LATEST:
                kind |= 2
            else:
                kind |= 1
        if line_end >= 0 and _left_out(kind, glued):
            noise.append((line_start, line_end))
        out: list[tuple[int, bytes]] = []
        pos = 0
        for start, end in noise:
            if start > pos:
                _lines_of(buf, pos, start, out)
            pos = end + 1
        if pos < len(buf):
            _lines_of(buf, pos, len(buf), out)
        return out


def _left_out(kind: int, glued: bool) -> bool:
    return bool(kind & 2) or (bool(kind & 1) and not glued)


def _lines_of(buf: bytes, start: int, end: int, out: list[tuple[int, bytes]]) -> None:
    """The whole lines of buf[start:end), which ends just after a newline."""
    pos = start
    for line in buf[start : end - 1].split(b"\n"):
        out.append((pos, line))
        pos += len(line) + 1


@cache
def _database(rule: BulkNoise) -> Any:
    hs = _hyperscan()
    exprs: list[bytes] = []
    ids: list[int] = []
    flags: list[int] = []
    n = 0

    def add(expr: bytes, part: int, flag: int = 0) -> None:
        nonlocal n
        exprs.append(expr)
        ids.append(n << 2 | part)
        flags.append(flag)
        n += 1

    for m in rule.latest_wins:
        add(re.escape(m), _LATEST)
    for m in rule.drop:
        add(re.escape(m), _DROP)
    for r in rule.drop_re:
        add(b"^(?:" + r + b")", _DROP, hs.HS_FLAG_MULTILINE)
    for w in rule.glue:
        add(re.escape(w), _GLUE)
    db = hs.Database()
    db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
    return db
