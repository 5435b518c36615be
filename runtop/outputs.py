"""Files runtop appends to (STATUS.md, the audit log): only where it means to write.

Issue 10: a `STATUS.md` or `.runtop/audit.log` symlinked outside the run was followed
and appended to; a read-only or directory STATUS.md killed `watch` with exit 70. Each
append opens with `O_NOFOLLOW` (a symlink is refused, not followed), checks that the
file's directory really lies inside the run dir, and fails with one line.
"""

from __future__ import annotations

import errno
import fcntl
import os

from runtop.parsers.hygiene import public


class OutputError(Exception):
    """A file runtop cannot or will not append to; the message is one line."""


def _inside(path: str, root: str) -> bool:
    real_root = os.path.realpath(root)
    real_dir = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    return real_dir == real_root or real_dir.startswith(real_root + os.sep)


def open_append(path: str, inside: str | None = None) -> int:
    """An `O_APPEND` descriptor on `path`, created 0644 if missing. `inside`: the dir the
    file must lie in after every symlink of its parents is resolved."""
    name = os.path.basename(path) or path
    if inside is not None and not _inside(path, inside):
        raise OutputError(f"refusing to write {path}: its directory leads outside {inside} (a symbolic link)")
    try:
        return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OutputError(f"refusing to write {path}: {name} is a symbolic link") from None
        if e.errno == errno.EISDIR:
            raise OutputError(f"cannot write {path}: {name} is a directory") from None
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None


def append_locked(path: str, text: str, *, inside: str | None = None, separate: bool = False) -> int:
    """Append `text` (made printable, secrets hidden) in one `write` under an exclusive
    `flock`; with `separate`, a blank line goes before it unless the file is empty or
    already ends in one. Returns the bytes written."""
    fd = open_append(path, inside)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            prefix = ""
            size = os.fstat(fd).st_size
            if separate and size:
                tail = os.pread(fd, 2, max(0, size - 2))
                prefix = "" if tail.endswith(b"\n\n") else ("\n" if tail.endswith(b"\n") else "\n\n")
            data = (prefix + public(text)).encode("utf-8")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
            return len(data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)

