"""A fleet of runs followed at once: one engine per run, stepped gently by one
thread, and a row per run for the runs table and `status --all`.

A run not being looked at needs its verdict, not its every line: its engine reads at most
one bounded slice per `interval` (10 s by default), asks for processes at that pace, and
skips the GPU and disk probes (one machine's GPUs are no run's news in a fleet; the run's
own view has them once opened). The thread steps one engine at a time, so twenty runs
cost one core's small share, not twenty threads'.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from runtop.config import Thresholds
from runtop.engine.engine import Engine
from runtop.fleet.compare import latest_values
from runtop.frameworks.discovery import DiscoveryError, discover
from runtop.parsers.hygiene import shown
from runtop.sources.regular import open_text
from runtop.view.view import View

# Worst first: a dead run, one runtop cannot read, a degraded one, one it cannot judge yet.
TROUBLE = {"Down": 0, "cannot read": 1, "Degraded": 2, "Unknown": 3, "Healthy": 4, "Finished": 5}
FLEET_INTERVAL_S = 10.0
# A /proc walk per run is the fleet's largest cost: each run's processes are looked at this often.
FLEET_PROCESS_S = 30.0
BACK = -1  # a run's view exits with this to return to the runs table
# The directories of runs are looked in this often: a new run is in the table at its next
# refresh (the table's own is 2 s); a listing of a directory costs next to nothing.
FLEET_RESCAN_S = 2.0
NOT_A_RUN_RETRY_S = 10.0
# A row's metric values: the newest value of each within this many steps (a row is made often).
LATEST_ROWS = 50


@dataclass(frozen=True)
class RunRow:
    path: str
    name: str  # the run dir's name: what tells runs of one config apart (their run_name is often one)
    framework: str
    verdict: str  # a verdict word, or "cannot read"
    cause: str
    step: int | None = None
    max_steps: int | None = None
    eta_s: float | None = None
    last_write: float | None = None  # wall time of the newest write to its logs
    attempt: int | None = None
    read: float = 1.0  # fraction of its history read
    latest: Mapping[str, float] = field(default_factory=dict)  # each metric's last value (the table's metric columns)

    @property
    def trouble(self) -> int:
        return TROUBLE.get(self.verdict, 9)


def is_single_run(path: str) -> bool:
    """`path` is one run by a framework's evidence: a directory of runs that also holds a stray
    text file (notes, a README) is not itself one generically read run."""
    try:
        return os.path.abspath(discover(path, generic=False).root) == os.path.abspath(path)
    except DiscoveryError:
        return False  # not a run itself: perhaps a directory of them


def subdirs(path: str) -> list[str]:
    """`path`'s subdirectories, hidden ones left out, sorted; none when it cannot be listed."""
    try:
        return sorted(os.path.join(path, n) for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)) and not n.startswith("."))
    except OSError:
        return []


def is_run(path: str) -> bool:
    try:
        discover(path, generic=False)
    except DiscoveryError:
        return False
    return True


def runs_in(path: str) -> list[str]:
    """The runs under `path`: `path` itself when it is one run; else each subdirectory runtop
    recognises (an output dir of runs)."""
    if is_single_run(path):
        return [path]  # a run dir (its logs/ or checkpoints/ are not runs of their own)
    if not os.path.isdir(path):
        return [path]
    return [sub for sub in subdirs(path) if is_run(sub)] or [path]


def dirs_of_runs(paths: Sequence[str]) -> list[str]:
    """The paths that are directories of runs (not one run): the fleet looks in them again, so a
    run started there after runtop opened joins the table."""
    return [p for p in paths if os.path.isdir(p) and not is_single_run(p)]


