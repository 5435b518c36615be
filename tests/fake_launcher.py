"""A stand-in for `uv run rl` in a tmux Launcher window: a titled process tree that writes
every line typed into it to `received.txt` (in its cwd) and exits on C-c with its children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import setproctitle

CHILD = "import setproctitle, sys, time; setproctitle.setproctitle(sys.argv[1]); time.sleep(600)"


def main() -> int:
    setproctitle.setproctitle("PRIME-RL::Launcher")
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, t]) for t in ("PRIME-RL::Trainer", "PRIME-RL::Orchestrator", "VLLM::APIServer")]

    def stop(*_a) -> None:
        for k in kids:
            k.terminate()
        for k in kids:
            k.wait()
        os._exit(130)

    signal.signal(signal.SIGINT, stop)
    print("fake launcher ready", flush=True)
    with open("received.txt", "a", encoding="utf-8") as out:
        for line in sys.stdin:
            out.write(line)
            out.flush()
    stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
