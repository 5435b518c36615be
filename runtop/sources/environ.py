"""A variable from the environment of one of the run's own processes (`/proc/PID/environ`,
readable for one's own processes): how runtop ties a run to its SLURM job (`SLURM_JOB_ID`) or
its Ray cluster (`RAY_ADDRESS`) without trusting its own environment."""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_ENVIRON = 1 << 20


def run_env(pids: Sequence[int], name: str, valid: re.Pattern[str] | None = None) -> tuple[str, int] | None:
    """(value, pid) of the first of `pids` whose environment sets `name` (non-empty, matching
    `valid` where given); None when none does or none can be read."""
    key = name.encode("ascii") + b"="
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read(MAX_ENVIRON).split(b"\0")
        except OSError:
            continue
        for item in env:
            if item.startswith(key):
                value = item[len(key):].decode("ascii", "replace").strip()
                if value and (valid is None or valid.match(value)):
                    return value, pid
    return None
