"""Follow one file by byte offset: complete lines only, bounded lines, restarts noticed.

- Only complete lines are handed on; a partial last line is held back until its
  newline arrives.
- A line longer than `max_line` keeps its first `max_line` characters; the rest is
  counted (`capped`) and dropped, so a 2 GB line costs 64 KiB of memory.
- Truncation (size < offset) and replacement (a new inode: log rotation, `mv`, or
  `logs/latest` pointing at a new attempt) start a new read from the top and are
  reported as a restart so the run state opens a new attempt instead of mixing
  two runs' steps.
- A deleted file is reported missing; when it comes back it is read from the top.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from runtop.parsers.hygiene import UNSAFE_RE
from runtop.parsers.text import clean_bytes

DEFAULT_MAX_LINE = 64 * 1024
DEFAULT_CHUNK = 1 << 20


@dataclass
class TailRead:
    lines: list[str] = field(default_factory=list)
    restarted: str | None = None  # "truncated", "replaced", "recreated"
    missing: bool = False
    error: str | None = None
    eof: bool = True
    bytes: int = 0
    first_line: int = 1  # number of the first line handed on (counted from `start_offset`)
    skimmed: int = 0  # lines the prefilter dropped: line numbers after them are approximate


class FileTailer:
    def __init__(
        self,
        path: str,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        chunk_size: int = DEFAULT_CHUNK,
        clean: bool = True,
        prefilter: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.path = path
        self.max_line = max_line
        self.chunk_size = chunk_size
        self.clean = clean
        self.prefilter = prefilter
        self.offset = 0
        self.size = 0
        self.mtime: float | None = None
        self.ident: tuple[int, int] | None = None
        self.capped = 0
        self.restarts = 0
        self._partial = b""
        self._skipping = False  # inside an over-long line: drop bytes up to the next newline
        self._skip_first = False  # started mid-file: drop the first (partial) line
        self._was_missing = False
        self.lines = 0  # physical lines handed on since `start_offset`: names a bad line (issue 10)
        self.start_offset = 0

    # ---- positioning ----------------------------------------------------
    def seek_tail(self, nbytes: int) -> None:
        """Start `nbytes` before the end (cold start: the recent past first)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return
        self.ident = (st.st_dev, st.st_ino)
        self.size = st.st_size
        if st.st_size > nbytes:
            self.offset = self.start_offset = st.st_size - nbytes
            self._skip_first = True
        self._partial = b""
        self._skipping = False

    def _restart(self) -> None:
        self.offset = self.start_offset = self.lines = 0
        self._partial = b""
        self._skipping = False
        self._skip_first = False
        self.restarts += 1

    # ---- reading --------------------------------------------------------
    def read(self, max_bytes: int | None = None) -> TailRead:
        """Read what is new (at most `max_bytes`, else to the end of the file)."""
        out = TailRead(first_line=self.lines + 1)
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            if self.ident is not None:
                self._was_missing = True
            out.missing = True
            return out
        except OSError as e:
            out.error = f"{self.path}: {e.strerror or e}"
            return out
        try:
            st = os.fstat(fd)
            ident = (st.st_dev, st.st_ino)
            if self._was_missing:
                # Seen gone, now back: a new file even if the filesystem reused the inode number.
                out.restarted = "recreated"
                self._restart()
            elif self.ident is not None and ident != self.ident:
                out.restarted = "replaced"
                self._restart()
            elif st.st_size < self.offset:
                out.restarted = "truncated"
                self._restart()
            self.ident = ident
            self._was_missing = False
            self.size = st.st_size
            self.mtime = st.st_mtime
            out.first_line = self.lines + 1
            if st.st_size == self.offset:
                return out
            os.lseek(fd, self.offset, os.SEEK_SET)
            budget = max_bytes if max_bytes is not None else st.st_size - self.offset
            while budget > 0:
                chunk = os.read(fd, min(self.chunk_size, budget))
                if not chunk:
                    break
                self.offset += len(chunk)
                budget -= len(chunk)
                out.bytes += len(chunk)
                self._feed(chunk, out)
            out.eof = self.offset >= st.st_size
        except OSError as e:
            out.error = f"{self.path}: {e.strerror or e}"
        finally:
            os.close(fd)
        return out

    def _feed(self, chunk: bytes, out: TailRead) -> None:
        lines = out.lines
        if self._skip_first:
            nl = chunk.find(b"\n")
            if nl < 0:
                return
            chunk = chunk[nl + 1 :]
            self._skip_first = False
        if self._skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return
            chunk = chunk[nl + 1 :]
            self._skipping = False
        data = self._partial + chunk if self._partial else chunk
        nl = data.rfind(b"\n")
        if self.clean:
            # A tqdm frame ends in `\r`, not a newline: hand it on now, not when the next line comes.
            nl = max(nl, data.rfind(b"\r"))
        if nl < 0:
            self._hold(data, out)
            return
        complete, rest = data[: nl + 1], data[nl + 1 :]
        self._partial = b""
        self._emit(complete, out)
        if rest:
            self._hold(rest, out)

    def _hold(self, data: bytes, out: TailRead) -> None:
        """Keep a partial line, unless it is already over the cap: then emit its head now."""
        if len(data) > self.max_line:
            self._emit(data[: self.max_line] + b"\n", out)
            self.capped += 1
            self._skipping = True
            self._partial = b""
        else:
            self._partial = data

    def _emit(self, complete: bytes, out: TailRead) -> None:
        lines = out.lines
        n = complete.count(b"\n")
        self.lines += n
        if self.prefilter is not None:
            # Complete lines in, complete lines out (the filter keeps the final newline).
            kept = self.prefilter(complete)
            if kept is not complete:
                out.skimmed += n - kept.count(b"\n")
            complete = kept
            if not complete.strip(b"\n"):
                return
        if self.clean:
            complete = clean_bytes(complete)
        text = complete.decode("utf-8", "replace")
        if self.clean and not text.isascii():
            text = UNSAFE_RE.sub("", text)  # C1 controls and bidi overrides (issue 10)
        new = text.split("\n")
        new.pop()  # the text ends with a newline: the last piece is empty
        cap = self.max_line
        if len(text) > cap and max(map(len, new), default=0) > cap:
            self.capped += sum(1 for s in new if len(s) > cap)
            new = [s[:cap] if len(s) > cap else s for s in new]
        lines.extend(new)

    @property
    def pending(self) -> bool:
        """True while a partial line is held back."""
        return bool(self._partial)
