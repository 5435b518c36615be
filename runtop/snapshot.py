"""Read a whole run once (headless `runtop status` / `check`): discover, read every file,
look at processes and disks, judge."""

from __future__ import annotations

import os
import time

from runtop.config import Thresholds
from runtop.discovery import discover, with_ckpt_dir
from runtop.health import Verdict, judge
from runtop.rules import Facts
from runtop.sources.disk import DiskSampler
from runtop.sources.processes import run_processes
from runtop.sources.run_reader import RunReader
from runtop.state import RunState

# Read in bounded chunks: memory holds one chunk of lines at a time, never a whole log.
CHUNK = 4 << 20


def read_run(path: str, *, processes: bool = True, ckpt_dir: str | None = None) -> RunState:
    return _read(path, processes=processes, ckpt_dir=ckpt_dir)[0]


def read_and_judge(path: str, *, ckpt_dir: str | None = None, cfg: Thresholds | None = None, processes: bool = True, disks: bool = True) -> tuple[RunState, Verdict]:
    """The run read once and judged with every rule (one disk sample: no growth rate yet)."""
    state, reader = _read(path, processes=processes, ckpt_dir=ckpt_dir)
    disk = None
    if disks:
        paths = [("/dev/shm", "/dev/shm"), ("root", "/"), ("output dir", reader.layout.root)]
        ck = reader.checkpoint_dir()
        if ck:
            paths.append(("checkpoint dir", ck))
        disk = DiskSampler([(lbl, p) for lbl, p in paths if os.path.exists(p)], core_roots=core_roots(reader.layout)).sample()
    facts = Facts(state, time.time(), cfg or Thresholds(), disk=disk)
    return state, judge(state, facts)


def core_roots(layout) -> list[str]:
    """Where a run's core dumps land: its dir (a SkyRL log's dir is `logs/`: look beside it too)."""
    root = layout.root
    if layout.framework == "skyrl" and os.path.basename(root) == "logs":
        return [os.path.dirname(root)]
    return [root]


def _read(path: str, *, processes: bool, ckpt_dir: str | None) -> tuple[RunState, RunReader]:
    reader = RunReader(with_ckpt_dir(discover(path), ckpt_dir))
    # One pass: no rescans (the layout is fresh); checkpoints are listed on the first poll.
    while True:
        read = reader.poll(max_bytes=CHUNK, rescan_every=float("inf"), ckpt_every=float("inf"))
        if reader.done() or not read:
            break  # done, or nothing more could be read (a file vanished): report what we have
    if processes:
        reader.state.processes = run_processes(reader.layout.root, [t.path for t in reader.layout.logs])
    return reader.state, reader
