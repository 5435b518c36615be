"""What twenty followed runs cost beside one: CPU and peak RSS of the runs table.

    python benchmarks/fleet.py [--seconds 60] [--runs 20] [--rate 20]

Writes RUNS simulated runs with mixed verdicts (`runtop.playback.fleet`), then, in a real
120×40 pseudo-terminal, runs `runtop DIR` (the runs table: every run's engine stepped by
the fleet's thread) for SECONDS while RATE lines a second are appended to each live run's
orchestrator log; then `runtop RUN` on one of those runs alone, with the same writer on it.
Then the same table with the compare screen open: three runs marked (the cursor moved to
the first live run's row, `space` three times, `c`, typed at 8-10 s: the opening is counted), and
`runtop compare DIR` (all twenty runs compared: the worst case).
Prints each one's CPU share of one core (after start-up), peak RSS and terminal bytes.
Goal: the table's cost stays flat: ≤ 3 % of a core after start-up and ≤ 150 MB with 20 runs,
with the compare screen open too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.tui_cpu import WARM_S, run_in_pty, writer  # noqa: E402


def live_logs(runs: list[str]) -> list[str]:
    """The orchestrator logs of the runs that are still going (prime-rl, not finished)."""
    out = []
    for run in runs:
        log = os.path.join(run, "logs", "attempt_1", "orchestrator.log")
        if os.path.exists(log) and "healthy" in run and "finished" not in open(log, encoding="utf-8").read()[-4000:]:
            out.append(log)
    return out


# The cursor to the top (it starts on the run first listed, which the first reads move), down
# past the rows above the first live run (7 Down, 1 Degraded: `runtop.playback.fleet.MIX`'s
# twenty runs, most troubled first), three runs marked and compared; once the table has settled.
UP, DOWN = b"\x1b[A", b"\x1b[B"
COMPARE_THREE = ((8.0, UP * 20), (8.5, DOWN * 8), (9.0, b" "), (9.2, b" "), (9.4, b" "), (10.0, b"c"))


def measure(argv: list[str], logs: list[str], seconds: float, rate: int,
            keys: tuple[tuple[float, bytes], ...] = ()) -> tuple[float, float, int, float]:
    stop = threading.Event()
    writers = [threading.Thread(target=writer, args=(log, rate, seconds, stop), daemon=True) for log in logs]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    for w in writers:
        w.start()
    try:
        cpu, rss, _status, sent, steady = run_in_pty(argv, seconds, env, size=(40, 120), keys=keys)
    finally:
        stop.set()
        for w in writers:
            w.join()
    return cpu, rss, sent, steady


def main() -> int:
    from runtop.playback.fleet import make_fleet

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rate", type=int, default=20, help="lines appended per second to each live run")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="runtop-fleet-bench-")
    try:
        runs = make_fleet(os.path.join(base, "runs"), args.runs)
        logs = live_logs(runs)
        runtop = [sys.executable, "-m", "runtop"]
        rows = [
            (f"{args.runs} runs (table)", measure([*runtop, os.path.join(base, "runs")], logs, args.seconds, args.rate)),
            (f"{args.runs} runs, 3 compared", measure([*runtop, os.path.join(base, "runs")], logs, args.seconds, args.rate, COMPARE_THREE)),
            (f"all {args.runs} compared", measure([*runtop, "compare", os.path.join(base, "runs")], logs, args.seconds, args.rate)),
            ("1 run (its view)", measure([*runtop, os.path.dirname(os.path.dirname(os.path.dirname(logs[0])))], logs[:1],
                                         args.seconds, args.rate)),
        ]
        print(f"{len(logs)} live runs written to at {args.rate} lines/s each for {args.seconds:.0f} s, viewer in a 120x40 pty")
        print(f"{'':24}{'CPU s':>8}{'% of a core':>14}{'after start-up':>16}{'peak RSS MB':>14}{'terminal KB/s':>15}")
        for name, (cpu, rss, sent, steady) in rows:
            print(f"{name:24}{cpu:8.2f}{100 * cpu / args.seconds:14.2f}{100 * steady / (args.seconds - WARM_S):16.2f}"
                  f"{rss:14.1f}{sent / 1024 / args.seconds:15.1f}")
        print(f"(after start-up: from {WARM_S:.0f} s on)  goal: the table <= 3 % of a core after start-up, <= 150 MB RSS")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
