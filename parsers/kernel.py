"""The kernel log's word on a killed process: the OOM killer's line, as `/dev/kmsg` and
`dmesg` give it (docs/formats.md, "The kernel log").

    6,1843,93512345678,-;Out of memory: Killed process 3814 (python3) total-vm:…, UID:1000 …
    [93512.345678] Memory cgroup out of memory: Killed process 3814 (python3) total-vm:…
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `/dev/kmsg`: `prio,seq,usec,flags;text`; `dmesg`: `[  secs.usec] text`.
KMSG_RE = re.compile(r"^\d+,\d+,(\d+),[^;]*;(.*)$", re.ASCII | re.DOTALL)
DMESG_RE = re.compile(r"^\[\s*(\d+)\.(\d{1,9})\]\s?(.*)$", re.ASCII | re.DOTALL)
KILLED_RE = re.compile(r"\bout of memory: Killed process (\d+) \(([^)\n]{0,64})\)", re.ASCII | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class KernelKill:
    pid: int
    name: str
    since_boot_s: float | None  # the kernel's clock: seconds since boot


def oom_kill(line: str) -> KernelKill | None:
    """The process one kernel log line says the OOM killer killed, or None."""
    since_boot: float | None = None
    text = line
    m = KMSG_RE.match(line)
    if m:
        since_boot, text = int(m.group(1)) / 1e6, m.group(2)
    elif (d := DMESG_RE.match(line)) is not None:
        since_boot, text = int(d.group(1)) + int(d.group(2)) / 10 ** len(d.group(2)), d.group(3)
    k = KILLED_RE.search(text)
    if k is None:
        return None
    return KernelKill(int(k.group(1)), k.group(2), since_boot)
