"""A genuine TRL GRPO run in a real tmux Launcher pane on a private socket, launched as users
launch TRL (`python train_grpo.py --output_dir DIR > DIR/train.log 2>&1`), and the facts the
tests compare runtop with: TRL's own `trainer_state.json`, the trainer's process, its files."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

SCRIPT = Path(__file__).with_name("train_grpo.py")
SESSION = "grpo"


def missing() -> str | None:
    """Why the real runs cannot run here (None: they can)."""
    if shutil.which("tmux") is None:
        return "tmux is not installed (.ci/run installs it)"
    import importlib.util

    lacking = [m for m in ("torch", "transformers", "trl", "datasets", "tokenizers", "accelerate") if importlib.util.find_spec(m) is None]
    if lacking:
        return f"{', '.join(lacking)} not installed: pip install -r tests/real/requirements.txt"
    return None


def wait_for(pred: Callable[[], Any], timeout: float = 60.0, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(every)


class LiveTrl:
    """One run dir, one tmux server (private socket) whose `Launcher` window is a bash at a
    `$ ` prompt in the run dir, and a `Logs` window, as the runbooks lay a run out."""

    def __init__(self, tmp: Path, name: str = "grpo-tiny") -> None:
        self.root = tmp / name
        self.root.mkdir(parents=True)
        self.log = self.root / "train.log"
        self.sock = f"runtop-real-{uuid.uuid4().hex[:8]}"
        rc = tmp / "bashrc"
        rc.write_text("PS1='$ '\n")
        self.tmux("new-session", "-d", "-s", SESSION, "-n", "Launcher", "-x", "220", "-y", "50", "-c", str(self.root),
                  f"bash --noprofile --rcfile {rc} -i")
        self.tmux("new-window", "-d", "-t", SESSION, "-n", "Logs")
        assert wait_for(lambda: self.screen().rstrip().endswith("$"), 15), "no prompt in the Launcher pane"

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", f"{SESSION}:Launcher")

    def command(self, *flags: str, env: str = "") -> str:
        """The launch line a user types: the venv's python on the script, the console redirected."""
        words = [sys.executable, str(SCRIPT), "--output_dir", str(self.root), *flags]
        return (env + " " if env else "") + shlex.join(words) + f" > {self.log} 2>&1"

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", f"{SESSION}:Launcher", "-l", text)
        self.tmux("send-keys", "-t", f"{SESSION}:Launcher", "Enter")

    def launch(self, *flags: str, env: str = "RUNTOP_REAL_REWARD_SECONDS=0.5") -> None:
        self.type(self.command(*flags, env=env))
        assert wait_for(self.trainer_pid, 30), "the trainer did not start"

    # ---- the facts ------------------------------------------------------------------
    def shell_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", f"{SESSION}:Launcher", "#{pane_pid}").strip())

    def trainer_pid(self) -> int | None:
        """The process the Launcher's shell started (the trainer itself: `python train_grpo.py`)."""
        try:
            kids = psutil.Process(self.shell_pid()).children()
        except (psutil.Error, subprocess.CalledProcessError):
            return None  # no shell, or no tmux server any more
        for k in kids:
            try:
                if str(SCRIPT) in " ".join(k.cmdline()):
                    return k.pid
            except psutil.Error:
                continue  # gone, or a zombie its shell has not reaped yet
        return None

    def logged_steps(self) -> int:
        """How many dicts of a training step the console holds."""
        try:
            return self.log.read_text(errors="replace").count("{'loss': ")
        except OSError:
            return 0

    def trl_state(self, step: int) -> dict[str, Any]:
        return json.loads((self.root / f"checkpoint-{step}" / "trainer_state.json").read_text())

    def at_prompt(self) -> bool:
        return self.trainer_pid() is None and self.screen().rstrip().endswith("$")

    def kill(self, sig: int = signal.SIGKILL) -> int:
        pid = self.trainer_pid()
        assert pid is not None
        os.kill(pid, sig)
        return pid

    def close(self) -> None:
        pid = self.trainer_pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)
