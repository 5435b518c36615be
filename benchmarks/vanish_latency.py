"""How long a run killed whole (SIGKILL of its process group: a preemption, the OOM killer,
a reclaimed pod) stays un-called: from the kill to the first Down, for each framework's live
demo, beside the baseline measured in the same run — the same engine without the process
lifetimes (`vanished` off), where only the silence rule can notice.

    python benchmarks/vanish_latency.py [--interval 2] [--frameworks prime-rl,skyrl,…]

Ours is measured in wall seconds at the TUI's poll interval. The baseline waits `silence_s`
of the run's own time (15 min) after the last write; to measure it rather than assume it, its
engine reads the run on a clock scaled ×SCALE (as `runtop demo` does): the silence it waited is
given back in run time, less the real gap between the last write and the kill.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from runtop.config import Thresholds  # noqa: E402
from runtop.engine.engine import Engine  # noqa: E402
from runtop.frameworks.discovery import discover  # noqa: E402
from runtop.rules.registry import RULES  # noqa: E402

SCALE = 100.0
FRAMEWORKS = ["prime-rl", "skyrl", "verl", "trl", "openrlhf", "nemo-rl"]


def start(fw: str, root: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "runtop", "demo", "--headless", "--framework", fw, "--dir", root,
                             "--steps", "400", "--speed", "100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def wait_for_logs(root: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if discover(root).logs:
                time.sleep(1.0)
                return
        except Exception:  # noqa: BLE001 - not laid out yet
            pass
        time.sleep(0.1)
    raise SystemExit(f"{root}: the demo wrote no log")


def engine(root: str, interval: float, cfg: Thresholds | None = None) -> Engine:
    return Engine(discover(root), interval=interval, vllm_url=None, disks=False, gpus=False, publishing=False, thresholds=cfg)


def until_down(e: Engine, limit: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        e.step()
        if e.verdict.verdict == "Down":
            return time.monotonic() - t0
        e.wait(0.05)
    return None


def one(fw: str, interval: float) -> tuple[float | None, float | None]:
    with tempfile.TemporaryDirectory(prefix="vanish-") as tmp:
        root = os.path.join(tmp, "run")
        demo = start(fw, root)
        try:
            wait_for_logs(root)
            ours = engine(root, interval)
            base = engine(root, 0.1, Thresholds(time_scale=SCALE))  # polled finely: 0.1 s is 10 s of run time
            deadline = time.monotonic() + 30
            while not (ours.state.processes and ours.state.step is not None) and time.monotonic() < deadline:
                ours.step()
                base.step()
                time.sleep(0.1)
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)
            killed = time.time()
            t_ours = until_down(ours, 60)
            saved = list(RULES)
            RULES[:] = [(n, r) for n, r in RULES if n != "vanished"]
            try:
                t_base = until_down(base, 60)
            finally:
                RULES[:] = saved
            if t_base is None:
                return t_ours, None
            # The silence the rule waited, in run time, less the real gap between the last write and the kill.
            last = max(base.state.write_times())
            silence = (killed + t_ours + t_base - last) * SCALE if t_ours is not None else None
            return t_ours, (silence - (killed - last) if silence is not None else None)
        finally:
            if demo.poll() is None:
                os.killpg(demo.pid, signal.SIGKILL)
                demo.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--interval", type=float, default=2.0, help="the engine's poll interval (the TUI's default: 2 s)")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    args = ap.parse_args()
    print(f"{'framework':<10} {'runtop (wall s)':>16} {'silence rule only (run s)':>26}")
    for fw in args.frameworks.split(","):
        ours, base = one(fw, args.interval)
        print(f"{fw:<10} {ours if ours is None else f'{ours:.1f}':>16} {base if base is None else f'{base:.0f}':>26}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
