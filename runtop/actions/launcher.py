"""What proves a tmux pane and a launch command belong to a run.

- the pane whose shell is an ancestor of the run's live processes, remembered in
  `RUN/.runtop/launch.json` (with the command its shell started) for after they die;
- the command that shell started: its argv, plus the launch variables
  (`CUDA_VISIBLE_DEVICES=0,1`) its environment has and the shell's does not.

Never a line of the pane's screen: the run prints there, and a printed
`root@gpu:~/prime-rl$ bash /tmp/evil.sh` looks like a prompt. `launch.json` is believed
only where runtop could have written it (docs/design.md, "The run dir is untrusted").
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import psutil

from runtop.sources.tmux import Pane
from runtop.sources.trust import Untrusted, read_trusted
from runtop.sources.writes import replace_json

LAUNCH_JSON = "launch.json"


# Variables people put before a launch (`CUDA_VISIBLE_DEVICES=0,1 uv run rl …`). Only these
# are inferred from the launcher's environment: rc files and conda change PATH and set
# dozens of others after the shell starts, which no one typed.
ASSIGN_NAME_RE = re.compile(
    r"(?:CUDA_[A-Z_]+|NCCL_[A-Z0-9_]+|NVIDIA_[A-Z_]+|VLLM_[A-Z0-9_]+|TORCH_[A-Z0-9_]+|PYTORCH_[A-Z_]+|HF_[A-Z_]+"
    r"|WANDB_[A-Z_]+|RAY_[A-Z_]+|PRIME_[A-Z_]+|SKYRL_[A-Z_]+|OMP_NUM_THREADS|TOKENIZERS_PARALLELISM|UV_[A-Z_]+)\Z",
    re.ASCII,
)


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


def _launched(pane: Pane, pids: list[int]) -> tuple[psutil.Process, psutil.Process] | None:
    """(the process the pane's shell started for this run, the shell): the shell's child on the
    way down to the run's processes."""
    for pid in pids:
        try:
            chain = [psutil.Process(pid), *psutil.Process(pid).parents()]
        except psutil.Error:
            continue
        for i, proc in enumerate(chain[1:], 1):
            if proc.pid == pane.pid:
                return chain[i - 1], chain[i]
    return None


def launcher_argv(pane: Pane, pids: list[int]) -> list[str] | None:
    """The command the pane's shell started for this run (`uv run rl @ …`, argv intact:
    setproctitle renames only the deeper ones), with the launch variables it was given."""
    found = _launched(pane, pids)
    if found is None:
        return None
    child, shell = found
    try:
        argv = child.cmdline()
    except psutil.Error:
        return None
    if not argv or "::" in argv[0]:
        return None  # retitled by setproctitle: its argv is a title, not a command
    return list(_assignments(child, shell)) + list(argv)


# The redirects `redirect_of` writes, and nothing else: ` > /abs/path 2>&1`, ` >> /a 2> /b`.
REDIRECT_SHAPE_RE = re.compile(r"(?: \d?>>? /[\w./-]+)+(?: 2>&1)?\Z", re.ASCII)
# A redirect target runtop will type back: a plain path (a space or a quote would need shell quoting).
PLAIN_PATH_RE = re.compile(r"/[\w./-]+\Z", re.ASCII)
O_APPEND = 0o2000


def launcher_redirect(pane: Pane, pids: list[int]) -> str:
    """The redirect the shell gave that command (` > /runs/grpo/train.log 2>&1`), read from the
    process's own stdout and stderr, never from the screen (a line the run prints can look like
    a prompt): a resume typed without it prints into the pane, and the run's log never hears of
    the resumed attempt. Empty where they are a terminal or a pipe (`| tee`: not replayed)."""
    found = _launched(pane, pids)
    return redirect_of(found[0].pid) if found is not None else ""


def redirect_of(pid: int) -> str:
    def target(fd: int) -> tuple[str, bool] | None:
        try:
            path = os.readlink(f"/proc/{pid}/fd/{fd}")
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                flags = next((int(line.split()[1], 8) for line in f if line.startswith("flags:")), 0)
        except (OSError, ValueError, IndexError):
            return None
        if not PLAIN_PATH_RE.match(path) or path.startswith(("/dev/", "/proc/")):
            return None
        return path, bool(flags & O_APPEND)

    out, err = target(1), target(2)
    if out is None:
        return ""
    words = f" {'>>' if out[1] else '>'} {out[0]}"
    if err is not None and err[0] == out[0]:
        return words + " 2>&1"
    if err is not None:
        words += f" 2{'>>' if err[1] else '>'} {err[0]}"
    return words


def record_pane(run_root: str, pane: Pane, argv: list[str] | None = None, redirect: str = "") -> None:
    """Remember the pane proven to run this run, and the command its shell started, for
    after the run's processes are gone. Not recorded (a read-only run dir, `.runtop` a link
    or another user's): after the run dies, the pane must be named (said then)."""
    entry: dict[str, Any] = {"pane_id": pane.pane_id, "shell_pid": pane.pid, "session": pane.session, "window": pane.window, "run": run_root}
    if argv:
        entry["argv"] = argv
        if redirect:
            entry["redirect"] = redirect
    else:
        old, _why = recorded_pane(run_root)
        if old and old.get("shell_pid") == pane.pid and isinstance(old.get("argv"), list):
            entry["argv"] = old["argv"]
            if old.get("redirect"):
                entry["redirect"] = old["redirect"]
    replace_json(run_root, LAUNCH_JSON, entry)


def recorded_pane(run_root: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the record runtop wrote while the run lived, None), or (None, why it is not believed:
    not the user's own, writable by others, a link; None where there is none)."""
    try:
        data = read_trusted(run_root, f".runtop/{LAUNCH_JSON}", 16 << 10)
    except Untrusted as e:
        return None, f"{e}: ignored"
    if data is None:
        return None, None
    try:
        doc = json.loads(data)
    except ValueError:
        return None, f".runtop/{LAUNCH_JSON} is not JSON: ignored"
    if not isinstance(doc, dict) or doc.get("run") != run_root or not isinstance(doc.get("pane_id"), str):
        return None, f".runtop/{LAUNCH_JSON} names another run or no pane: ignored"
    argv = doc.get("argv")
    if argv is not None and not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        return None, f".runtop/{LAUNCH_JSON} has an argv that is not a list of words: ignored"
    redirect = doc.get("redirect")
    if redirect is not None and not (isinstance(redirect, str) and REDIRECT_SHAPE_RE.match(redirect)):
        return None, f".runtop/{LAUNCH_JSON} has a redirect that is not one runtop writes: ignored"
    return doc, None
