"""Read one run's files and fold what they say into a `RunState`.

The reader owns the tailers (all file I/O) and is driven by whoever owns the state:
the headless commands call `poll()` until the files are read; the live view calls it
from a worker thread on each wake-up. It never raises for a bad file: the error is
recorded on that file's `FileInfo` and the other files go on being read.
"""

from __future__ import annotations

import os
import time
from collections import Counter

from runtop.engine.run_configs import ConfigReader
from runtop.frameworks import Framework, get
from runtop.frameworks.discovery import CUSTOM, RunLayout, Tracked, rescan, resolve
from runtop.frameworks.generic.under import read_records, reading
from runtop.parsers import rollouts
from runtop.parsers.events import Event, StepMetrics, Unparsed
from runtop.parsers.metrics_generic import parse_line as parse_generic
from runtop.parsers.node_files import node_of
from runtop.parsers.records import Record, RecordAssembler
from runtop.parsers.skim import skim
from runtop.parsers.step_batches import StepColumns
from runtop.parsers.text import collector_of, unwrap
from runtop.sources.tailer import FileTailer
from runtop.state.log_tail import LogTail, pane_lines
from runtop.state.parts import FileInfo, LogLine
from runtop.state.run import RunState

MAX_LINE = {"log": 64 * 1024, "metrics": 1 << 20, "rollouts": 32 << 20, "config": 1 << 20}

# Many idle files (docs/reading.md, "Many files"): 20k env logs opened every poll cost `watch` a
# third of a core. A role with more files than CROWD is a crowd; a file of a crowd that has not
# changed for IDLE_S is idle, and the idle ones are looked at TURN a poll, in turns (every one
# within a minute or two), besides every file the file watcher saw change (at once). The other
# roles' files (trainer.log, metrics.jsonl) are read every poll whatever their age.
CROWD = 32
IDLE_S = 30.0
TURN = 256
# The layout is listed again every interval, unless listing it costs more than 0.5 % of the time
# (20k env logs: 0.2 s a listing); then at once only when the file watcher saw a new log or
# `logs/latest` change.
RESCAN_COST_SHARE = 200
NEW_FILE_SUFFIXES = (".log", ".jsonl", ".json", ".toml", ".out", ".err", "latest")


def node_tag(tracked: Tracked) -> str:
    """The Logs pane's source tag: the role, and the node a multi-node run's file is
    (`trainer@2`; `trainer@2.1` for node 2's rank 1)."""
    at = node_of(os.path.basename(tracked.path))
    if at is None:
        return tracked.role
    return f"{tracked.role}@{at[0]}" + (f".{at[1]}" if at[1] is not None else "")


class _Followed:
    __slots__ = ("tracked", "framework", "tailer", "assembler", "parse", "batch", "last_metric_step", "last_time", "approximate",
                 "collector", "changed_at")

    def __init__(self, tracked: Tracked, framework: Framework) -> None:
        self.tracked = tracked
        self.framework = framework
        is_log = tracked.kind == "log"
        # A long stretch has its noise dropped by the scan stage before `skim`.
        self.tailer = FileTailer(tracked.path, max_line=MAX_LINE[tracked.kind], clean=is_log, prefilter=skim if is_log else None,
                                 bulk=framework.bulk_noise(tracked) if is_log else None)
        self.last_metric_step: dict[str, int] = {}
        self.last_time: str | None = None
        self.approximate = False  # the last read skipped noise lines: its line numbers are near, not exact
        self.changed_at = time.monotonic()  # when a read last found anything new (or an error)
        self.reset()

    def reset(self, batch_rollouts: int | None = None) -> None:
        """Forget the record and step context (the file started over): the framework's
        record header and a fresh parser."""
        head, self.parse, self.batch = reading(self.framework, self.tracked, batch_rollouts)
        self.assembler = RecordAssembler(head)
        self.collector: str | None = ""  # "" not decided yet; None: no wrapper
        self.last_metric_step.clear()


