"""Follow one file by byte offset: complete lines only, bounded lines, restarts noticed.

- Only complete lines are handed on; a partial last line is held back until its
  newline arrives.
- A line longer than `max_line` keeps its first `max_line` characters; the rest is
  counted (`capped`) and dropped, so a 2 GB line costs 64 KiB of memory.
- Truncation (size < offset, or first bytes that changed under us) and replacement
  (a new inode: `mv`, or `logs/latest` pointing at a new attempt) start a new read
  from the top and are reported as a restart so the run state opens a new attempt
  instead of mixing two runs' steps.
- Rotation loses nothing: a file renamed aside (`trainer.log.1`) is read to
  its end before the new one, and followed a while longer for a writer that has not
  reopened its log; after copytruncate the unread lines are read from the copy; a file
  rewritten as old-plus-new (same first bytes, same bytes before our offset) goes on
  where it was instead of being read twice.
- A deleted file is reported missing; when it comes back it is read from the top.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable

from runtop.parsers.hygiene import UNSAFE_RE
from runtop.parsers.skim import BulkNoise
from runtop.parsers.text import clean_bytes
from runtop.sources import bulk_grep, scan
from runtop.sources.bulk_grep import newest_line
from runtop.sources.regular import NotRegular, open_regular
from runtop.sources.tailer_rotation import Rotated, RotationFollower, TailRead

DEFAULT_MAX_LINE = 64 * 1024
DEFAULT_CHUNK = 1 << 20
HEAD_BYTES = 256
TAIL_BYTES = 256


# The end of a tqdm frame at the end of the bytes read: `| 3/1562 [18:48<164:33:29, 379.99s/it]`
# (tqdm pads a shorter frame with spaces).
FRAME_END_RE_B = re.compile(rb"\|\s?\d{1,12}/\d{1,12} \[[^\]\r\n]{1,200}\] *\Z", re.ASCII)


class FileTailer(RotationFollower):
    def __init__(
        self,
        path: str,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        chunk_size: int = DEFAULT_CHUNK,
        clean: bool = True,
        prefilter: Callable[[bytes], bytes] | None = None,
        bulk: BulkNoise | None = None,
    ) -> None:
        self.path = path
        self.max_line = max_line
        self.chunk_size = chunk_size
        self.clean = clean
        self.prefilter = prefilter
        # A long unread stretch has its noise dropped by a grep child first.
        self.bulk = bulk
        self._bulk: scan.Scan | None = None
        self._bulk_off = False  # the scan failed here once (grep missing or dead): the bytes are read in Python
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
        self.lines = 0  # physical lines handed on since `start_offset`: names a bad line
        self.start_offset = 0
        self._head = b""  # the file's first bytes: a rewrite under us changes them
        self._seen_tail = b""  # the last bytes read: a rewrite that kept them continues the file
        self._rotated: Rotated | None = None

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
        self._end_bulk()
        self.offset = self.start_offset = self.lines = 0
        self._partial = b""
        self._skipping = False
        self._skip_first = False
        self._head = b""
        self._seen_tail = b""
        self.restarts += 1

    # ---- reading --------------------------------------------------------
    def read(self, max_bytes: int | None = None) -> TailRead:
        """Read what is new (at most `max_bytes`, else to the end of the file).

        Lines of the file we were reading that arrive after it was rotated away (renamed,
        copied and truncated, still written by a late writer) come first, in `drained`.
        """
        out = TailRead(first_line=self.lines + 1)
        if self._rotated is not None:
            self._drain_rotated(out)
        try:
            fd = open_regular(self.path)  # a FIFO or a device at the path is said, never read
        except NotRegular as e:
            out.error, out.not_regular = f"{self.path}: {e.strerror}", True
            return out
        except FileNotFoundError:
            if self.ident is not None and not self._was_missing:
                self._was_missing = True
                self._follow_rotated(out)  # renamed away and not yet recreated: read its rest
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
                out.restarted = "rotated" if self._rotated is not None else "recreated"
                self._restart()
            elif self.ident is not None and ident != self.ident:
                self._switch(fd, st, out)
            elif st.st_size < self.offset or not self._same_head(fd):
                # Truncated, or rewritten in place (copytruncate racing the poll: the file
                # can be longer than our offset again by the time we look).
                out.restarted = "rotated" if self._drain_copy(out) else "truncated"
                self._restart()
            self.ident = ident
            self._was_missing = False
            self.size = st.st_size
            self.mtime = st.st_mtime
            out.first_line = self.lines + 1
            if len(self._head) < HEAD_BYTES and st.st_size > len(self._head):
                self._head = os.pread(fd, HEAD_BYTES, 0)
            if st.st_size == self.offset:
                return out
            budget = max_bytes if max_bytes is not None else st.st_size - self.offset
            if self.bulk is not None and self._bulk_read(fd, st.st_size, budget, out):
                out.eof = self.offset >= st.st_size
                return out
            os.lseek(fd, self.offset, os.SEEK_SET)
            while budget > 0:
                chunk = os.read(fd, min(self.chunk_size, budget))
                if not chunk:
                    break
                self.offset += len(chunk)
                budget -= len(chunk)
                out.bytes += len(chunk)
                self._seen_tail = (self._seen_tail + chunk[-TAIL_BYTES:])[-TAIL_BYTES:]
                self._feed(chunk, out)
            out.eof = self.offset >= st.st_size
        except OSError as e:
            out.error = f"{self.path}: {e.strerror or e}"
        finally:
            os.close(fd)
        return out

    def _bulk_read(self, fd: int, size: int, budget: int, out: TailRead) -> bool:
        """Read up to `budget` bytes of a long stretch through the scan stage (`runtop.sources.scan`);
        False when the bytes are to be read here instead (short stretch, mid-line, no GNU grep,
        grep failed)."""
        assert self.bulk is not None and self.ident is not None
        b = self._bulk
        if b is not None and (b.ident != self.ident or b.pos != self.offset):
            self._end_bulk()  # the file was replaced or started over under us
            b = None
        if b is None:
            if self._bulk_off or self._partial or self._skipping:
                return False
            how = scan.backend(self.bulk, size - self.offset)
            if self._skip_first and how != "off" and size - self.offset >= scan.min_stretch(how, self.bulk):
                # Started mid-file (a bounded status's tail): the cut first line is dropped here,
                # as `_feed` drops it, so the stretch behind it can be scanned.
                nl = bulk_grep.line_end(fd, self.offset, size)
                if nl >= size:
                    return False
                out.bytes += nl + 1 - self.offset
                self.offset = nl + 1
                self._skip_first = False
            if self._skip_first:
                return False
            least = scan.min_stretch(how, self.bulk)
            if how == "off" or size - self.offset < least:
                return False
            # Whole lines only: the stretch ends after the last newline there is now.
            end = bulk_grep.last_line_end(fd, self.offset, size)
            if end - self.offset < max(least, 1):
                return False
            try:
                b = self._bulk = scan.open_scan(how, self.path, self.ident, self.offset, end, self.bulk, self.max_line)
            except OSError:
                self._bulk_off = True
                return False
        stop = min(self.offset + budget, b.end)
        if stop < b.end:
            stop = bulk_grep.line_end(fd, stop - 1, b.end) + 1
        taken = b.take(stop)
        if taken is None:
            self._end_bulk()
            self._bulk_off = True
            return False
        kept, cut = taken
        start = self.offset
        # The newest latest-wins line is among what grep dropped: none dropped, none to look for.
        dropped = stop - start > sum(map(len, [line for _, line in kept])) + len(kept)
        if dropped:
            seen = {off for off, _ in kept}
            for marker in self.bulk.latest_wins:
                newest = newest_line(fd, start, stop, marker)
                if newest is not None and newest[0] not in seen:
                    seen.add(newest[0])
                    bisect.insort(kept, newest)
        self.capped += cut
        out.bytes += stop - start
        n = min(TAIL_BYTES, stop - start)
        self._seen_tail = os.pread(fd, n, stop - n)
        self.offset = stop
        data = b"\n".join([line for _, line in kept]) + b"\n" if kept else b""
        out.skimmed += dropped  # lines were left out: line numbers from here are near, not exact
        if data:
            self._emit(data, out)
        if stop >= b.end:
            self._end_bulk()
        elif len(data) > (stop - start) * bulk_grep.WORTH_IT:
            # Little here is noise (a SkyRL driver log is transcripts and records): handing every
            # line through a pipe costs more than it saves, so the rest is read here.
            self._end_bulk()
            self._bulk_off = True
        return True

    def close(self) -> None:
        """End the grep children of a bulk read (a backfill stopped part-way)."""
        self._end_bulk()

    def _end_bulk(self) -> None:
        if self._bulk is not None:
            self._bulk.close()
            self._bulk = None

    def _feed(self, chunk: bytes, out: TailRead) -> None:
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
        """Keep a partial line, unless it is already over the cap: then emit its head now. A
        tqdm frame is complete when its `]` is written: tqdm writes `\r` + the frame in one go,
        so the bar's newest frame never ends in a newline until the bar closes (a run whose only
        progress is `3/1562 [18:48<164:33:29, 379.99s/it]` showed step 2)."""
        if self.clean and data[-1:] in (b"]", b" ") and b"%|" in data and FRAME_END_RE_B.search(data[-400:]):
            self._emit(data + b"\n", out)
            self.lines -= 1  # the newline is ours, not the file's
            self._partial = b""
            return
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
        # C1 controls and bidi overrides. Line by line where few lines are non-ASCII:
        # one regex over a 4 MB chunk holding a tqdm bar's `█` or an em dash cost 13-18 ms (4 s
        # a GB of SkyRL log), and `isascii` passes the other lines at memory speed. Where most
        # are (more UTF-8 bytes beyond one a character than lines: CJK text), one regex over
        # the whole is cheaper than a call a line.
        mixed = self.clean and not text.isascii()
        if mixed and len(complete) - len(text) > complete.count(b"\n"):
            text, mixed = UNSAFE_RE.sub("", text), False
        new = text.split("\n")
        new.pop()  # the text ends with a newline: the last piece is empty
        if mixed:
            new = [s if s.isascii() else UNSAFE_RE.sub("", s) for s in new]
        cap = self.max_line
        if len(text) > cap and max(map(len, new), default=0) > cap:
            self.capped += sum(1 for s in new if len(s) > cap)
            new = [s[:cap] if len(s) > cap else s for s in new]
        lines.extend(new)

    @property
    def pending(self) -> bool:
        """True while a partial line is held back."""
        return bool(self._partial)
