"""Wake the reader when files change: watchfiles where inotify works, polling where it can't.

inotify does not see writes made on another host of an NFS mount (docs/formats.md,
"System facts"), so on network filesystems, or with `--poll`, we only poll. Either
way the reader also polls every `interval` as a safety net: a missed event costs
at most one interval, never a frozen pane.
"""

from __future__ import annotations

import os
import threading

NETWORK_FS = {
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "fuse.sshfs",
    "lustre",
    "gpfs",
    "beegfs",
    "ceph",
    "fuse.ceph",
    "glusterfs",
    "fuse.glusterfs",
    "9p",
    "fuse.juicefs",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "wekafs",
}


def filesystem_type(path: str, mounts_text: str | None = None) -> str | None:
    """The type of the filesystem holding `path`, from /proc/self/mounts (longest mount prefix)."""
    if mounts_text is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                mounts_text = f.read()
        except OSError:
            return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/") or mnt == "/") and len(mnt) >= len(best):
            best, best_type = mnt, parts[2]
    return best_type


def is_network_fs(path: str, mounts_text: str | None = None) -> bool:
    fstype = filesystem_type(path, mounts_text)
    return fstype is not None and fstype in NETWORK_FS


MAX_SEEN = 4096  # changed paths kept between two reads


class ChangeWaiter:
    """`wait(timeout)` returns early when something under `root` changes."""

    def __init__(self, root: str, *, poll: bool = False) -> None:
        self.root = root
        self.poll = poll or is_network_fs(root)
        self.mode = "poll" if self.poll else "watchfiles"
        self.error: str | None = None
        self._event = threading.Event()
        # The paths seen to change since the last `take_seen` (None: more than it keeps).
        self._seen: set[str] | None = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not self.poll:
            self._thread = threading.Thread(target=self._watch, name="runtop-watch", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        try:
            from watchfiles import watch

            for changes in watch(
                self.root,
                stop_event=self._stop,
                debounce=100,
                step=50,
                yield_on_timeout=False,
                raise_interrupt=False,
            ):
                with self._lock:
                    if self._seen is not None:
                        self._seen.update(path for _change, path in changes)
                        if len(self._seen) > MAX_SEEN:
                            self._seen = None  # the reader looks at every file once instead
                self._event.set()
        except Exception as e:  # noqa: BLE001 - any watcher failure degrades to polling, visibly
            self.error = f"file watching failed ({type(e).__name__}: {e}); polling instead"
            self.poll = True
            self.mode = "poll"

    def take_seen(self) -> set[str] | None:
        """The paths seen to change since the last call (none while polling: no watcher sees
        them); None when more changed than it keeps: every file is to be looked at."""
        with self._lock:
            seen, self._seen = self._seen, set()
        return set() if self.poll else seen

    def wait(self, timeout: float) -> bool:
        """True when woken by a change, False on timeout."""
        woke = self._event.wait(timeout)
        self._event.clear()
        return woke

    def close(self) -> None:
        self._stop.set()
        self._event.set()
