"""A directory of simulated runs with mixed verdicts: what the runs table, its
snapshot test and the fleet benchmark read. Every framework's plug-in writes its own runs."""

from __future__ import annotations

import os

from runtop.frameworks import get as get_framework

# (framework, scenario, its simulator's options, hours since its last write)
MIX: tuple[tuple[str, str, dict[str, int], float], ...] = (
    ("prime-rl", "healthy", {"stop_after": 7}, 0.0),
    ("prime-rl", "trainer-oom", {}, 0.0),
    ("prime-rl", "healthy", {}, 0.0),  # finished
    ("prime-rl", "inference-death", {}, 0.0),
    ("prime-rl", "partial-checkpoint", {"stop_after": 9}, 0.0),
    ("prime-rl", "healthy", {"stop_after": 5}, 3.0),  # silent for hours: the pod is gone
    ("prime-rl", "entropy-collapse", {}, 0.0),
    ("skyrl", "healthy", {}, 0.0),
    ("skyrl", "sigbus-checkpoint", {}, 0.0),
    ("skyrl", "disk-full", {}, 0.0),
    ("verl", "healthy", {}, 0.0),
    ("verl", "worker-oom", {}, 0.0),
    ("trl", "healthy", {}, 0.0),
    ("openrlhf", "healthy", {}, 0.0),
    ("nemo-rl", "healthy", {}, 0.0),
    ("prime-rl", "healthy", {"stop_after": 3}, 0.0),
    ("prime-rl", "rollouts-hung", {}, 0.0),
    ("prime-rl", "healthy", {"stop_after": 12}, 0.0),
    ("skyrl", "format-rising", {}, 0.0),
    ("prime-rl", "stalled", {}, 0.5),  # silent for half an hour, its processes gone
)


def make_fleet(root: str, n: int = 20, *, now: float | None = None) -> list[str]:
    """Write `n` runs under `root` (`run-00-prime-rl-healthy`, …); their paths. With `now`,
    every file's time is fixed to it (less each run's hours of silence): a picture that
    does not change with the day it is taken."""
    import time

    fixed = now is not None
    now = time.time() if now is None else now
    os.makedirs(root, exist_ok=True)
    out = []
    for i in range(n):
        fw, scenario, options, hours = MIX[i % len(MIX)]
        path = os.path.join(root, f"run-{i:02d}-{fw}-{scenario}")
        get_framework(fw).simulator(path, scenario, **options).run()
        if hours or fixed:
            for dirpath, _dirs, files in os.walk(path):
                for name in files:
                    os.utime(os.path.join(dirpath, name), (now - hours * 3600, now - hours * 3600))
        out.append(path)
    return out
