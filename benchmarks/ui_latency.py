"""Key → repaint latency of the TUI while a burst of log lines arrives.

    python benchmarks/ui_latency.py [--burst-mb 64] [--keys 20]

Writes a prime-rl run (the simulator, still going), starts `runtop` on it in a real
pseudo-terminal (200×50), and presses `?` (the help screen) in turn, timing each
key from the write to the pty until the screen it opens has been drawn (its words seen in
the terminal's output). The help screen is closed with `?` too (`--esc`: with Esc, which
adds the 100 ms Textual waits after a lone ESC byte). First on the idle run, then while a writer appends BURST_MB of
mixed orchestrator and trainer lines (warnings, tracebacks, tqdm frames without their
`\\r`) as fast as it can. Prints p50 / p95 / max for both, side by side.
Goal: p95 <= 100 ms during the burst.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HELP_WORDS = b"runtop keys"
CLOSE_KEY = b"?"
MAIN_WORDS = b"steps"


class Screen:
    """The pty's output, kept as it arrives, with a way to wait for words after a mark."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while not self.stop:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if not r:
                continue
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.buf += data
                if len(self.buf) > 8 << 20:
                    del self.buf[: len(self.buf) - (1 << 20)]

    def mark(self) -> int:
        with self.lock:
            return len(self.buf)

    def wait_for(self, words: bytes, since: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                start = min(since, len(self.buf))
                if words in self.buf[start:]:
                    return True
            time.sleep(0.002)
        return False


def press(screen: Screen, fd: int, key: bytes, words: bytes) -> float | None:
    mark = screen.mark()
    t0 = time.perf_counter()
    os.write(fd, key)
    return (time.perf_counter() - t0) * 1000 if screen.wait_for(words, mark, 10.0) else None


def measure(screen: Screen, fd: int, keys: int) -> dict[str, list[float]]:
    """Latencies by key: `?` opens the help screen, `?` again brings the main screen back.

    Not Esc: a lone ESC byte may begin an escape sequence, and Textual waits ESCDELAY
    (100 ms by default) for more bytes before it takes it for the key. That wait is the
    terminal protocol's, the same on any app; `--esc` measures it too.
    """
    out: dict[str, list[float]] = {"open": [], "close": []}
    for _ in range(keys // 2):
        for name, key, words in (("open", b"?", HELP_WORDS), ("close", CLOSE_KEY, MAIN_WORDS)):
            ms = press(screen, fd, key, words)
            if ms is not None:
                out[name].append(ms)
            time.sleep(0.15)
    return out


def burst(root: str, megabytes: int, done: threading.Event) -> None:
    from benchmarks.backfill import line

    orch = os.path.join(root, "logs", "attempt_1", "orchestrator.log")
    trainer = os.path.join(root, "logs", "attempt_1", "trainer.log")
    tb = "".join(f"[trainer0]:  File \"/opt/prime-rl/src/prime_rl/trainer/rl/train.py\", line {400 + k}, in train\n" for k in range(6))
    target = megabytes << 20
    written, i, step = 0, 0, 100
    with open(orch, "a", encoding="utf-8") as fo, open(trainer, "a", encoding="utf-8") as ft:
        while written < target:
            chunk = []
            for _ in range(2000):
                i += 1
                kind = 0 if i % 40 == 0 else 1 if i % 97 == 0 else 3
                step += kind == 0
                chunk.append(line(kind, step, i))
                if i % 50 == 0:  # a tqdm frame whose `\r` was lost, glued to the next record
                    chunk.append(f"Generating rollouts (train):  50%|#####     | 64/128 [00:00<00:00, 350.17it/s]{line(3, step, i)}")
            text = "".join(chunk)
            fo.write(text)
            warn = f"[trainer0]:14:30:00 WARNING Retrying after transient error ({i})\n[trainer0]:Traceback (most recent call last):\n{tb}[trainer0]:RuntimeError: transient {i}\n"
            ft.write(warn * 20)
            written += len(text) + 20 * len(warn)
    done.set()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--burst-mb", type=int, default=64)
    ap.add_argument("--keys", type=int, default=20)
    ap.add_argument("--esc", action="store_true", help="close the help screen with Esc (adds Textual's ESCDELAY)")
    args = ap.parse_args()
    global CLOSE_KEY
    if args.esc:
        CLOSE_KEY = b"\x1b"
    from runtop.frameworks.primerl.sim import Simulator

    tmp = tempfile.mkdtemp(prefix="runtop-ui-latency-")
    root = os.path.join(tmp, "run")
    Simulator(root, scenario="healthy", max_steps=200, stop_after=8).run()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "50"}
    proc = subprocess.Popen([sys.executable, "-m", "runtop", root], stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True, start_new_session=True)
    os.close(slave)
    screen = Screen(master)
    try:
        if not screen.wait_for(MAIN_WORDS, 0, 30.0):
            print("runtop did not draw its screen within 30 s", file=sys.stderr)
            return 1
        time.sleep(2.0)
        idle = measure(screen, master, args.keys)
        done = threading.Event()
        writer = threading.Thread(target=burst, args=(root, args.burst_mb, done), daemon=True)
        t0 = time.monotonic()
        writer.start()
        time.sleep(0.3)
        busy = measure(screen, master, args.keys)
        writer.join()
        took = time.monotonic() - t0
    finally:
        screen.stop = True
        os.write(master, b"q")
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"{'key -> repaint (ms)':<28}{'p50':>8}{'p95':>8}{'max':>8}{'keys':>6}")
    for name, by_key in (("idle run", idle), (f"during a {args.burst_mb} MB burst", busy)):
        for label, vals in (("", [v for vs in by_key.values() for v in vs]), *((f"  {k}", v) for k, v in by_key.items())):
            print(f"{(label and label + ' only') or name:<28}{pct(vals, 0.5):8.1f}{pct(vals, 0.95):8.1f}{max(vals, default=float('nan')):8.1f}{len(vals):6d}")
    print(f"(the burst was written in {took:.1f} s; goal: p95 <= 100 ms during it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
