"""Files runtop appends to (STATUS.md, the audit log): only where it means to write.

A `STATUS.md` or `.runtop/audit.log` symlinked outside the run was once followed
and appended to; a read-only or directory STATUS.md killed `watch` with exit 70. Each
append opens with `O_NOFOLLOW` (a symlink is refused, not followed), checks that the
file's directory really lies inside the run dir, and fails with one line.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile

from runtop.parsers.hygiene import public
from runtop.sources.regular import what_is


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
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
        # A FIFO there takes 64 KB of check-ins and then blocks the writer for ever; a device is never opened.
        raise OutputError(f"cannot write {path}: {name} is {what_is(st.st_mode)}, not a regular file")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OutputError(f"refusing to write {path}: {name} is a symbolic link") from None
        if e.errno == errno.EISDIR:
            raise OutputError(f"cannot write {path}: {name} is a directory") from None
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # swapped in between the look and the open
        os.close(fd)
        raise OutputError(f"cannot write {path}: {name} is {what_is(mode)}, not a regular file")
    return fd


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



def replace_json(run_root: str, name: str, obj: object) -> bool:
    """Write `RUN/.runtop/NAME` whole (a JSON document), or nothing. `.runtop` must be a real
    directory inside the run; the temporary file is created exclusively (never through a
    link an attacker planted) and renamed over NAME (a link there is replaced, not followed).
    False where the run dir cannot take it (read-only, `.runtop` a link): a record is a
    convenience, never a reason to fail."""
    d = os.path.join(run_root, ".runtop")
    try:
        os.makedirs(d, mode=0o755, exist_ok=True)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or not _inside(os.path.join(d, name), run_root):
            return False
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=d)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(d, name))
        return True
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def read_json(run_root: str, name: str, limit: int = 64 << 10) -> object | None:
    """`RUN/.runtop/NAME` as JSON, or None (missing, a link, too big, not JSON)."""
    try:
        fd = os.open(os.path.join(run_root, ".runtop", name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO or a device planted there is never read
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    try:
        doc: object = json.loads(data)
    except ValueError:
        return None
    return doc
