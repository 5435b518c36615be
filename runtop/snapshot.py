"""Read a whole run once (headless `runtop status` / `check`): discover, read every file,
look at processes and disks, judge."""

from __future__ import annotations

import time

from runtop.config import Thresholds
from runtop.discovery import discover, with_ckpt_dir
from runtop.health import HealthTracker, Verdict
from runtop.rules import Facts
from runtop.sources.disk import DiskSampler, core_roots, run_paths
from runtop.sources.deadline import Slow, call_with_deadline
from runtop.sources.processes import scan_run
from runtop.sources.run_reader import RunReader
from runtop.state import RunState

# Read in bounded chunks: memory holds one chunk of lines at a time, never a whole log.
CHUNK = 4 << 20


def read_run(path: str, *, processes: bool = True, ckpt_dir: str | None = None) -> RunState:
    return _read(path, processes=processes, ckpt_dir=ckpt_dir).state


def read_and_judge(path: str, *, ckpt_dir: str | None = None, cfg: Thresholds | None = None, processes: bool = True, disks: bool = True) -> tuple[RunState, Verdict]:
    """The run read once and judged with every rule (one disk sample: no growth rate yet)."""
    reader = _read(path, processes=processes, ckpt_dir=ckpt_dir)
    return reader.state, RunJudge(reader, cfg, disks=disks).verdict()


class RunJudge:
    """Judges a reader's state with the rules, the run's processes and its disks.

    Kept across check-ins (`runtop watch`), it remembers when each finding began and
    samples the disks often enough for a growth rate; used once, it is `runtop check`.
    """

    def __init__(self, reader: RunReader, cfg: Thresholds | None = None, *, disks: bool = True) -> None:
        self.reader = reader
        self.tracker = HealthTracker(cfg)
        lay = reader.layout
        self.disks = DiskSampler(run_paths(lay.root, None), core_roots(lay.framework, lay.root)) if disks else None

    def verdict(self) -> Verdict:
        disk = None
        if self.disks is not None:
            self.disks.set_path("checkpoint dir", self.reader.checkpoint_dir())
            disk = self.disks.sample()
        return self.tracker.evaluate(Facts(self.reader.state, time.time(), self.tracker.cfg, disk=disk))


def read_all(reader: RunReader) -> None:
    """Read every file to its end, in bounded chunks (no rescans: the layout is fresh)."""
    while True:
        read = reader.poll(max_bytes=CHUNK, rescan_every=float("inf"), ckpt_every=float("inf"))
        if reader.done() or not read:
            break  # done, or nothing more could be read (a file vanished): report what we have


# A process scan can hang on /proc of a process in D state (NFS): past this, judge without it.
PROCESS_SCAN_S = 10.0


def look_at_processes(reader: RunReader) -> None:
    s = reader.state
    try:
        s.processes, s.process_denied = call_with_deadline(
            "process scan", lambda: scan_run(reader.layout.root, [t.path for t in reader.layout.logs]), PROCESS_SCAN_S
        )
    except Slow as e:
        s.processes, s.process_denied = None, {}
        if str(e) not in s.notes:
            s.notes.append(str(e))


def _read(path: str, *, processes: bool, ckpt_dir: str | None) -> RunReader:
    reader = RunReader(with_ckpt_dir(discover(path), ckpt_dir))
    read_all(reader)
    if processes:
        look_at_processes(reader)
    return reader
