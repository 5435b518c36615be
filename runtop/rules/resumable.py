"""Could a resume succeed now? One answer for the next step runtop advises, the screen's `R`
and `runtop send resume` (docs/design.md, "Advice that would work").

A resume typed onto the full disk that killed the run dies at its first save, and one typed
while the run's processes live sits in the launcher's tty until they exit. So a resume is
refused, in one line, while a disk the run writes to has less room than its next save needs,
while the core dumps that filled the disk are still there after a death of a full disk, or
while the run's processes still run (restart stops them first). A cause that recurs unless a
setting changes (a GPU out of memory) does not refuse it: the change may be in a config file
runtop cannot see; the next step names the change first and the confirmation says so.

runtop never deletes: what could go is named here with sizes and paths, for the researcher.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from runtop.parsers.checkpoints import Problem
from runtop.parsers.hygiene import shown
from runtop.sources.disk import DiskSnapshot, DiskUsage
from runtop.state.parts import Checkpoint, ErrorEntry
from runtop.state.run import RunState
from runtop.units import human_bytes

NO_SPACE = "NoSpaceLeft"
# Old checkpoints named as reclaimable are those beyond the run's own retention, else beyond
# the last two (the resume point and the one before it, in case the newest proves bad).
KEEP_WITHOUT_RETENTION = 2
# The least room a resume needs where no checkpoint size is known: logs, Ray's session files.
ROOM_FLOOR = 1 << 30
# A save that failed, or one interrupted when the run died: its files are no checkpoint.
BROKEN = (Problem.FAILED_SAVE, Problem.MISSING_PART, Problem.IN_PROGRESS)
# Where the run writes: its checkpoints and logs; the root filesystem (/tmp, Ray's session dirs).
# /dev/shm is a tmpfs emptied as the processes exit: its size is the SIGBUS advice's, not a refusal.
WRITTEN = ("checkpoint dir", "output dir", "root")


@dataclass
class Reclaimable:
    """What could be deleted to free space, largest first in each kind."""

    core_dumps: list[tuple[str, int]] = field(default_factory=list)
    broken: list[Checkpoint] = field(default_factory=list)  # failed or interrupted saves
    old: list[Checkpoint] = field(default_factory=list)  # complete, beyond retention
    keep: int = KEEP_WITHOUT_RETENTION
    keep_from_config: bool = False

    @property
    def total(self) -> int:
        return sum(n for _, n in self.core_dumps) + sum(c.bytes for c in self.broken + self.old)

    def text(self) -> str:
        """`9.0 GB of core dumps (core.67012 9.0 GB in /tmp/ray/…/working_dir_files); in /mnt/ckpts:
        the failed save global_step_4 (421.0 KB), global_step_2 beyond the last two (6.0 GB)`.
        Paths whole: they are what the researcher deletes."""
        parts = [core_dump_text(self.core_dumps)] if self.core_dumps else []
        ckpts = []
        if self.broken:
            names = ", ".join(shown(os.path.basename(c.path)) for c in self.broken)
            noun = "save" if len(self.broken) == 1 else "saves"
            ckpts.append(f"the failed {noun} {names} ({human_bytes(sum(c.bytes for c in self.broken))})")
        if self.old:
            names = ", ".join(shown(os.path.basename(c.path)) for c in self.old)
            beyond = f"keep_last={self.keep}" if self.keep_from_config else ("the last two" if self.keep == 2 else f"the last {self.keep}")
            ckpts.append(f"{names} beyond {beyond} ({human_bytes(sum(c.bytes for c in self.old))})")
        if ckpts:
            folders = sorted({shown(os.path.dirname(c.path)) for c in self.broken + self.old})
            parts.append(f"in {', '.join(folders)}: " + ", ".join(ckpts))
        return "; ".join(parts)


def core_dump_text(dumps: list[tuple[str, int]], most: int = 3) -> str:
    """`9.0 GB of core dumps (core.67012 9.0 GB in /tmp/ray/…/working_dir_files)`: by folder, largest first."""
    total = sum(n for _, n in dumps)
    by_dir: dict[str, list[tuple[str, int]]] = {}
    for path, n in sorted(dumps, key=lambda d: -d[1]):
        by_dir.setdefault(shown(os.path.dirname(path)), []).append((shown(os.path.basename(path)), n))
    places = []
    for folder, files in by_dir.items():
        listed = ", ".join(f"{name} {human_bytes(n)}" for name, n in files[:most])
        more = f", {len(files) - most} more" if len(files) > most else ""
        places.append(f"{listed}{more} in {folder}")
    # The size and the names first: the band is one line, and its end is what gets cut.
    return f"{human_bytes(total)} of core dumps (" + "; ".join(places) + ")"


def reclaimable(state: RunState, running: bool = False) -> Reclaimable:
    """What runtop can name to free space. A save in progress is left out while the run runs."""
    disk: DiskSnapshot | None = state.disk
    keep = state.keep_last if state.keep_last and state.keep_last > 0 else KEEP_WITHOUT_RETENTION
    complete = sorted((c for c in state.checkpoints.values() if c.complete), key=lambda c: c.step)
    broken_kinds = [p for p in BROKEN if not (running and p is Problem.IN_PROGRESS)]
    return Reclaimable(
        core_dumps=list(disk.core_dumps) if disk is not None else [],
        broken=sorted((c for c in state.checkpoints.values() if not c.complete and c.problem in broken_kinds), key=lambda c: c.step),
        old=complete[:-keep] if len(complete) > keep else [],
        keep=keep,
        keep_from_config=bool(state.keep_last),
    )


def no_space(e: ErrorEntry) -> bool:
    return NO_SPACE in (e.signature, e.kind) or "No space left on device" in e.message


def shm_full(e: ErrorEntry) -> bool:
    """ENOSPC from NCCL creating its shared memory: /dev/shm is too small, no disk is full."""
    return no_space(e) and ("nccl" in f"{e.kind} {e.message}".lower() or "/dev/shm" in e.message)


def full_disk_death(state: RunState) -> ErrorEntry | None:
    """The death that says a disk was full (`[Errno 28] No space left on device`), if any."""
    return next((e for e in state.open_fatals() if no_space(e) and not shm_full(e)), None)


def room_needed(state: RunState) -> int:
    """What the next save writes: about the size of the last complete checkpoint (1 GiB at least)."""
    ckpt = state.last_complete_checkpoint()
    return max(ROOM_FLOOR, ckpt.bytes if ckpt is not None else 0)


def short_disks(state: RunState, disk: DiskSnapshot | None = None) -> list[tuple[DiskUsage, int]]:
    """The filesystems the run writes to that have less room than it needs: (usage, needed).
    The checkpoints' filesystem needs a checkpoint's size; the others the floor. `disk`: the
    run's disks (default: as the engine last sampled them, `state.disk`)."""
    disk = disk if disk is not None else state.disk
    if disk is None:
        return []
    ckpt_label = "checkpoint dir" if any("checkpoint dir" in u.labels for u in disk.disks) else "output dir"
    out = []
    for u in disk.disks:
        if not any(label in WRITTEN for label in u.labels):
            continue
        need = room_needed(state) if ckpt_label in u.labels else ROOM_FLOOR
        if u.free < need:
            out.append((u, need))
    return out


