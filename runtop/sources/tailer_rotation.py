"""How a `FileTailer` follows a log through rotation and replacement without losing a line:
a file renamed aside is read to its end and followed a while longer, the unread
lines of a copytruncate are read from the copy, and a file rewritten as old-plus-new goes
on where it was. Mixed into `FileTailer`, which reads the file itself.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtop.sources.regular import open_binary

# How long a file rotated away is still read: a writer appends to it until it reopens its log.
ROTATED_GRACE_S = 30.0


@dataclass
class Rotated:
    path: str
    ident: tuple[int, int]
    offset: int
    partial: bytes
    skipping: bool
    until: float


@dataclass
class TailRead:
    lines: list[str] = field(default_factory=list)
    # "truncated", "replaced", "recreated": a new file (a new attempt); "rotated": the same
    # log, moved aside by logrotate (its rest is in `drained`).
    restarted: str | None = None
    missing: bool = False
    error: str | None = None
    eof: bool = True
    bytes: int = 0
    drained: list[str] = field(default_factory=list)  # the previous file's last lines (before `lines`)
    first_line: int = 1  # number of the first line handed on (counted from `start_offset`)
    skimmed: int = 0  # lines the prefilter dropped: line numbers after them are approximate
    not_regular: bool = False  # the path is a FIFO, a directory, a device: `error` says which


class RotationFollower:
    """Mixed into `FileTailer`, whose attributes these are."""

    if TYPE_CHECKING:
        path: str
        chunk_size: int
        offset: int
        ident: tuple[int, int] | None
        _head: bytes
        _seen_tail: bytes
        _partial: bytes
        _skipping: bool
        _skip_first: bool
        _rotated: Rotated | None

        def _restart(self) -> None: ...

        def _feed(self, chunk: bytes, out: TailRead) -> None: ...

    def _same_head(self, fd: int) -> bool:
        """The first bytes are the ones we read: the file was not rewritten under us."""
        if not self._head:
            return True
        return os.pread(fd, len(self._head), 0) == self._head

    def _switch(self, fd: int, st: os.stat_result, out: TailRead) -> None:
        """The path names another file now. Three cases, told apart by content:
        rotated away (the old file lives on under a sibling name: read its rest first),
        rewritten as old-plus-new (same head, same bytes before our offset: go on), or a
        new file (start over)."""
        if self._follow_rotated(out):
            out.restarted = "rotated"
            self._restart()
            return
        if self._continues(fd, st):
            return  # the same content at the same offsets: nothing to re-read, no new attempt
        out.restarted = "replaced"
        self._restart()

    def _continues(self, fd: int, st: os.stat_result) -> bool:
        if not self._head or st.st_size < self.offset:
            return False
        if os.pread(fd, len(self._head), 0) != self._head:
            return False
        n = len(self._seen_tail)
        return n == 0 or os.pread(fd, n, self.offset - n) == self._seen_tail

    def _siblings(self) -> list[str]:
        """Rotated names of this file: `trainer.log.1`, `trainer.log-20261123`, `trainer.log.1.gz`."""
        d, base = os.path.split(self.path)
        try:
            names = os.listdir(d or ".")
        except OSError:
            return []
        return [os.path.join(d, n) for n in names if n.startswith(base) and n != base and not n.endswith((".gz", ".xz", ".zst", ".bz2"))]

    def _follow_rotated(self, out: TailRead) -> bool:
        """Find the file we were reading under a rotated name (same inode); read its rest and
        keep following it for `ROTATED_GRACE_S` (a writer that has not reopened its log yet)."""
        if self.ident is None:
            return False
        for cand in self._siblings():
            try:
                st = os.stat(cand)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == self.ident:
                self._rotated = Rotated(cand, self.ident, self.offset, self._partial, self._skipping, time.monotonic() + ROTATED_GRACE_S)
                self._drain_rotated(out)
                return True
        return False

    def _drain_copy(self, out: TailRead) -> bool:
        """copytruncate: the lines we had not read went to a copy whose head is ours."""
        if not self._head:
            return False
        for cand in self._siblings():
            try:
                st = os.stat(cand)
                if (st.st_dev, st.st_ino) == self.ident or st.st_size < self.offset:
                    continue
                with open_binary(cand) as f:
                    if f.read(len(self._head)) != self._head:
                        continue
            except OSError:
                continue
            self._rotated = Rotated(cand, (st.st_dev, st.st_ino), self.offset, self._partial, self._skipping, time.monotonic())
            self._drain_rotated(out)
            return True
        return False

    def _drain_rotated(self, out: TailRead) -> None:
        """Read what is new in the rotated file into `out.drained`; forget it after its grace."""
        r = self._rotated
        assert r is not None
        saved = (self._partial, self._skipping, self._skip_first)
        self._partial, self._skipping, self._skip_first = r.partial, r.skipping, False
        sink = TailRead()
        try:
            with open_binary(r.path) as f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) == r.ident and st.st_size > r.offset:
                    f.seek(r.offset)
                    while chunk := f.read(self.chunk_size):
                        r.offset += len(chunk)
                        self._feed(chunk, sink)
        except OSError:
            r.until = 0.0  # gone (compressed, deleted): nothing more to read from it
        r.partial, r.skipping = self._partial, self._skipping
        self._partial, self._skipping, self._skip_first = saved
        out.drained.extend(sink.lines)
        out.skimmed += sink.skimmed
        if time.monotonic() >= r.until:
            self._rotated = None
