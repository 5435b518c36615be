"""The TUI's cost on the machine that trains: CPU seconds and peak RSS beside `toolong`.

    python benchmarks/tui_cpu.py [--seconds 60] [--rate 100] [--gpus 8] [--toolong PATH_TO_tl]

Writes a prime-rl run (the simulator), then, for each viewer in turn, appends RATE
colour-coded orchestrator lines per second for SECONDS while the viewer runs in a
real pseudo-terminal (200×50, output read and thrown away, as a terminal would):
`runtop` on the run dir, and `toolong` (`tl`) tailing the same log. Prints each
one's CPU seconds (user + system, from wait4, start-up included), share of one core
with and without its first 5 s (imports, first read, first paint),
peak RSS, and the bytes per second it sent to the terminal (what SSH would carry).
The line mix has a step line every 40 lines (2.5 steps/s): far busier than a real run.
`--gpus N` (default 8): runtop reads N GPUs whose every reading moves (NVML's stand-in on a
machine without one), so the GPU pane redraws its sparklines and the engine keeps their
histories at every interval; `--gpus 0` leaves runtop to NVML (a GPU machine's own).

toolong pins an old Textual, so it lives in its own virtual environment:
    python3 -m venv /tmp/tlvenv && /tmp/tlvenv/bin/pip install toolong
Goal: runtop <= 3 % of one core and <= 150 MB RSS.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import struct
import sys
import tempfile
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.backfill import kind_of, line  # noqa: E402 - the same line mix as the backfill benchmark

LOG = "logs/attempt_1/orchestrator.log"

# runtop with NVML replaced by N busy GPUs: argv[1] is N, the rest runtop's arguments.
BUSY_GPUS = """
import random, sys, time
import runtop.engine.engine
from runtop.sources.gpu import GpuReading, GpuSnapshot

class BusyGpus:
    def __init__(self):
        self.rng, self.n = random.Random(0), int(sys.argv[1])

    def read(self):
        r = self.rng
        gpus = [GpuReading(i, "bench GPU", r.uniform(0, 100), int(r.uniform(10, 80) * 2**30), 80 * 2**30, 60.0, r.uniform(100, 700))
                for i in range(self.n)]
        return GpuSnapshot(gpus, driver="bench", taken_at=time.time(), simulated=True)

runtop.engine.engine.NvmlProbe = BusyGpus
from runtop.cli.main import main
raise SystemExit(main(sys.argv[2:]))
"""


def make_run(root: str) -> str:
    from runtop.frameworks.primerl.sim import Simulator

    Simulator(root, scenario="healthy", max_steps=20).run()
    return os.path.join(root, LOG)


def writer(path: str, rate: int, seconds: float, stop: threading.Event) -> None:
    """Append `rate` lines a second in ten small bursts, as a busy orchestrator does."""
    i, step = 0, 20
    t0 = time.monotonic()
    with open(path, "a", encoding="utf-8") as f:
        while not stop.is_set() and time.monotonic() - t0 < seconds:
            burst = []
            for _ in range(max(1, rate // 10)):
                i += 1
                kind = kind_of(i)
                step += kind == 0
                burst.append(line(kind, step, i))
            f.write("".join(burst))
            f.flush()
            stop.wait(0.1)


WARM_S = 5.0  # start-up: imports, the first read and the first full paint


def cpu_now(pid: int) -> float:
    """CPU seconds (user + system, every thread) `pid` has used so far, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def run_in_pty(argv: list[str], seconds: float, env: dict[str, str], size: tuple[int, int] = (50, 200),
               keys: tuple[tuple[float, bytes], ...] = ()) -> tuple[float, float, int, int, float]:
    """(cpu seconds, peak RSS MB, exit status, bytes written to the terminal, cpu seconds
    after the first WARM_S) of `argv` run for `seconds` in a pty of `size` (rows, columns);
    `keys`: (seconds after the start, bytes) typed into the terminal then."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    t0 = time.monotonic()
    deadline = t0 + seconds
    warm: float | None = None
    sent = 0  # what an SSH session would carry
    typing = sorted(keys)
    while time.monotonic() < deadline:
        while typing and time.monotonic() - t0 >= typing[0][0]:
            os.write(fd, typing.pop(0)[1])
        if warm is None and time.monotonic() - t0 >= WARM_S:
            warm = cpu_now(pid)
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                sent += len(os.read(fd, 1 << 16))
            except OSError:
                break
    os.kill(pid, 15)
    end = time.monotonic() + 5
    done, status, usage = 0, 0, None
    while time.monotonic() < end and not done:  # keep draining so it can exit
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                os.read(fd, 1 << 16)
            except OSError:
                pass  # the terminal closed: it is exiting
        done, status, usage = os.wait4(pid, os.WNOHANG)
    if not done:
        os.kill(pid, 9)
        _, status, usage = os.wait4(pid, 0)
    os.close(fd)
    cpu = usage.ru_utime + usage.ru_stime
    return cpu, usage.ru_maxrss / 1024, status, sent, cpu - (warm if warm is not None else float("nan"))


def measure(name: str, argv: list[str], log: str, seconds: float, rate: int) -> tuple[str, float, float, int, float]:
    stop = threading.Event()
    w = threading.Thread(target=writer, args=(log, rate, seconds, stop), daemon=True)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "50"}
    w.start()
    try:
        cpu, rss, _status, sent, steady = run_in_pty(argv, seconds, env)
    finally:
        stop.set()
        w.join()
    return name, cpu, rss, sent, steady


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=int, default=100, help="lines appended per second")
    ap.add_argument("--toolong", default=shutil.which("tl") or "/tmp/tlvenv/bin/tl", help="toolong's `tl` (its own venv)")
    ap.add_argument("--interval", type=float, default=2.0, help="runtop --interval")
    ap.add_argument("--gpus", type=int, default=8, help="busy GPUs runtop reads instead of NVML (0: NVML itself)")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="runtop-tui-bench-")
    try:
        rows = []
        root = os.path.join(base, "runtop-run")
        log = make_run(root)
        runtop = [sys.executable, "-m", "runtop", "tui", root, "--interval", str(args.interval)]
        if args.gpus:
            runtop = [sys.executable, "-c", BUSY_GPUS, str(args.gpus), *runtop[3:]]
        rows.append(measure("runtop", runtop, log, args.seconds, args.rate))
        if os.path.exists(args.toolong):
            root2 = os.path.join(base, "toolong-run")
            log2 = make_run(root2)
            rows.append(measure("toolong (tl)", [args.toolong, log2], log2, args.seconds, args.rate))
        else:
            print(f"toolong not found at {args.toolong}: python3 -m venv /tmp/tlvenv && /tmp/tlvenv/bin/pip install toolong")
        gpus = f"{args.gpus} busy GPUs read every interval" if args.gpus else "NVML's own GPUs"
        print(f"{args.rate} lines/s appended for {args.seconds:.0f} s, viewer in a 200x50 pty; runtop with {gpus}")
        print(f"{'':16}{'CPU s':>8}{'% of a core':>14}{'after start-up':>16}{'peak RSS MB':>14}{'terminal KB/s':>15}")
        for name, cpu, rss, sent, steady in rows:
            print(f"{name:16}{cpu:8.2f}{100 * cpu / args.seconds:14.2f}{100 * steady / (args.seconds - WARM_S):16.2f}"
                  f"{rss:14.1f}{sent / 1024 / args.seconds:15.1f}")
        print(f"(% of a core: start-up included; after start-up: from {WARM_S:.0f} s on, tailing only)")
        print("goal: runtop <= 3 % of one core while tailing (after start-up), <= 150 MB RSS")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
