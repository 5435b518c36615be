"""Append a check-in to `STATUS.md`: never overwrite, never interleave.

The runbooks keep one `STATUS.md` per run that people and agents append to. Each entry
is written with one `write` on an `O_APPEND` descriptor under an exclusive `flock`, so
two writers (a cron `runtop status --append` and the TUI's `s`) never interleave, and an
existing file is never truncated; a missing one is created.
"""

from __future__ import annotations

import fcntl
import os


def status_path(run_root: str) -> str:
    return os.path.join(run_root, "STATUS.md")


def append_checkin(path: str, entry: str) -> int:
    """Append `entry` (a markdown section) to `path`; returns the bytes written."""
    text = entry if entry.endswith("\n") else entry + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # Separate from what is there: a blank line unless the file is empty or already ends in one.
            size = os.fstat(fd).st_size
            prefix = ""
            if size:
                with open(path, "rb") as f:
                    f.seek(max(0, size - 2))
                    tail = f.read()
                prefix = "" if tail.endswith(b"\n\n") else ("\n" if tail.endswith(b"\n") else "\n\n")
            data = (prefix + text).encode("utf-8")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
            return len(data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
