"""Backfill speed and memory: `runtop status` over a big realistic log, beside `grep -c`.

    python benchmarks/backfill.py [--size-mb 1024] [--framework prime-rl|skyrl] [--dir DIR] [--keep]

prime-rl: writes a run whose orchestrator.log is SIZE MB of colour-coded lines in the
mix a long run writes (batch progress, step lines, warnings, a traceback now and
then). skyrl: the SkyRL simulator's driver log, run for as many steps as fill SIZE MB
(seed 000's 7-hour log was ~70k lines, ~10 MB). Then times in one run, on the same
file: `grep -c` for the step lines (the baseline), and `runtop status --json` (a full
backfill), reporting wall time and peak RSS.
Goal for later tuning (issue 2): <= 2x grep, <= 150 MB RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ESC = "\x1b"


def line(kind: int, step: int, i: int) -> str:
    t = f"{ESC}[2m{14 + (i // 3600) % 10:02d}:{(i // 60) % 60:02d}:{i % 60:02d}{ESC}[0m"
    if kind == 0:
        return f"{t} {ESC}[32m{ESC}[1mSUCCESS{ESC}[0m {ESC}[32m{ESC}[1m{ESC}[22mStep {step} |   31.0s | Reward 0.{i % 9999:04d} | Trainable 112/128 (87.5%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 0 | Error 0.0% | Cancelled 0.0% | Truncation 0.8%{ESC}[0m{ESC}[0m\n"
    if kind == 1:
        return f"{t} {ESC}[33m{ESC}[1mWARNING{ESC}[0m {ESC}[33m{ESC}[1m{ESC}[22mTrace failed in group {i:032x} (reverse-text) — ProviderError: Request timed out.{ESC}[0m{ESC}[0m\n"
    if kind == 2:
        return (
            f"{t} {ESC}[31m{ESC}[1m  ERROR{ESC}[0m Error in scoring\nTraceback (most recent call last):\n"
            '  File "/app/env.py", line 12, in score\n    return json.loads(x)\nValueError: bad json\n'
        )
    return f"{t} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mTrain batch {i % 128}/128 ({i % 128 / 1.28:.1f}%) (+16 buffered); {i % 134} inflight episodes (train={i % 134}, eval=0){ESC}[0m{ESC}[0m\n"


def generate(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    path = os.path.join(logs, "orchestrator.log")
    written, i, step = 0, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        buf = []
        while written < size:
            i += 1
            kind = 0 if i % 40 == 0 else 1 if i % 97 == 0 else 2 if i % 5003 == 0 else 3
            if kind == 0:
                step += 1
            s = line(kind, step, i)
            buf.append(s)
            written += len(s)
            if len(buf) >= 10000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    return path


def generate_skyrl(root: str, size: int) -> str:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from runtop.simulator.skyrl import RUN_NAME, SkyrlSimulator

    steps = max(2, size // 21_000)  # ~21 KB of driver log per simulated step
    SkyrlSimulator(root, max_steps=steps, ckpt_interval=max(2, steps // 8)).run()
    return os.path.join(root, "logs", f"{RUN_NAME}.log")


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 gives this child's own rusage (peak RSS), unlike RUSAGE_CHILDREN's running max
    out_chunks = []
    while True:
        chunk = proc.stdout.read(1 << 16)
        if not chunk:
            break
        out_chunks.append(chunk)
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # grep -c exits 1 on no match
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss / 1024, b"".join(out_chunks).decode(errors="replace")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--framework", choices=("prime-rl", "skyrl"), default="prime-rl")
    ap.add_argument("--dir", default=None, help="where to write the run (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated run")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="runtop-bench-")
    root = os.path.join(base, "bench-run")
    try:
        t0 = time.perf_counter()
        skyrl = args.framework == "skyrl"
        path = (generate_skyrl if skyrl else generate)(root, args.size_mb << 20)
        pattern = "Finished: 'step'" if skyrl else "SUCCESS"
        size_mb = os.path.getsize(path) / (1 << 20)
        print(f"generated {path} ({size_mb:.0f} MB) in {time.perf_counter() - t0:.1f}s")
        # warm the page cache once so neither side pays for the first disk read
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        g_s, g_rss, g_out = run_child(["grep", "-c", pattern, path])
        r_s, r_rss, r_out = run_child([sys.executable, "-m", "runtop", "status", "--json", root])
        progress = json.loads(r_out)["progress"]
        steps = progress["trainer_step"] if skyrl else progress["rollout_step"]
        print(f"{'':24}{'seconds':>10}{'MB/s':>10}{'peak RSS MB':>14}")
        print(f"{'grep -c ' + pattern:24}{g_s:10.2f}{size_mb / g_s:10.0f}{g_rss:14.1f}   (count {g_out.strip()})")
        print(f"{'runtop status (backfill)':24}{r_s:10.2f}{size_mb / r_s:10.0f}{r_rss:14.1f}   (last step {steps})")
        print(f"ratio runtop/grep: {r_s / g_s:.1f}x   (goal <= 2x, <= 150 MB RSS)")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
