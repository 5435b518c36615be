"""The gated headers grep left out, put back where `BulkNoise.gate` keeps them.

For a rule whose gated headers and late shapes grep leaves out itself (`BulkNoise.grep_gates`: a
noisy prime-rl orchestrator's INFO chatter and its env's bar lines), grep hands on every line
`gate` keeps but the gated headers it keeps. Those are, of the lines `gate` is asked about in a
chunk (`BulkNoise.kept_ungated`):

- the first and the last (what stands beside them is not known there);
- one whose next line does not start a record (a gated header starts one itself, so whether a
  header goes is its next line's test alone, whatever went after it).

Each is a line just beside a stretch grep left out, at a chunk's edge or just before a kept line
that starts no record: read back from the file (the page cache holds it), a line or two each, not
the chatter around it (docs/reading.md, "The scan stage").
"""

from __future__ import annotations

import os
from itertools import accumulate

from runtop.parsers.skim import BulkNoise
from runtop.sources.bulk_grep import Grep, gnu_grep, line_end, line_start
from runtop.sources.regular import open_regular

# grep's `OFFSET:` before a line longer than this much of the tailer's cap hands on its head.
_SLACK = 24
# The lines beside a stretch grep left out are read back this much at a time.
BLOCK = 1 << 16


class GatedGrep:
    """[start, end) of one file through one grep child that leaves out the rule's latest-wins
    lines, late shapes and gated headers (`BulkNoise.gate_args`), the headers `gate` keeps put
    back (`put_back`): `take(stop)` hands what `BulkGrep` and `gate` would (a line past the cap
    judged whole by grep, as the in-process scan judges it, not by its head), a few thousand
    lines of a noisy orchestrator's 256 MB where `BulkGrep` hands 790k lines on to `gate`."""

    def __init__(self, path: str, ident: tuple[int, int], start: int, end: int, noise: BulkNoise, max_line: int) -> None:
        self.ident, self.pos, self.end = ident, start, end
        self._noise, self._max_line = noise, max_line
        grep = gnu_grep()
        if grep is None:
            raise OSError("no GNU grep")
        self._fd = open_regular(path)
        try:
            st = os.fstat(self._fd)
            if (st.st_dev, st.st_ino) != ident:
                raise OSError("the file was replaced")
            stages = noise.gate_args()
            self._grep = Grep(grep, path, ident, start, stages[0], max_line, stages[1] if len(stages) > 1 else None)
        except OSError:
            os.close(self._fd)
            raise

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None:
        """The kept lines of [pos, stop) and how many were cut at the cap; None when grep failed."""
        got: list[tuple[int, bytes]] = []
        cut = self._grep.take(stop, got)
        if cut is None:
            return None
        got, more = put_back(self._fd, self._grep.origin, self.pos, stop, got, self._noise, self._max_line)
        self.pos = stop
        return got, cut + more

    def close(self) -> None:
        self._grep.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def put_back(fd: int, origin: int, pos: int, stop: int, kept: list[tuple[int, bytes]], rule: BulkNoise,
             max_line: int) -> tuple[list[tuple[int, bytes]], int]:
    """`kept` (grep's lines of [pos, stop), in order) with the gated headers `gate` keeps put back
    in place, and how many of those were cut at the cap (as grep cuts one)."""
    reader = _Lines(fd, origin, max_line, rule)
    back: dict[int, tuple[bytes, bool]] = {}
    reader.first(pos, kept[0][0] if kept else stop, back)
    starts = rule.starts_record()
    after = pos  # just past the last kept line
    for off, line in kept:
        if off > after and not starts.match(line):
            reader.last(after, off, back)
        after = (off + len(line) if len(line) < max_line else line_end(fd, off + len(line), stop)) + 1
    reader.last(after, stop, back)
    if not back:
        return kept, 0
    got = kept + [(off, text) for off, (text, _cut) in back.items()]
    got.sort()
    return got, sum(1 for _text, cut in back.values() if cut)


class _Lines:
    """Whole lines of the file read back as grep hands them (the head of one past the cap), each
    asked whether `gate` is asked about it."""

    def __init__(self, fd: int, origin: int, max_line: int, rule: BulkNoise) -> None:
        self.fd, self.origin, self.max_line, self.rule = fd, origin, max_line, rule

    def first(self, lo: int, hi: int, into: dict[int, tuple[bytes, bool]]) -> None:
        """The first line of [lo, hi) (whole lines) that `gate` is asked about, into `into`: read
        a block at a time (a quiet log's stretch between two such lines is thousands of progress
        lines), a line longer than a block on its own."""
        at = lo
        while at < hi:
            buf = os.pread(self.fd, min(BLOCK, hi - at), at)
            nl = buf.rfind(b"\n")
            if nl < 0:
                end = line_end(self.fd, at, hi)
                if self._take(at, end, into):
                    return
                at = end + 1
                continue
            lines = buf[:nl].split(b"\n")
            starts = list(accumulate((len(line) + 1 for line in lines), initial=at))
            for i in self._maybe(lines):
                if self._asked(starts[i], lines[i], into):
                    return
            at = starts[-1]

    def last(self, lo: int, hi: int, into: dict[int, tuple[bytes, bool]]) -> None:
        """The last line of [lo, hi) (whole lines) that `gate` is asked about, into `into`: read
        backwards a block at a time, a line longer than a block on its own."""
        end = hi  # just past the newline that ends the last line not yet looked at
        while end > lo:
            start = max(lo, end - BLOCK)
            buf = os.pread(self.fd, end - start, start)
            # A line cut by the block's start is the next block's; one longer than the block, read alone.
            skip = 0 if start == lo else buf.find(b"\n") + 1
            if skip >= len(buf):
                at = line_start(self.fd, lo, end - 1)
                if self._take(at, end - 1, into):
                    return
                end = at
                continue
            lines = buf[skip:-1].split(b"\n")
            starts = list(accumulate((len(line) + 1 for line in lines), initial=start + skip))
            for i in reversed(self._maybe(lines)):
                if self._asked(starts[i], lines[i], into):
                    return
            end = start + skip

    def _maybe(self, lines: list[bytes]) -> list[int]:
        """The lines `gate` may be asked about: none that holds a latest-wins marker (`keeps` says
        no to those whatever else they hold), told apart by C-level `in` (most of a quiet log's
        lines are its progress)."""
        idx = list(range(len(lines)))
        for m in self.rule.latest_wins:
            idx = [i for i in idx if m not in lines[i]]
        return idx

    def _asked(self, at: int, line: bytes, into: dict[int, tuple[bytes, bool]]) -> bool:
        """`_take` of a line already read whole."""
        if len(str(at - self.origin)) + 1 + len(line) >= self.max_line + _SLACK:
            return self._take(at, at + len(line), into)  # past the cap: its head, as grep hands it
        if not self.rule.kept_ungated(line):
            return False
        into[at] = (line, False)
        return True

    def _take(self, at: int, end: int, into: dict[int, tuple[bytes, bool]]) -> bool:
        cut = len(str(at - self.origin)) + 1 + end - at >= self.max_line + _SLACK
        text = os.pread(self.fd, self.max_line if cut else end - at, at)
        if not self.rule.kept_ungated(text):
            return False
        into[at] = (text, cut)
        return True
