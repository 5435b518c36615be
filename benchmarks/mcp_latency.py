"""How long an agent waits for `run_status` from `runtop mcp` on a run of 100k steps, beside the
baseline measured in the same run: `runtop status --json` as a process (what an agent's shell
loop runs each time it looks).

    python benchmarks/mcp_latency.py [--steps 100000] [--calls 200] [--dir DIR] [--keep]

Writes a prime-rl orchestrator log of `--steps` step lines (the colour-coded lines of
benchmarks/backfill.py, one a step), starts `runtop mcp RUN` through the MCP SDK's own stdio
client, waits until its engine has read the whole history (backfill 1.0, the last step seen),
then times `--calls` run_status calls end to end (request, JSON over the pipe, answer): p50,
p95, max. Half the calls are spaced past the engine's interval, so they find a view published
since the last answer, not one already encoded. Goal: p95 < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.backfill import line  # noqa: E402

GOAL_MS = 50.0


def generate(root: str, steps: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    path = os.path.join(logs, "orchestrator.log")
    with open(path, "w", encoding="utf-8") as f:
        buf: list[str] = []
        for i in range(1, steps + 1):
            buf.append(line(0, i, i))
            if len(buf) >= 5000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    return path


def baseline(root: str, runs: int = 3) -> tuple[float, int | None]:
    """`runtop status --json RUN` as a process: the median wall time of `runs`, and its step."""
    times, step = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "runtop", "status", "--json", root], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t)
        step = json.loads(out.stdout)["progress"]["step"]
    return statistics.median(times), step


async def measure(root: str, steps: int, calls: int, interval: float) -> tuple[list[float], float, float, int | None, int]:
    """(run_status times in s, seconds to the first answer, seconds to the whole history, step, answer bytes)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "runtop", "mcp", root, "--interval", str(interval)])
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        doc = json.loads((await s.call_tool("run_status", {})).content[0].text)
        first = time.perf_counter() - start
        while doc["backfill"] < 1.0 or doc["progress"]["step"] != steps:
            if time.perf_counter() - start > 600:
                raise SystemExit(f"the history was not read within 600 s (backfill {doc['backfill']}, step {doc['progress']['step']})")
            await asyncio.sleep(0.5)
            doc = json.loads((await s.call_tool("run_status", {})).content[0].text)
        whole = time.perf_counter() - start
        times, size = [], 0
        for i in range(calls):
            if i % 2:
                await asyncio.sleep(interval * 1.1)  # a view published since the last answer
            t = time.perf_counter()
            res = await s.call_tool("run_status", {})
            times.append(time.perf_counter() - t)
            size = len(res.content[0].text)
            if res.is_error:
                raise SystemExit(f"run_status failed: {res.content[0].text}")
        return times, first, whole, json.loads(res.content[0].text)["progress"]["step"], size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.2, help="runtop mcp's --interval (short: more calls find a fresh view)")
    ap.add_argument("--dir", default=None, help="write the run here (default: a temp dir)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="runtop-mcp-bench-")
    root = os.path.join(base, "big-run")
    try:
        t = time.perf_counter()
        path = generate(root, args.steps)
        print(f"wrote {args.steps} steps ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s: {root}", flush=True)
        base_s, base_step = baseline(root)
        times, first, whole, step, size = asyncio.run(measure(root, args.steps, args.calls, args.interval))
        ms = sorted(x * 1000 for x in times)
        p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
        print(f"runtop mcp: first answer {first:.2f} s after start; whole history read at {whole:.1f} s (step {step})")
        print(f"{'':<32} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        print(f"{'run_status over MCP (stdio)':<32} {statistics.median(ms):>8.1f} {p95:>8.1f} {ms[-1]:>8.1f}   ({len(ms)} calls, {size} bytes each)")
        print(f"{'baseline: runtop status --json':<32} {base_s * 1000:>8.0f} {'':>8} {'':>8}   (a process per look, median of 3; step {base_step})")
        print(f"goal p95 < {GOAL_MS:g} ms: {'met' if p95 < GOAL_MS else 'NOT met'}; {base_s * 1000 / statistics.median(ms):.0f}x faster than the baseline")
        return 0 if p95 < GOAL_MS else 1
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
