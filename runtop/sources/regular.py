"""Open only regular files: a FIFO, a directory or a device named like a log is said, never read.

A FIFO at `trainer.log` blocked every command in `open()` for ever (no writer ever came); a
`/dev/zero` link read without end; a directory was skipped and the death it hid went unseen.
Every open of a path a run names goes through here: the path is looked at first (a device is
never opened: opening one can do things), then opened with `O_NONBLOCK` (a FIFO that appears
in between cannot block the open) and checked again on the descriptor, which is what is read.
What is not a regular file raises `NotRegular`, an `OSError` whose `strerror` says what it is
(docs/reading.md, "Files that are not files").
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegular(OSError):
    """`path` exists but is not a regular file; `strerror` says what it is."""

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


def what_is(mode: int) -> str:
    """`a FIFO`, `a directory`, … (`a regular file` for one)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def _refuse(path: str, mode: int) -> NotRegular:
    what = what_is(mode)
    try:
        target = os.readlink(path)  # a link: where it leads is what a reader wants to know
    except OSError:
        target = None
    via = f" (a link to {target})" if target else ""
    return NotRegular(errno.EINVAL, f"is {what}{via}, not a regular file", path)


def check_regular(path: str) -> os.stat_result:
    """`os.stat(path)`, or `NotRegular` when it is something else than a regular file."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    return st


def open_regular(path: str, flags: int = 0) -> int:
    """A read-only descriptor of `path`, a regular file (else `NotRegular`; else `OSError`)."""
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)  # swapped between the look and the open
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_binary(path: str) -> IO[bytes]:
    """`open(path, "rb")` for a regular file only."""
    return os.fdopen(open_regular(path), "rb")


def open_text(path: str) -> IO[str]:
    """`open(path, encoding="utf-8", errors="replace")` for a regular file only."""
    return os.fdopen(open_regular(path), encoding="utf-8", errors="replace")


def exists_as_other(path: str) -> bool:
    """True when `path` exists (links followed) and is not a regular file: a FIFO, a directory,
    a device where a log should be (a role log like this is followed, to be said unreadable)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
