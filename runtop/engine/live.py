"""Follow a run live: the recent tail first, the full history backfilled behind it.

Cold start on a huge log must show a status at once: a tail reader
starts `TAIL_BYTES` before the end of each log while a second reader reads every
file from the top in a worker thread into its own, private state. When it has
caught up, the live view swaps to it; from then on one reader follows the files.
Each state has one writer at a time: the worker owns the backfill state until the
hand-over, the caller owns the live one. `OnceRun` is the headless counterpart: a run
the caller read to its end, in the shape the engine steps.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any

from runtop.engine.reader import RunReader
from runtop.frameworks import get as get_framework
from runtop.frameworks import process_roles
from runtop.frameworks.discovery import UNDECIDED, RunLayout, redetect
from runtop.queues import drain
from runtop.sources.deadline import Slow, call_with_deadline
from runtop.sources.processes import scan_run
from runtop.sources.watch import ChangeWaiter
from runtop.state.log_tail import LogTail
from runtop.state.run import RunState

TAIL_BYTES = 1 << 20
BACKFILL_CHUNK = 8 << 20
# How often, at least, a run read generically for want of signs is looked at again (docs/reading.md,
# "Detection"): a short run can die or end within seconds of its first logged step.
REDETECT_S = 2.0


class LiveRun:
    def __init__(
        self, layout: RunLayout, *, poll: bool = False, tail_bytes: int = TAIL_BYTES, interval: float = 2.0, processes: bool = True,
        ckpt_every: float | None = None,
    ) -> None:
        self.layout = layout
        self.interval = interval
        # Checkpoints are listed every 5 s at most (a listing of hundreds of saves costs); a
        # replay on a simulated clock lists them every poll.
        self.ckpt_every = max(interval, 5.0) if ckpt_every is None else ckpt_every
        self.processes = processes  # False: the caller samples processes itself (the TUI's process pane)
        self.tail = LogTail()  # the Logs pane's lines: kept across the backfilled reader's takeover
        self.reader = RunReader(layout, tail=self.tail)
        self.waiter = ChangeWaiter(layout.root, poll=poll)
        self.backfill_error: str | None = None
        self._full: RunReader | None = None
        self._ready: RunReader | None = None
        self._backfilling = False
        self._stop = threading.Event()
        self._last_procs = float("-inf")
        # Step rows of the history, handed over chunk by chunk while the backfill reads (the
        # charts and the step table fill as the history lands, not only when it is all read).
        self._history: queue.SimpleQueue[list[Any]] = queue.SimpleQueue()
        self._tail_first: int | None = None  # the first step the live tail itself read
        self._redetect_at = time.monotonic() + max(interval, REDETECT_S)
        self._end_looked = False  # a generic read's death or end was looked at again once
        if self._needs_backfill(tail_bytes):
            self.reader.seek_tails(tail_bytes)
            self._backfilling = True
            self._thread = threading.Thread(target=self._backfill, name="runtop-backfill", daemon=True)
            self._thread.start()

    def _needs_backfill(self, tail_bytes: int) -> bool:
        for t in self.layout.logs + self.layout.metrics:
            try:
                if os.path.getsize(t.path) > tail_bytes:
                    return True
            except OSError:
                continue
        return False

    def _backfill(self) -> None:
        from runtop.view.publish import row_copy

        full = RunReader(self.layout)
        self._full = full
        full.state._track_rows = True  # every row written is marked: the newly read ones are handed over
        finished = False
        try:
            while not self._stop.is_set():
                full.poll(max_bytes=BACKFILL_CHUNK, rescan_every=float("inf"))
                written, full.state._dirty_steps = full.state._dirty_steps, set()
                rows = [row_copy(r) for k in sorted(written) if (r := full.state.steps.get(k)) is not None]
                if rows:
                    self._history.put(rows)  # copies: the worker goes on writing its own
                if full.done():
                    finished = True
                    break
        except OSError as e:
            self.backfill_error = f"backfill stopped: {e}"
            self._backfilling = False
        finally:
            if not finished:
                full.close()  # stopped part-way: a bulk read's grep children go with it
        if finished:
            self._ready = full

    @property
    def state(self) -> RunState:
        return self.reader.state

    def backfill_progress(self) -> float:
        """Fraction of the history read; 1.0 once the live view follows the full state."""
        if not self._backfilling:
            return 1.0
        if self._full is None:
            return 0.0
        read, total = self._full.progress()
        return min(read / total, 0.999) if total else 0.999

    def step(self, max_bytes: int | None = None) -> bool:
        """Read what is new, at most `max_bytes` per file (and take over the backfilled state
        once it is ready)."""
        changed = False
        if self._ready is not None:
            old = self.reader.state
            self.reader, self._ready = self._ready, None
            # The history's own lines stay out of the pane (it showed the live tail already).
            self.reader.tail = self.tail
            self.reader.state.processes, self.reader.state.process_denied = old.processes, old.process_denied
            # The probes' answers too: a next step checked against no disk would flicker until the next sample.
            self.reader.state.disk, self.reader.state.slurm, self.reader.state.ray = old.disk, old.slurm, old.ray
            self.reader.state._track_rows = False  # the publisher marks its own from now on
            self.reader.state._dirty_steps.clear()
            self._backfilling = False
            changed = True
        changed |= self._redetect()
        changed |= self._poll(max_bytes)
        if self._ended_undecided() and self._redetect(now=True):
            # A short run can die or end between two looks: the plug-in's signs came with its
            # end, so the end is read by the plug-in (its step, its checkpoints) before it is judged.
            self._poll(max_bytes)
        changed |= self._take_history()
        if self.backfill_error and self.reader.state.backfill_error != self.backfill_error:
            # Errors never vanish: the header says so through the `unreadable` rule.
            self.reader.state.backfill_error = self.backfill_error
            self.reader.state.notes.append(self.backfill_error)
            changed = True
        now = time.monotonic()
        if self.processes and now - self._last_procs >= max(self.interval, 2.0):
            self._last_procs = now
            before = (self.reader.state.processes, self.reader.state.process_denied)
            look_at_processes(self.reader)
            changed |= before != (self.reader.state.processes, self.reader.state.process_denied)
        return changed

    def _poll(self, max_bytes: int | None) -> bool:
        return self.reader.poll(max_bytes=max_bytes, rescan_every=self.interval, ckpt_every=self.ckpt_every,
                                seen=self.waiter.take_seen())

    def _ended_undecided(self) -> bool:
        """A run read generically whose files now say it died or ended, looked at once more."""
        if self._end_looked or not self.layout.detection.startswith(UNDECIDED):
            return False
        state = self.reader.state
        self._end_looked = bool(state.open_fatals() or state.run_finished())
        return self._end_looked

    def _redetect(self, now: bool = False) -> bool:
        """A TRL or verl console caught in its first seconds has no framework's signs yet: read
        generically then, it is looked at again every few seconds, and read afresh by the
        plug-in that claims it once its signs are there (its steps, checkpoints, resume)."""
        at = time.monotonic()
        if self._backfilling or (at < self._redetect_at and not now):
            return False
        self._redetect_at = at + max(self.interval, REDETECT_S)
        fresh = redetect(self.layout)
        if fresh is None:
            return False
        old = self.reader.state
        self.reader.close()
        self.layout = fresh
        self.reader = RunReader(fresh, tail=self.tail)
        # What the probes saw stays until they look again (a run judged with no process would flicker).
        self.reader.state.processes, self.reader.state.process_denied = old.processes, old.process_denied
        self.reader.state.disk, self.reader.state.slurm, self.reader.state.ray = old.disk, old.slurm, old.ray
        return True

    def _take_history(self) -> bool:
        """Fold the history's rows read so far into the live state, below the first step the
        tail read itself (the tail's own rows are newer and stay)."""
        state = self.reader.state
        if self._tail_first is None:
            keys = state.step_keys()
            if not keys:
                return False  # nothing to place them below yet: they wait in the queue
            self._tail_first = keys[0]
        below = self._tail_first
        return state.merge_history([r for rows in drain(self._history) for r in rows if r.step < below])

    def wait(self, timeout: float) -> bool:
        return self.waiter.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        self.waiter.close()


class OnceRun:
    """A run read by the caller (headless commands), in the shape the engine steps."""

    def __init__(self, reader: RunReader) -> None:
        self.reader = reader
        self.tail = reader.tail

    def backfill_progress(self) -> float:
        return 1.0  # read to the end by the caller

    @property
    def state(self) -> RunState:
        return self.reader.state

    def step(self, max_bytes: int | None = None) -> bool:
        return False

    def wait(self, timeout: float) -> bool:
        return False

    def close(self) -> None:
        pass


# A process scan can hang on /proc of a process in D state (NFS): past this, judge without it.
PROCESS_SCAN_S = 10.0


def look_at_processes(reader: RunReader) -> None:
    s = reader.state
    try:
        s.processes, s.process_denied = call_with_deadline(
            "process scan", lambda: scan_run(reader.layout.root, [t.path for t in reader.layout.logs], process_roles(get_framework(reader.layout.framework))),
            PROCESS_SCAN_S,
        )
    except Slow as e:
        s.processes, s.process_denied = None, {}
        if str(e) not in s.notes:
            s.notes.append(str(e))
