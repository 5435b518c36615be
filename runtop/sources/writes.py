"""Every file runtop writes under a run dir or the temp dir: one module.

The run dir is untrusted (docs/design.md, "The run dir is untrusted"): whoever can write it
must not choose where runtop writes, nor what it types or runs. So:

- **Writes.** A directory is opened once and every name in it is opened relative to that
  descriptor with `O_NOFOLLOW`: a symlink planted as `.runtop`, `forensics`, `STATUS.md` or
  `alert-status.json.<pid>.tmp` is refused, never followed. New files are created exclusively
  (`O_EXCL`: a name someone made first is never written through), whole files are written to a
  fresh temporary name and renamed over, and an append is whole or absent (one `write`, then
  `fsync`; on a short write or ENOSPC the file is cut back to its old length). The directory's
  real path (`/proc/self/fd`) must still lie where runtop opened it. runtop's own directories
  (`RUN/.runtop`, under it) must be the user's own and writable by no one else.
- **Fall-backs** (a run dir runtop cannot write) go to a private per-user directory:
  `$XDG_RUNTIME_DIR/runtop`, else `<temp dir>/runtop-<uid>` (mode 0700, the user's, or a fresh
  `mkdtemp` one where that name was taken by someone else). Never a fixed shared name.
- What of the run dir runtop believes is `runtop.sources.trust`'s.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import stat
import tempfile

from runtop.parsers.hygiene import public
from runtop.sources.regular import what_is
from runtop.sources.trust import DIR_FLAGS, loose, refused

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class OutputError(Exception):
    """A file runtop cannot or will not write; the message is one line."""


def _real(fd: int, fallback: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(fallback)


class Dir:
    """An open directory runtop writes into. Every name in it is opened relative to this
    descriptor, never through a symbolic link."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _name(self, name: str) -> str:
        return os.path.join(self.path, name)

    def sub(self, name: str, *, mode: int = 0o755, exclusive: bool = False) -> Dir:
        """`name` under this directory, made if missing (with `exclusive`, made now or refused:
        one that someone made first is never used). It must be a real directory of the user's
        own; write bits for others on one of the user's own runtop dirs are taken off."""
        if os.sep in name or name in ("", ".", ".."):
            raise OutputError(f"cannot write {self._name(name)}: not a plain name")
        try:
            os.mkdir(name, mode, dir_fd=self.fd)
        except FileExistsError:
            if exclusive:
                raise OutputError(f"{self._name(name)} exists already: runtop uses only a directory it made") from None
        except OSError as e:
            raise OutputError(f"cannot write {self._name(name)}: {e.strerror or e}") from None
        try:
            fd = os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=self.fd)
        except OSError as e:
            raise OutputError(f"refusing to write in {self._name(name)}: {refused(e, name, self.fd, name)}") from None
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                raise OutputError(f"refusing to write in {self._name(name)}: {loose(st, name)}")
            if st.st_mode & 0o022 or (mode & 0o077 == 0 and st.st_mode & 0o077):
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & mode)  # the user's own: made private again
            real, parent = _real(fd, self._name(name)), _real(self.fd, self.path)
            if os.path.dirname(real) != parent:
                raise OutputError(f"refusing to write in {self._name(name)}: it was moved to {real}")
        except (OutputError, OSError) as e:
            os.close(fd)
            if isinstance(e, OutputError):
                raise
            raise OutputError(f"cannot write {self._name(name)}: {e.strerror or e}") from None
        return Dir(fd, self._name(name))

    def fresh(self, name: str, *, mode: int = 0o755) -> Dir:
        """A directory made now: `name`, else `name-2`, `name-3`… (one made first by anyone,
        a directory or a link, is left alone)."""
        for i in range(1, 100):
            try:
                return self.sub(name if i == 1 else f"{name}-{i}", mode=mode, exclusive=True)
            except OutputError as e:
                if "exists already" not in str(e):
                    raise
        raise OutputError(f"cannot make a new directory {self._name(name)}: 99 names taken")

    def _create(self, name: str, mode: int) -> int:
        try:
            return os.open(name, _NEW, mode, dir_fd=self.fd)
        except OSError as e:
            if e.errno == errno.EEXIST:
                raise OutputError(f"refusing to write {self._name(name)}: it exists already (made by someone else)") from None
            raise OutputError(f"cannot write {self._name(name)}: {refused(e, name)}") from None

    def create(self, name: str, data: bytes, *, mode: int = 0o644) -> None:
        """A new file `name` holding `data`, or nothing (a name that exists already is refused)."""
        fd = self._create(name, mode)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as e:
            os.close(fd)
            _unlink(name, self.fd)
            raise OutputError(f"cannot write {self._name(name)}: {e.strerror or e}") from None
        os.close(fd)

    def replace(self, name: str, data: bytes, *, mode: int = 0o644) -> str:
        """`name` holding `data` whole, or unchanged: written to a new temporary name, then
        renamed over it (a link there is replaced, not followed). Returns the path."""
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        self.create(tmp, data, mode=mode)
        try:
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError as e:
            _unlink(tmp, self.fd)
            raise OutputError(f"cannot write {self._name(name)}: {refused(e, name)}") from None
        return self._name(name)

    def remove_tree(self, name: str) -> None:
        """Take away `name` and all under it, never following a link (what runtop made
        and could not finish); errors are ignored."""
        try:
            fd = os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=self.fd)
        except OSError:
            _unlink(name, self.fd)
            return
        with Dir(fd, self._name(name)) as d:
            try:
                names = os.listdir(d.fd)
            except OSError:
                names = []
            for n in names:
                try:
                    is_dir = stat.S_ISDIR(os.lstat(n, dir_fd=d.fd).st_mode)
                except OSError:
                    continue
                if is_dir:
                    d.remove_tree(n)
                else:
                    _unlink(n, d.fd)
        try:
            os.rmdir(name, dir_fd=self.fd)
        except OSError:
            pass

    def open_append(self, name: str) -> int:
        """An `O_APPEND` descriptor on `name` (created 0644 if missing): a regular file with no
        other hard link, never a symlink, FIFO or device."""
        path = self._name(name)
        try:
            fd = os.open(name, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=self.fd)
        except OSError as e:
            raise OutputError(f"{'refusing to' if e.errno == errno.ELOOP else 'cannot'} write {path}: {refused(e, name)}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OutputError(f"refusing to write {path}: {name} is {what_is(st.st_mode)}, not a regular file")
            if st.st_nlink > 1:
                raise OutputError(f"refusing to write {path}: {name} has another hard link (it may be another file)")
        except OutputError:
            os.close(fd)
            raise
        return fd

    def append(self, name: str, text: str, *, separate: bool = False) -> int:
        """Append `text` (made printable, secrets hidden) whole or not at all, under an exclusive
        `flock`: one `write`, then `fsync`; a short write or a failure (a full disk) cuts the
        file back to its length before. With `separate`, a blank line goes before it unless the
        file is empty or already ends in one. Returns the bytes written."""
        path = self._name(name)
        fd = self.open_append(name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            prefix = ""
            if separate and size:
                tail = os.pread(fd, 2, max(0, size - 2))
                prefix = "" if tail.endswith(b"\n\n") else ("\n" if tail.endswith(b"\n") else "\n\n")
            data = (prefix + public(text)).encode("utf-8")
            try:
                n = os.write(fd, data)
                if n != len(data):
                    raise OSError(errno.ENOSPC, f"only {n} of {len(data)} bytes went (the disk is full)")
                os.fsync(fd)
            except OSError as e:
                try:
                    os.ftruncate(fd, size)  # whole or absent: no torn entry stays behind
                except OSError:
                    pass
                raise OutputError(f"cannot write {path}: {e.strerror or e}; nothing was appended") from None
            return n
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
        finally:
            os.close(fd)  # releases the flock


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        view = view[n:]


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def open_dir(root: str, rel: str = "") -> Dir:
    """`root` (the path the user gave: its own links are theirs to make), then each part of
    `rel` made if missing and opened without following a link, each the user's own."""
    try:
        fd = os.open(root, DIR_FLAGS)
    except OSError as e:
        raise OutputError(f"cannot write in {root}: {e.strerror or e}") from None
    d = Dir(fd, root)
    for part in [p for p in rel.split("/") if p]:
        try:
            nxt = d.sub(part)
        finally:
            d.close()
        d = nxt
    return d


def private_dir() -> Dir:
    """The user's private directory for what the run dir cannot take: `$XDG_RUNTIME_DIR/runtop`
    (where that is the user's, 0700), else `<temp dir>/runtop-<uid>` (0700, the user's); where
    someone else holds that name, a fresh one made by `mkdtemp`."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg):
        try:
            fd = os.open(xdg, DIR_FLAGS)
            st = os.fstat(fd)
            if st.st_uid == os.geteuid() and not st.st_mode & 0o077:
                with Dir(fd, xdg) as base:
                    return base.sub("runtop", mode=0o700)
            os.close(fd)
        except (OSError, OutputError):
            pass
    tmp = _temp_root()
    try:
        with Dir(os.open(tmp, DIR_FLAGS), tmp) as base:
            return base.sub(f"runtop-{os.geteuid()}", mode=0o700)
    except (OSError, OutputError):
        try:
            made = tempfile.mkdtemp(prefix=f"runtop-{os.geteuid()}-", dir=tmp)
            return Dir(os.open(made, DIR_FLAGS | os.O_NOFOLLOW), made)
        except OSError as e:
            raise OutputError(f"no private directory to write in under {tmp}: {e.strerror or e}") from None


def _temp_root() -> str:
    """The temp dir as `tempfile` chooses it (`tempfile.tempdir`, `$TMPDIR`, `$TEMP`, `$TMP`,
    `/tmp`), without `gettempdir`'s probe: a probe that writes fails on a full disk, and then
    only a traceback would be said."""
    if tempfile.tempdir:
        return tempfile.tempdir
    for var in ("TMPDIR", "TEMP", "TMP"):
        d = os.environ.get(var, "")
        if d and os.path.isdir(d):
            return os.path.abspath(d)
    return "/tmp"


def private_name(run_root: str, name: str) -> str:
    """`name` for one run in the private directory (`alert-status.json` → `alert-status.<hash>.json`):
    two runtops watching two runs do not write one file."""
    stem, dot, ext = name.rpartition(".")
    tag = hashlib.sha256(os.path.realpath(run_root).encode()).hexdigest()[:12]
    return f"{stem}.{tag}.{ext}" if dot else f"{name}.{tag}"


def record_dir(run_root: str) -> tuple[Dir, str | None]:
    """`RUN/.runtop`, or the private directory and why the run dir could not take it."""
    try:
        return open_dir(run_root, ".runtop"), None
    except OutputError as e:
        return private_dir(), str(e)


# ---- paths, for the callers that name a file --------------------------------------------
def _split(path: str, inside: str | None) -> tuple[str, str, str]:
    """(root, rel, name) of `path`: the part below `inside` is opened link by link."""
    name = os.path.basename(path)
    parent = os.path.dirname(os.path.abspath(path))
    if inside is None:
        return parent, "", name
    root = os.path.abspath(inside)
    rel = os.path.relpath(parent, root)
    if rel == ".":
        rel = ""
    if rel.startswith(".."):
        raise OutputError(f"refusing to write {path}: it is not inside {inside}")
    return root, rel, name


def open_append(path: str, inside: str | None = None) -> int:
    """An `O_APPEND` descriptor on `path`; the directories below `inside` are runtop's own."""
    root, rel, name = _split(path, inside)
    with open_dir(root, rel) as d:
        return d.open_append(name)


def append_locked(path: str, text: str, *, inside: str | None = None, separate: bool = False) -> int:
    """Append `text` to `path` whole or not at all (`Dir.append`)."""
    root, rel, name = _split(path, inside)
    with open_dir(root, rel) as d:
        return d.append(name, text, separate=separate)


def replace_file(path: str, data: bytes, *, mode: int = 0o644) -> None:
    """`path` (a file the user named) holding `data` whole (`Dir.replace`)."""
    root, _rel, name = _split(path, None)
    with open_dir(root) as d:
        d.replace(name, data, mode=mode)


def replace_json(run_root: str, name: str, obj: object) -> bool:
    """Write `RUN/.runtop/NAME` whole (a JSON document), or nothing. False where the run dir
    cannot take it (read-only, `.runtop` a link or another user's): a record is a
    convenience, never a reason to fail."""
    try:
        data = json.dumps(obj).encode()
        with open_dir(run_root, ".runtop") as d:
            d.replace(name, data)
        return True
    except (OutputError, TypeError, ValueError):
        return False