def runs_of(paths: Sequence[str], runs_file: str | None = None) -> list[str]:
    """Every run named: each path's runs, then each line of `--runs FILE` (blank and `#` lines
    skipped), once each, in order."""
    named = list(paths)
    if runs_file is not None:
        try:
            with open_text(runs_file) as f:
                named += [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
        except OSError as e:
            raise DiscoveryError(f"--runs {runs_file}: {e.strerror or e}") from None
    out: list[str] = []
    seen: set[str] = set()
    for p in named:
        for run in runs_in(p):
            key = os.path.realpath(run)
            if key not in seen:
                seen.add(key)
                out.append(run)
    return out


def row_of(path: str, engine: Engine | None, error: str | None = None) -> RunRow:
    name = shown(os.path.basename(os.path.normpath(path)) or path)
    if engine is None or error:
        # Never opened, or its last reading failed: a stale verdict would read as today's.
        return RunRow(path, name, engine.state.framework if engine is not None else "?", "cannot read", error or "")
    with engine.lock:
        s, v = engine.state, engine.shown_verdict  # "reading" until its first read is judged, not "nothing read"
        writes = s.write_times()
        return RunRow(
            path, name, s.framework, v.verdict, v.reasons[0] if v.reasons else "", s.step, s.max_steps,
            s.eta_s(), max(writes) if writes else None, s.attempt, engine.live.backfill_progress(),
            latest_values(s, most=LATEST_ROWS),
        )


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


class Fleet:
    """The runs and their engines; `rows()` from any thread. Each run's row is made on the
    fleet's thread after its engine stepped: the table's refresh reads finished rows and never
    waits on an engine's lock while it reads a slice."""

    def __init__(self, paths: Sequence[str], *, interval: float = FLEET_INTERVAL_S, thresholds: Thresholds | None = None,
                 poll: bool = True, make: Callable[[str], Engine] | None = None, roots: Sequence[str] = (),
                 rescan_s: float = FLEET_RESCAN_S) -> None:
        self.interval = interval
        self.paths = list(paths)
        # Directories of runs looked in again every `rescan_s`: a run started there later joins,
        # a run whose directory was removed leaves (the table showed 10 of 27 runs all day).
        self.roots = list(roots)
        self.rescan_s = rescan_s
        self._thresholds, self._poll, self._make = thresholds, poll, make
        self.engines: dict[str, Engine | None] = {}
        self.errors: dict[str, str] = {}
        self._last: dict[str, float] = {}
        self._not_runs: dict[str, tuple[float, float]] = {}  # dir → (its mtime, when it was found no run)
        self._scanned = time.monotonic()
        self._scan_now = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.open: str | None = None  # the run being looked at: its own view reads it
        # The runs a compare screen charts: their engines publish frozen views (`chart`).
        self.charted: frozenset[str] = frozenset()
        for path in self.paths:
            self._open(path)
        self._rows: dict[str, RunRow] = {}
        self.refresh_rows()

    def _open(self, path: str) -> None:
        try:
            self.engines[path] = self._make(path) if self._make else Engine(
                discover(path), interval=self.interval, poll=self._poll, thresholds=self._thresholds, disks=False, gpus=False,
                vllm_url=None, publishing=False, process_period=max(self.interval, FLEET_PROCESS_S),
            )
        except DiscoveryError as e:
            self.engines[path], self.errors[path] = None, str(e)
        except Exception as e:  # noqa: BLE001 - one run that cannot be opened is a row saying why, never a dead table
            self.engines[path], self.errors[path] = None, f"{type(e).__name__}: {e}"

    def refresh_rows(self) -> None:
        """Make every run's row again from its engine (on the thread that steps them)."""
        # A new dict, swapped in whole: the table's thread reads the old one meanwhile.
        self._rows = {path: row_of(path, engine, self.errors.get(path)) for path, engine in self.engines.items()}

    def rescan_soon(self) -> None:
        """`r` in the table: look in the directories of runs at the fleet thread's next turn."""
        self._scan_now.set()

    def rescan(self, now: float | None = None) -> bool:
        """Look in the directories of runs again: open each new run, drop each gone one. True
        when the runs changed. On the fleet's thread (opening a run reads its first files)."""
        now = time.monotonic() if now is None else now
        self._scanned = now
        self._scan_now.clear()
        changed = False
        known = {os.path.realpath(p) for p in self.engines}
        for root in self.roots:
            for sub in subdirs(root):
                if sub in self.engines or os.path.realpath(sub) in known:
                    continue
                if not self._worth_a_look(sub, now):
                    continue
                if not is_run(sub):
                    self._not_runs[sub] = (_mtime(sub), now)
                    continue
                self._not_runs.pop(sub, None)
                self._open(sub)
                self.paths.append(sub)
                changed = True
        for path in [p for p in self.engines if p != self.open and not os.path.exists(p)]:
            engine = self.engines.pop(path)
            self.errors.pop(path, None)
            self._last.pop(path, None)
            self.paths.remove(path)
            if engine is not None:
                engine.close()
            changed = True
        if changed:
            self.refresh_rows()
        return changed

    def _worth_a_look(self, sub: str, now: float) -> bool:
        """A directory found to be no run is looked at again when it changed, or a while later
        (a run's first log may be created empty and filled after)."""
        seen = self._not_runs.get(sub)
        return seen is None or seen[0] != _mtime(sub) or now - seen[1] >= NOT_A_RUN_RETRY_S

    def step_due(self, now: float | None = None) -> int:
        """Step each engine whose turn has come (not the open run's); how many were stepped."""
        now = time.monotonic() if now is None else now
        n = 0
        for path, engine in self.engines.items():
            if engine is None or path == self.open or now - self._last.get(path, float("-inf")) < self.interval:
                continue
            if engine.live.reader.done() and engine.live.backfill_progress() >= 1.0:
                self._last[path] = now  # caught up: its next turn is an interval away (else: next round)
            try:
                engine.step()
                self.errors.pop(path, None)
            except Exception as e:  # noqa: BLE001 - one broken run never takes the fleet down
                self.errors[path] = f"{type(e).__name__}: {e}"
            self._rows[path] = row_of(path, engine, self.errors.get(path))
            n += 1
            if self._stop.is_set():
                break
        return n

    def rows(self) -> list[RunRow]:
        rows = list(self._rows.values())
        rows.sort(key=lambda r: (r.trouble, -(r.last_write or 0.0), r.name))
        return rows

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="runtop-fleet", daemon=True)
            self._thread.start()

    def chart(self, paths: Sequence[str]) -> None:
        """The runs a screen charts now (any thread): the fleet's thread makes their engines
        publish frozen views within half a second, and stops the others'."""
        self.charted = frozenset(paths)

    def publish_charted(self) -> None:
        """Charted runs publish, the rest do not (on the thread that steps the engines)."""
        charted = self.charted
        for path, engine in self.engines.items():
            if engine is not None and engine.publishing != (path in charted):
                engine.set_publishing(path in charted)

    def views(self, paths: Sequence[str]) -> dict[str, View]:
        """The newest frozen view of each charted run that has one (any thread, no lock)."""
        out = {}
        for path in paths:
            engine = self.engines.get(path)
            view = engine.published if engine is not None else None
            if view is not None:
                out[path] = view
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.roots and (self._scan_now.is_set() or time.monotonic() - self._scanned >= self.rescan_s):
                try:
                    self.rescan()
                except Exception:  # noqa: BLE001 - a directory that cannot be looked in keeps the runs already shown
                    self._scanned = time.monotonic()
            self.publish_charted()
            if not self.step_due():
                self._scan_now.wait(0.5)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for engine in self.engines.values():
            if engine is not None:
                engine.close()


def run_name(run: str) -> str:
    """A run as a row names it: its directory's name, on one line (`evil\\nHealthy`: a newline
    in a run dir's name once forged a row of `status --all`)."""
    return shown(os.path.basename(run.rstrip(os.sep)) or run)


def run_names(runs: list[str], most: int = 4) -> str:
    return ", ".join(run_name(r) for r in runs[:most]) + (", …" if len(runs) > most else "")
