"""What proves a tmux pane and a launch command belong to a run.

- the pane whose shell is an ancestor of the run's live processes, remembered in
  `RUN/.runtop/launch.json` (with the command its shell started) for after they die;
- the command that shell started: its argv, plus the launch variables
  (`CUDA_VISIBLE_DEVICES=0,1`) its environment has and the shell's does not;
- or a line of the pane's history typed at a shell prompt, never an output line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import psutil

from runtop.sources.tmux import Pane

# A launch command: optional `VAR=value` assignments, then the launcher itself, from the
# first word on (`echo "waiting for rl trainer"` is no launch of `rl`).
LAUNCH_HINT_RE = re.compile(
    r"^((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:(?:uv run )?rl(?: |$).*|(?:uv run )?python3? -m skyrl\S*.*|bash \S+\.sh.*))$",
    re.ASCII,
)
# A shell prompt that ends in `$ ` or `# ` (bash, zsh's `%` too): only a line that starts with
# one is something the user typed; any other line is output (a line the run
# printed, `[info] next: bash evil.sh`, was taken as the launch command).
PROMPT_RE = re.compile(r"^[^\s$#%]{0,200}(?:\s[^$#%]{0,80})?[$#%] (?=\S)", re.ASCII)


LAUNCH_JSON = "launch.json"


# Variables people put before a launch (`CUDA_VISIBLE_DEVICES=0,1 uv run rl …`). Only these
# are inferred from the launcher's environment: rc files and conda change PATH and set
# dozens of others after the shell starts, which no one typed.
ASSIGN_NAME_RE = re.compile(
    r"(?:CUDA_[A-Z_]+|NCCL_[A-Z0-9_]+|NVIDIA_[A-Z_]+|VLLM_[A-Z0-9_]+|TORCH_[A-Z0-9_]+|PYTORCH_[A-Z_]+|HF_[A-Z_]+"
    r"|WANDB_[A-Z_]+|RAY_[A-Z_]+|PRIME_[A-Z_]+|SKYRL_[A-Z_]+|OMP_NUM_THREADS|TOKENIZERS_PARALLELISM|UV_[A-Z_]+)\Z",
    re.ASCII,
)


ASSIGN_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.ASCII)


def _assignments(child: psutil.Process, shell: psutil.Process) -> list[str]:
    """`VAR=value` words the user typed before the launcher (`CUDA_VISIBLE_DEVICES=0,1 uv run
    rl …`): what the child's environment has that its shell's does not. A variable the user
    exported in that shell after it started shows too; typing it again changes nothing."""
    try:
        mine, theirs = child.environ(), shell.environ()
    except psutil.Error:
        return []
    out = []
    for k, v in sorted(mine.items()):
        if theirs.get(k) == v or not ASSIGN_NAME_RE.match(k):
            continue
        out.append(f"{k}={v}")
    return out


def launcher_argv(pane: Pane, pids: list[int]) -> list[str] | None:
    """The command the pane's shell started for this run: its child on the way down to the
    run's processes (`uv run rl @ …`, argv intact: setproctitle renames only the deeper ones)."""
    for pid in pids:
        try:
            chain = [psutil.Process(pid), *psutil.Process(pid).parents()]
        except psutil.Error:
            continue
        for i, proc in enumerate(chain[1:], 1):
            if proc.pid == pane.pid:
                try:
                    argv = chain[i - 1].cmdline()
                except psutil.Error:
                    return None
                if not argv or "::" in argv[0]:
                    return None  # retitled by setproctitle: its argv is a title, not a command
                return list(_assignments(chain[i - 1], chain[i])) + list(argv)
    return None


def record_pane(run_root: str, pane: Pane, argv: list[str] | None = None) -> None:
    """Remember the pane proven to run this run, and the command its shell started, for
    after the run's processes are gone."""
    d = os.path.join(run_root, ".runtop")
    entry = {"pane_id": pane.pane_id, "shell_pid": pane.pid, "session": pane.session, "window": pane.window, "run": run_root}
    if argv:
        entry["argv"] = argv
    else:
        old = recorded_pane(run_root)
        if old and old.get("shell_pid") == pane.pid and isinstance(old.get("argv"), list):
            entry["argv"] = old["argv"]
    try:
        os.makedirs(d, exist_ok=True)
        if not _inside(d, run_root):
            return  # `.runtop` leads outside the run (a symlink): record nothing
        tmp = os.path.join(d, f".{LAUNCH_JSON}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, os.path.join(d, LAUNCH_JSON))
    except OSError:
        return  # not recorded: after the run dies, the pane must be named (said then)


def recorded_pane(run_root: str) -> dict[str, Any] | None:
    path = os.path.join(run_root, ".runtop", LAUNCH_JSON)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as f:
            data = json.loads(f.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("run") != run_root or not isinstance(data.get("pane_id"), str):
        return None
    return data


def _inside(path: str, root: str) -> bool:
    p, r = os.path.realpath(path), os.path.realpath(root)
    return p == r or p.startswith(r + os.sep)


def typed_at_prompt(lines: list[str]) -> Iterator[str]:
    """The commands typed at a shell prompt in a pane's lines, newest first. Output lines are
    never read as commands."""
    for line in reversed(lines):
        m = PROMPT_RE.match(line.strip())
        if not m:
            continue
        head = re.sub(r"^\([^)]*\)\s*", "", m.group(0)[:-2]).strip()  # `(venv) ` goes first
        if head and not any(c in head for c in "@~/"):
            continue  # `Progress: 10% …` is output, not a prompt (`user@host:~/dir$`, `/work#`, `$`)
        yield line.strip()[m.end() :].strip()


def launch_from_pane(lines: list[str], drives: Callable[[str], bool] | None = None) -> str | None:
    """The newest command typed at a shell prompt in the Launcher pane that is a launch
    command, with the `VAR=value` assignments typed before it (`CUDA_VISIBLE_DEVICES=0,1
    uv run rl …`); `drives` is the plug-in's word on a command that drives its runs (`python
    train_grpo.py … > train.log 2>&1` names no launcher of its own)."""
    for typed in typed_at_prompt(lines):
        cmd = LAUNCH_HINT_RE.match(typed)
        if cmd:
            return cmd.group(1).strip()
        if drives is not None and drives(typed):
            return typed
    return None
