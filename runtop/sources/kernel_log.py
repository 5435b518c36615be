"""The kernel log, read for one question: did the OOM killer end any of these processes?

Read from `/dev/kmsg` (non-blocking, bounded) only when a run's processes have all gone;
where it cannot be read (`kernel.dmesg_restrict`, a container without it) the answer is
"nothing known", never an error (docs/formats.md, "The kernel log").
"""

from __future__ import annotations

import errno
import os
import time

from runtop.parsers.kernel import oom_kill
from runtop.sources.lifetimes import OomKill

KMSG = "/dev/kmsg"
MAX_RECORDS = 20_000  # the newest ring buffer, not a machine's history
MAX_READ_S = 0.5


def oom_kills(pids: set[int], path: str = KMSG) -> tuple[OomKill, ...]:
    """The OOM killer's kills of these PIDs that the kernel log still holds (`path`: the
    kmsg device, or a file of `dmesg` lines)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ()
    found: dict[int, OomKill] = {}
    # The kernel's clock (seconds since boot, not counting a suspend) onto the wall's.
    boot = time.time() - time.monotonic()
    until = time.monotonic() + MAX_READ_S
    try:
        for _ in range(MAX_RECORDS):
            try:
                rec = os.read(fd, 8192)  # one record per read
            except OSError as e:
                if e.errno == errno.EPIPE:
                    continue  # records overwritten while reading: go on with the next
                break  # EAGAIN: the end; EINVAL and others: not a kmsg device
            if not rec or time.monotonic() > until:
                break
            if b"Killed process" not in rec:
                continue
            # `/dev/kmsg` gives one record a read; a saved `dmesg` file, many lines.
            for line in rec.decode("utf-8", "replace").splitlines():
                kill = oom_kill(line)
                if kill is not None and kill.pid in pids:
                    at = boot + kill.since_boot_s if kill.since_boot_s is not None else None
                    found[kill.pid] = OomKill(kill.pid, kill.name, at)
    finally:
        os.close(fd)
    return tuple(found.values())
