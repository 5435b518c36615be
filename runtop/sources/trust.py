"""What of a run dir runtop believes: a file that chooses what runtop types or runs
(`.runtop/launch.json`, a batch script, the job log that names a job) counts only if it, and
the directory it is in, belong to the user running runtop and are writable by no one else;
else `Untrusted` says why, in one line (docs/design.md, "The run dir is untrusted").
Files are opened link by link below the run dir, `O_NOFOLLOW | O_NONBLOCK`, regular files only.
`runtop.sources.writes` writes; this module reads.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class Untrusted(Exception):
    """A file in the run dir runtop will not believe, and why (one line)."""


def _who(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def loose(st: os.stat_result, what: str) -> str | None:
    """Why `what` (a file or a directory) cannot be trusted: another user's, or writable by
    others than its owner. None: it is the user's own."""
    me = os.geteuid()
    if st.st_uid != me:
        return f"{what} is owned by {_who(st.st_uid)}, not by {_who(me)}"
    bits = st.st_mode & 0o022
    if bits:
        who = "its group and by others" if bits == 0o022 else ("its group" if bits & 0o020 else "others")
        return f"{what} is writable by {who}"
    return None


def refused(e: OSError, what: str, dir_fd: int | None = None, name: str = "") -> str:
    """One line for a refused open; `O_DIRECTORY | O_NOFOLLOW` says ENOTDIR for a link."""
    link = e.errno in (errno.ELOOP, errno.EMLINK)
    if e.errno == errno.ENOTDIR and dir_fd is not None:
        try:
            link = stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
        except OSError:
            pass
    if link:
        return f"{what} is a symbolic link"
    if e.errno == errno.ENOTDIR:
        return f"{what} is not a directory"
    if e.errno == errno.EISDIR:
        return f"{what} is a directory"
    return f"{what}: {e.strerror or e}"


def _open_trusted(root: str, rel: str) -> int | None:
    """A descriptor on `root/rel` if it and its directory are the user's own and writable by
    no one else (opened link by link below `root`); None: not there; else `Untrusted`."""
    parts = [p for p in rel.split("/") if p]
    try:
        dfd = os.open(root, DIR_FLAGS)
    except OSError:
        return None
    try:
        for p in parts[:-1]:
            try:
                nxt = os.open(p, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dfd)
            except FileNotFoundError:
                return None
            except OSError as e:
                raise Untrusted(refused(e, p, dfd, p)) from None
            os.close(dfd)
            dfd = nxt
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise Untrusted(refused(e, rel)) from None
        try:
            st = os.fstat(fd)
            folder = os.path.dirname(rel) or "the run dir"
            why = (None if stat.S_ISREG(st.st_mode) else f"{rel} is not a regular file") or (
                f"{rel} has another hard link" if st.st_nlink > 1 else None) or loose(st, rel) or loose(os.fstat(dfd), folder)
        except OSError as e:
            why = f"{rel}: {e.strerror or e}"
        if why:
            os.close(fd)
            raise Untrusted(why)
        return fd
    finally:
        os.close(dfd)


def check_trusted(root: str, rel: str) -> bool:
    """True: `root/rel` is there and trusted; False: not there; `Untrusted`: there, not believed."""
    fd = _open_trusted(root, rel)
    if fd is None:
        return False
    os.close(fd)
    return True


def read_trusted(root: str, rel: str, limit: int = 64 << 10) -> bytes | None:
    """The bytes of `root/rel` if trusted (`check_trusted`) and at most `limit` long; None:
    not there; else `Untrusted`."""
    fd = _open_trusted(root, rel)
    if fd is None:
        return None
    try:
        data = os.read(fd, limit + 1)
    except OSError as e:
        raise Untrusted(f"{rel}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Untrusted(f"{rel} is larger than {limit} bytes")
    return data


def read_json(run_root: str, name: str, limit: int = 64 << 10) -> object | None:
    """`RUN/.runtop/NAME` as JSON, or None (missing, not the user's own, a link, too big, not JSON)."""
    try:
        data = read_trusted(run_root, f".runtop/{name}", limit)
    except Untrusted:
        return None
    if data is None:
        return None
    try:
        doc: object = json.loads(data)
    except ValueError:
        return None
    return doc
