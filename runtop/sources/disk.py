"""Disk pressure: the filesystems a run fills, how fast, and core dumps
(docs/incidents.md#sigbus-save-core-dumps).

Checkpoint saves can push `/dev/shm` to 70 % of a 512 GB tmpfs and SIGBUS when it is
full; core dumps under Ray's session dirs filled what was left of a 369 GB root (the same
incident), and the next save then wrote only `common.pt`. So: `/dev/shm`, the root
filesystem, the output dir's and the checkpoint dir's, each once (several labels can share
one filesystem), with a growth rate and a time-to-full from recent samples.
"""

from __future__ import annotations

import glob
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field

from runtop.sources.walk import Walk

CORE_RE = re.compile(r"core(?:\.\d+)?$")
CORE_GLOBS = ("/tmp/ray/session_*/runtime_resources/working_dir_files",)
MAX_WALK = 5000  # entries looked at per core-dump search: the run dir can hold checkpoints with thousands of shards
HISTORY = 30


@dataclass(frozen=True, slots=True)
class DiskUsage:
    labels: tuple[str, ...]
    path: str
    total: int
    used: int
    free: int
    growth_bps: float | None  # bytes per second over the recent samples (None: too few)
    full_in_s: float | None  # at that rate (None: not growing)

    @property
    def pct(self) -> float:
        """Used share as `df` shows it: of what non-root users can have (reserved blocks left out)."""
        room = self.used + self.free
        return 100.0 * self.used / room if room else 0.0


@dataclass
class DiskSnapshot:
    disks: list[DiskUsage] = field(default_factory=list)
    core_dumps: list[tuple[str, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    taken_at: float = 0.0


def find_core_dumps(roots: list[str], limit: int = MAX_WALK) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    seen = 0
    for root in roots:
        # Checkpoint shards are many and never core dumps: their directories are not entered.
        walk = Walk(root, max_entries=limit - seen, prune=lambda d: d.startswith(("global_step_", "step_", "policy")))
        found += [(f.path, f.size) for f in walk if CORE_RE.match(f.name)]
        seen += walk.seen
        if seen >= limit:
            break
    return found


class DiskSampler:
    def __init__(self, paths: list[tuple[str, str]], core_roots: list[str] | None = None) -> None:
        """`paths`: (label, path) to watch; `core_roots`: where to look for core dumps."""
        self.paths = list(paths)
        self.core_roots = core_roots or []
        self._history: dict[int, deque[tuple[float, int]]] = {}  # device → (time, bytes used)

    def set_path(self, label: str, path: str | None) -> None:
        self.paths = [(lbl, p) for lbl, p in self.paths if lbl != label]
        if path:
            self.paths.append((label, path))

    def sample(self, now: float | None = None) -> DiskSnapshot:
        now = time.time() if now is None else now
        snap = DiskSnapshot(taken_at=now)
        by_dev: dict[int, tuple[list[str], str, os.statvfs_result]] = {}
        for label, path in self.paths:
            try:
                dev = os.stat(path).st_dev
                if dev not in by_dev:
                    by_dev[dev] = ([], path, os.statvfs(path))
                by_dev[dev][0].append(label)
            except OSError as e:
                snap.errors.append(f"{label} {path}: {e.strerror or e}")
        for dev, (labels, path, st) in by_dev.items():
            total = st.f_blocks * st.f_frsize
            free = st.f_bavail * st.f_frsize
            used = total - st.f_bfree * st.f_frsize
            hist = self._history.setdefault(dev, deque(maxlen=HISTORY))
            hist.append((now, used))
            growth = full_in = None
            if len(hist) >= 2 and hist[-1][0] > hist[0][0]:
                growth = (hist[-1][1] - hist[0][1]) / (hist[-1][0] - hist[0][0])
                if growth > 0:
                    full_in = free / growth
            snap.disks.append(DiskUsage(tuple(labels), path, total, used, free, growth, full_in))
        roots = list(self.core_roots)
        for pattern in CORE_GLOBS:
            roots.extend(glob.glob(pattern))
        snap.core_dumps = find_core_dumps(roots)
        return snap


def run_paths(root: str, ckpt_dir: str | None) -> list[tuple[str, str]]:
    """The filesystems a run fills, by label: /dev/shm, root, its output dir, its checkpoints."""
    paths = [("/dev/shm", "/dev/shm"), ("root", "/"), ("output dir", root)]
    if ckpt_dir:
        paths.append(("checkpoint dir", ckpt_dir))
    return [(label, p) for label, p in paths if os.path.isdir(p)]


def sample_run(root: str, core_roots: list[str], ckpt_dir: str | None) -> DiskSnapshot:
    """One sample of a run's disks and core dumps (where its plug-in says they land,
    `Framework.core_roots`), as the engine's probe takes it (for a command that reads the run
    once: `runtop send resume` checks the disk before it types)."""
    return DiskSampler(run_paths(root, ckpt_dir if ckpt_dir and os.path.isdir(ckpt_dir) else None), core_roots).sample()
