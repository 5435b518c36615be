"""What a run of many idle logs costs `runtop watch`: CPU share of one core, beside a run of few.

    python benchmarks/many_files.py [--files 20000] [--seconds 60] [--interval 2]

Writes two prime-rl runs (the simulator), one with FILES idle env logs
(`logs/attempt_1/envs/train/env_N.log`, 100 bytes each, as a run with thousands of
environments leaves them) and one with 10, then runs `runtop watch RUN --interval S` on each
in turn for SECONDS and reads its CPU seconds (user + system, every thread) from
`/proc/PID/stat`, leaving out its first WARM_S seconds (imports, discovery, the first read of
every file). Nothing is written to either run meanwhile: all of it is the cost of idle files.
Goal: the many-file run under 3 % of one core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.tui_cpu import cpu_now  # noqa: E402 - one way to read a process's CPU

WARM_S = 15.0
LINE = "2026-11-23 14:09:01 INFO env worker ready: 8 sandboxes, waiting for rollouts\n"  # ~100 bytes with the name


def make_run(root: str, files: int) -> str:
    from runtop.frameworks.primerl.sim import Simulator

    Simulator(root, scenario="healthy", max_steps=20).run()
    envs = os.path.join(root, "logs", "attempt_1", "envs", "train")
    os.makedirs(envs, exist_ok=True)
    old = time.time() - 3600  # idle: last written an hour ago
    for i in range(files):
        path = os.path.join(envs, f"env_{i}.log")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"[env {i}] {LINE}")
        os.utime(path, (old, old))
    return root


def watch_cpu(root: str, seconds: float, interval: float) -> tuple[float, float]:
    """(share of one core after the first WARM_S seconds, CPU seconds of the warm-up)."""
    argv = [sys.executable, "-m", "runtop", "watch", root, "--interval", str(interval), "--duration", str(WARM_S + seconds + 5)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, HOME=tempfile.gettempdir()))
    try:
        time.sleep(WARM_S)
        warm = cpu_now(proc.pid)
        t0 = time.monotonic()
        time.sleep(seconds)
        used = cpu_now(proc.pid) - warm
        return 100.0 * used / (time.monotonic() - t0), warm
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=2.0)
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="runtop-many-files-")
    try:
        rows = []
        for n in (10, args.files):
            root = make_run(os.path.join(base, f"run-{n}"), n)
            pct, warm = watch_cpu(root, args.seconds, args.interval)
            rows.append((n, pct, warm))
        print(f"runtop watch --interval {args.interval:g}, {args.seconds:g} s idle after {WARM_S:g} s of start-up:")
        for n, pct, warm in rows:
            print(f"  {n:>6} idle env logs: {pct:5.2f} % of one core (start-up {warm:.1f} CPU s)")
        goal = rows[-1][1] < 3.0
        print(f"goal < 3 % of one core with {args.files} files: {'met' if goal else 'NOT met'}")
        return 0 if goal else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