def disk_text(u: DiskUsage) -> str:
    """`the checkpoint dir (/mnt/ckpt) has 1.2 GB free of 369.0 GB`."""
    return f"the {', '.join(u.labels)} ({u.path}) has {human_bytes(u.free)} free of {human_bytes(u.total)}"


def disk_refusal(state: RunState, disk: DiskSnapshot | None = None) -> str | None:
    """Why a resume now would die of a full disk again, in one line; None when the disks allow it,
    or were not looked at (a plan samples them before it types: `actions.Context.disk`)."""
    disk = disk if disk is not None else state.disk
    if disk is None:
        return None
    short = short_disks(state, disk)
    if short:
        u, need = short[0]
        return f"{disk_text(u)}, less than the next save needs ({human_bytes(need)}): free space first"
    if full_disk_death(state) is not None and disk.core_dumps:
        total = sum(n for _, n in disk.core_dumps)
        return f"the run died of a full disk and its core dumps ({human_bytes(total)}) are still there: free space first"
    return None


def running_roles(state: RunState) -> list[str]:
    """The run's roles with a live process, as the last process scan saw them (Ray's own daemons aside)."""
    return sorted(r for r, pids in (state.processes or {}).items() if pids and r != "ray")


def resume_refusal(state: RunState) -> str | None:
    """Why `R` cannot succeed now, in one line; None when a resume could. The screen hides the key
    meanwhile; `runtop send resume` says this and exits non-zero (the plan's own checks follow)."""
    running = running_roles(state)
    if running:
        return f"the run is still running ({', '.join(running)}): stop it first (X), or restart (T)"
    if state.last_complete_checkpoint() is None:
        partial = sorted(state.checkpoints)
        return "no complete checkpoint to resume from" + (f" (incomplete: {', '.join(map(str, partial))})" if partial else "")
    return disk_refusal(state)