class RunReader:
    def __init__(self, layout: RunLayout, state: RunState | None = None, tail: LogTail | None = None) -> None:
        self.layout = layout
        # The Logs pane's lines: the engine's buffer (handed in), or this reader's own.
        self.tail = tail if tail is not None else LogTail()
        self.framework = get(layout.framework)
        self.state = state or RunState()
        s = self.state
        s.path, s.framework, s.layout, s.detection = layout.root, layout.framework, layout.layout, layout.detection
        s.notes = list(layout.notes)
        if s.plugin is None:
            s.use_plugin(self.framework.new_state, self.framework.reducers)
        self._followed: dict[str, _Followed] = {}
        self._configs = ConfigReader()
        # The layout was just discovered: the first rescan is due one interval from now.
        self._last_rescan = time.monotonic()
        self._last_ckpt = float("-inf")
        self._ckpt_dir: str | None = None
        self._marks: tuple[int, ...] = ()
        self._poll_lines: list[LogLine] = []  # this poll's lines for the Logs pane, from every file
        self._started_attempt = False
        self._turn = 0  # where the next turn of idle files begins
        # The followed files by kind, and those of crowded roles: listed again when the set changes.
        self._kinds: dict[str, list[_Followed]] | None = None
        self._crowded: list[_Followed] = []
        self._rescan_cost = 0.0  # seconds the last rescan took
        self._sync_files()
        self._configs.read(self.layout, self.state, self.framework)

    # ---- file set -------------------------------------------------------
    def _sync_files(self) -> None:
        self._kinds = None
        lay = self.layout
        wanted = {t.path: t for t in lay.metrics + lay.logs + lay.rollouts}
        for path in list(self._followed):
            if path not in wanted:
                self._drop(path)
        for path, tracked in wanted.items():
            if path not in self._followed:
                self._followed[path] = _Followed(tracked, self.framework)
                self.state.files[path] = FileInfo(path, tracked.role, tracked.kind)

    def _drop(self, path: str) -> None:
        self._kinds = None
        f = self._followed.pop(path)
        # Rollout files that left the recent window keep their counts; logs of an old
        # attempt leave the file list so they no longer speak for the run's health.
        if f.tracked.kind == "log":
            self._fold_records(f, f.assembler.flush())
            self.state.files.pop(path, None)

    def seek_tails(self, nbytes: int) -> None:
        """Cold start: begin each log `nbytes` before its end (the backfill reads the rest)."""
        for f in self._followed.values():
            if f.tracked.kind in ("log", "metrics"):
                f.tailer.seek_tail(nbytes)

    def seek_tail_of(self, path: str, nbytes: int) -> None:
        """Begin one file `nbytes` before its end (a bounded `status` on a huge log)."""
        f = self._followed.get(path)
        if f is not None:
            f.tailer.seek_tail(nbytes)

    # ---- polling --------------------------------------------------------
    def poll(self, *, max_bytes: int | None = None, rescan_every: float = 2.0, ckpt_every: float = 5.0,
             seen: set[str] | None = None) -> bool:
        """Read what is new in every file; True when anything was read. Given `seen` (the paths
        the file watcher saw change: following a run live), idle files of a crowd are looked
        at in turns, and at once when `seen` names them."""
        now = time.monotonic()
        changed = False
        since = now - self._last_rescan
        if since >= rescan_every and (since >= self._rescan_cost * RESCAN_COST_SHARE or self._new_files(seen)):
            self._last_rescan = now
            if not self.layout.single_file:
                self._rescan()
                self._rescan_cost = time.monotonic() - now
            changed = self._configs.read(self.layout, self.state, self.framework)
        resting = self._resting(now, seen)
        # metrics.jsonl first: its step regressions number the attempts (see state.new_attempt);
        # then the attempt dir's number, which can only move the count forward.
        for kind in ("metrics", "log", "rollouts"):
            if kind == "log" and not self._started_attempt:
                self._started_attempt = True
                if self.layout.attempt and self.layout.attempt > 1:
                    self.state.new_attempt(f"logs/attempt_{self.layout.attempt}", number=self.layout.attempt)
            for f in self._of_kind(kind):
                if f.tracked.path not in resting:
                    changed |= self._read(f, max_bytes)
        for f in self._follow_named_logs():
            changed |= self._read(f, max_bytes)
        lines, self._poll_lines = self._poll_lines, []
        self.tail.add_poll(lines)
        ckpt_dir = self.checkpoint_dir()
        # A checkpoint dir the log has just named is listed at once, not one interval later;
        # so is one where a save began or an unfinished save changed (their directories'
        # mtimes, a few stats a poll): a save made whole, or a run killed right after one,
        # is judged on the checkpoints as they are, not as they were five seconds ago.
        marks = self._ckpt_marks(ckpt_dir)
        if not self.layout.single_file and (now - self._last_ckpt >= ckpt_every or ckpt_dir != self._ckpt_dir or marks != self._marks):
            self._last_ckpt = now
            self._ckpt_dir = ckpt_dir
            self.state.checkpoints = self.framework.scan_checkpoints(self.layout, ckpt_dir)
            self._marks = self._ckpt_marks(ckpt_dir)
        return changed

    def _resting(self, now: float, seen: set[str] | None) -> set[str]:
        """The idle files of crowds not looked at this poll (none for a run of few files, nor
        without `seen`: a headless read reads every file)."""
        if seen is None or len(self._followed) <= CROWD:
            return set()
        self._of_kind("log")  # the crowds are listed with the kinds
        cutoff = now - IDLE_S
        idle = [f.tracked.path for f in self._crowded if f.changed_at <= cutoff]
        if seen:
            idle = [p for p in idle if p not in seen]
        if len(idle) <= TURN:
            return set()
        start = self._turn % len(idle)
        self._turn = start + TURN
        looked = idle[start : start + TURN] + idle[: max(0, start + TURN - len(idle))]
        return set(idle).difference(looked)

    def _new_files(self, seen: set[str] | None) -> bool:
        """The watcher saw a file change that is not followed and could be a log or config."""
        return seen is None or any(p.endswith(NEW_FILE_SUFFIXES) and p not in self._followed for p in seen)

    def _of_kind(self, kind: str) -> list[_Followed]:
        if self._kinds is None:
            self._kinds = {}
            for f in self._followed.values():
                self._kinds.setdefault(f.tracked.kind, []).append(f)
            roles = Counter(f.tracked.role for f in self._followed.values())
            self._crowded = [f for f in self._followed.values() if roles[f.tracked.role] > CROWD]
        return self._kinds.get(kind, [])

    def _ckpt_marks(self, ckpt_dir: str | None) -> tuple[int, ...]:
        """The mtimes of the checkpoint dir and of each save not yet whole: they move when a
        save starts, is renamed, or gains a file."""
        paths = [ckpt_dir] if ckpt_dir else []
        paths += [c.path for c in self.state.checkpoints.values() if not c.complete]
        out = []
        for p in paths:
            try:
                out.append(os.stat(p).st_mtime_ns)
            except OSError:
                out.append(-1)
        return tuple(out)

    def checkpoint_dir(self) -> str | None:
        """The checkpoint dir being listed, as the framework finds it (a note when it names
        one that is not on this machine)."""
        path, note = self.framework.checkpoint_dir(self.layout, self.state)
        if note and note not in self.state.notes:
            self.state.notes.append(note)
        return path

    # ---- files the run's own logs name --------------------------------------
    def _follow_named_logs(self) -> list[_Followed]:
        """Start following a log the run named (SkyRL's `infra-*.log`) once it exists."""
        added = []
        for path, role in self.framework.named_logs(self.state).items():
            resolved = resolve(path, self.layout.root, want_dir=False)
            if resolved is None or resolved in self._followed:
                continue
            self.layout.logs.append(Tracked(resolved, role, "log"))
            added.append(resolved)
        if added:
            self._sync_files()
        return [self._followed[p] for p in added]

    def close(self) -> None:
        for f in self._followed.values():  # a bulk read's grep children outlive a read
            f.tailer.close()

    def done(self) -> bool:
        """True when every followed file has been read to its end."""
        return all(f.tailer.offset >= f.tailer.size for f in self._followed.values())

    def progress(self) -> tuple[int, int]:
        read = sum(min(f.tailer.offset, f.tailer.size) for f in self._followed.values())
        total = sum(f.tailer.size for f in self._followed.values())
        return read, total

    def _rescan(self) -> None:
        try:
            fresh = rescan(self.layout)
        except OSError as e:
            self.state.notes.append(f"rescan failed: {e}")
            return
        if fresh.attempt_dir and self.layout.attempt_dir and fresh.attempt_dir != self.layout.attempt_dir:
            for path in [p for p, f in self._followed.items() if f.tracked.kind == "log"]:
                # `logs/latest` moved on within one poll: the old attempt's last lines (its
                # traceback, often) are read before it leaves.
                self._read(self._followed[path], None)
                self._drop(path)
            self.state.new_attempt(f"logs/latest → attempt_{fresh.attempt}", number=fresh.attempt)
        self.layout = fresh
        self.state.layout = fresh.layout
        self._sync_files()

    def _read(self, f: _Followed, max_bytes: int | None) -> bool:
        info = self.state.files[f.tracked.path]
        res = f.tailer.read(max_bytes)
        if res.restarted or res.drained or res.missing or res.error:
            f.changed_at = time.monotonic()
        elif res.bytes:
            # Changed when it was last written, not when runtop first read it: a run's old env
            # logs are idle from the start.
            age = time.time() - f.tailer.mtime if f.tailer.mtime is not None else 0.0
            f.changed_at = time.monotonic() - max(0.0, age)
        f.approximate = res.skimmed > 0
        info.size, info.mtime, info.bytes_read = f.tailer.size, f.tailer.mtime, f.tailer.offset
        info.lines_capped, info.restarts = f.tailer.capped, f.tailer.restarts
        info.error, info.not_regular = res.error, res.not_regular
        if res.missing and info.bytes_read and not res.lines:
            info.error = f"{f.tracked.path}: vanished (deleted or moved away)"
        if res.drained:
            # The last lines of the file before it was rotated or replaced: still the old context.
            self._fold_lines(f, res.drained, 0, eof=True)
        if res.restarted:
            if f.tracked.kind == "log":
                self._fold_records(f, f.assembler.flush())
            f.reset(self.state.batch_rollouts)
            if res.restarted != "rotated":  # logrotate moving the log aside is no relaunch
                info.fatal, info.fatals, info.active_after_fatal = None, [], False
                if f.tracked.kind in ("log", "metrics"):
                    # A metrics file started over (verl's file logger opens it `wb`): a relaunch.
                    self.state.new_attempt(f"{os.path.basename(f.tracked.path)} was {res.restarted}")
        if not res.lines:
            if res.eof and f.tracked.kind == "log" and f.assembler.pending():
                # The end reached with nothing new to hand on (the last chunk was all noise): the
                # record held back for continuation lines is complete (the newest vLLM stat line
                # was lost this way when the log ended in access lines).
                self._fold_records(f, f.assembler.flush())
                return True
            return bool(res.restarted) or bool(res.drained)
        self._fold_lines(f, res.lines, res.first_line, eof=res.eof)
        return True

    def _fold_lines(self, f: _Followed, lines: list[str], first_line: int, *, eof: bool) -> None:
        kind = f.tracked.kind
        if kind == "log":
            if f.collector == "":
                f.collector = collector_of(lines) if len(lines) >= 3 else ""
            if f.collector:
                lines = unwrap(lines, f.collector)  # docker's json-file, kubectl's timestamps: the run's own lines
            lines = self.framework.split_lines(lines)
            f.assembler.line_base = first_line
            records = f.assembler.feed(lines)
            if eof:
                records += f.assembler.flush()
            self._fold_records(f, records)
        elif kind == "metrics":
            self._fold_metrics(f, lines, first_line)
        else:
            step = f.tracked.step
            path = f.tracked.path
            for n, line in enumerate(lines, first_line):
                try:
                    ev = rollouts.parse_line(line, step, path)
                except Exception as e:  # noqa: BLE001 - a bad line is counted and named
                    ev = Unparsed(n, f"{type(e).__name__}: {str(e)[:120]}")
                if ev is not None:
                    self._apply(f, ev, n)

    def _apply(self, f: _Followed, ev: Event, line: int = 0) -> None:
        """Fold one event into the state; an event the state cannot fold is counted, not raised."""
        path = f.tracked.path
        try:
            if isinstance(ev, Unparsed) and (f.tailer.start_offset or f.approximate):
                where = f"counted from byte {f.tailer.start_offset}" if f.tailer.start_offset else ""
                where += ("; " if where else "") + ("near: progress lines were skipped" if f.approximate else "")
                ev = Unparsed(ev.line, f"{ev.reason} (line {where})")
            self.state.apply(ev, path)
        except Exception as e:  # noqa: BLE001 - the last guard between one bad line and a dead monitor
            self.state.apply(Unparsed(getattr(ev, "line", line), f"{type(e).__name__} folding {type(ev).__name__}: {str(e)[:120]}"), path)

    def _fold_records(self, f: _Followed, records: list[Record]) -> None:
        if not records:
            return
        path = f.tracked.path
        for ev in read_records(records, f.parse, f.batch, f.tracked.role):
            if isinstance(ev, StepColumns):
                self.state.fold_steps(ev, path)  # a batch of step lines (docs/reading.md, "Step lines in batches")
            else:
                self._apply(f, ev)
        if self.state.first_time is None and f.tailer.start_offset == 0:
            self.state.first_time = next((r.time for r in records if r.time), None)
        f.last_time = pane_lines(
            records, node_tag(f.tracked), f.last_time, self._poll_lines, os.path.relpath(path, self.layout.root), not f.tailer.start_offset
        )
        for rec in reversed(records):
            if rec.time:
                self.state.files[path].last_time = rec.time
                break

    def _fold_metrics(self, f: _Followed, lines: list[str], first_line: int = 1) -> None:
        path = f.tracked.path
        last = f.last_metric_step
        name = os.path.basename(path)
        for n, line in enumerate(lines, first_line):
            try:
                if f.tracked.role == CUSTOM:  # `--metrics FILE`: by its rows' names and the user's mapping
                    evs: list[Event] = parse_generic(line, path, self.layout.metrics_map)
                else:
                    evs = f.framework.metrics_line(line, path)
            except Exception as e:  # noqa: BLE001 - a bad row is counted and named
                evs = [Unparsed(n, f"{type(e).__name__}: {str(e)[:120]}")]
            for ev in evs:
                if isinstance(ev, StepMetrics):
                    prev = last.get(ev.role)
                    if prev is not None and ev.step < prev:
                        # The step counter went back: a relaunch appended to the same file.
                        self.state.new_attempt(f"{name} {ev.role} steps went back from {prev} to {ev.step}")
                    last[ev.role] = ev.step
                self._apply(f, ev, n)
