"""Append a check-in to `STATUS.md`: never overwrite, never interleave.

The runbooks keep one `STATUS.md` per run that people and agents append to. Each entry
is written with one `write` on an `O_APPEND` descriptor under an exclusive `flock`, so
two writers (a cron `runtop status --append` and the TUI's `s`) never interleave, and an
existing file is never truncated; a missing one is created. A symlinked STATUS.md is
refused, and an entry is whole or absent: on a full disk nothing torn stays behind
(`runtop.sources.writes`).
"""

from __future__ import annotations

import os

from runtop.sources.writes import append_locked


def status_path(run_root: str) -> str:
    return os.path.join(run_root, "STATUS.md")


def append_checkin(path: str, entry: str) -> int:
    """Append `entry` (a markdown section) to `path` inside its run dir; returns the bytes
    written. Raises `OutputError` (one line) when it cannot."""
    text = entry if entry.endswith("\n") else entry + "\n"
    return append_locked(path, text, inside=os.path.dirname(os.path.abspath(path)), separate=True)
