"""Which of the run's processes are alive (psutil). A first, small view; the process
tree pane (issue 4) builds on it.

Titled processes (`setproctitle`) lose their argv, so they are tied to the run by
their parent chain or working directory, not by their command line (FORMATS.md).
"""

from __future__ import annotations

import os
import re

import psutil

TITLE_ROLES = (
    ("PRIME-RL::Launcher", "launcher"),
    ("PRIME-RL::Inference", "inference"),
    ("PRIME-RL::Orchestrator", "orchestrator"),
    ("PRIME-RL::Trainer", "trainer"),
    ("PRIME-RL::EnvServer", "env"),
    ("Verifiers::", "env"),
    ("VLLM::", "inference"),
    # SkyRL on Ray (FORMATS.md): the entrypoint actor is the trainer; its death is the run's.
    ("ray::skyrl_entrypoint", "trainer"),
    ("ray::MegatronPolicyWorkerBase", "trainer"),
    ("ray::FSDPPolicyWorkerBase", "trainer"),
    ("ray::AsyncVLLMInferenceEngine", "inference"),
    ("ray::RayWorkerWrapper", "inference"),
)


def _role(name: str, cmd: str) -> str | None:
    for prefix, role in TITLE_ROLES:
        if name.startswith(prefix) or cmd.startswith(prefix):
            return role
    if "torchrun" in cmd:
        return "trainer"
    if "vllm-router" in cmd or "vllm serve" in cmd:
        return "inference"
    return None


def _writes_to(pid: int, logs: set[str]) -> bool:
    """Whether the process's stdout or stderr is one of `logs` (`bash run.sh &> logs/x.log`)."""
    for fd in (1, 2):
        try:
            if os.path.realpath(os.readlink(f"/proc/{pid}/fd/{fd}")) in logs:
                return True
        except OSError:
            continue
    return False


def run_processes(run_dir: str, logs: list[str] | None = None) -> dict[str, list[int]]:
    """role → pids of live processes that belong to `run_dir`.

    A process belongs when its command line names the run dir, its cwd is inside
    it, its stdout is one of the run's `logs` (a SkyRL driver), or an ancestor
    belongs. Ray's workers are children of the raylet, not of the driver: while a
    driver of this run is alive, the machine's SkyRL Ray workers count as its own
    (one Ray cluster per run, as in the seeds). Zombies are not alive.
    """
    run_dir = os.path.realpath(run_dir)
    log_set = {os.path.realpath(p) for p in logs or ()}
    driver_alive = False
    ray_workers: list[int] = []
    # `uv run rl … --output-dir outputs/<name>`: the run's name as a whole path component.
    named = re.compile(rf"(?:^|[\s=/]){re.escape(os.path.basename(run_dir))}(?:/|\s|$)")
    procs: dict[int, psutil.Process] = {}
    own: set[int] = set()
    roles: dict[int, str] = {}
    me = os.getpid()
    for p in psutil.process_iter(["pid", "ppid", "name", "cmdline", "status"]):
        info = p.info
        if info["pid"] == me or info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        cmd = " ".join(info.get("cmdline") or [])
        role = _role(info.get("name") or "", cmd)
        mine = run_dir in cmd or bool(named.search(cmd))
        if not mine and role is not None:
            try:
                cwd = p.cwd()
                mine = cwd == run_dir or cwd.startswith(run_dir + os.sep)
            except (psutil.Error, OSError):
                # Another user's process (AccessDenied) or one that just exited: not ours to judge.
                mine = False
        if not mine and log_set and ("skyrl" in cmd or cmd.startswith(("bash", "python", "sh "))):
            mine = _writes_to(info["pid"], log_set)
            if mine and "skyrl" in cmd:
                driver_alive = True
                roles.setdefault(info["pid"], "launcher")
        procs[info["pid"]] = p
        if role:
            roles[info["pid"]] = role
            if (info.get("name") or cmd).startswith("ray::") or cmd.startswith("ray::"):
                ray_workers.append(info["pid"])
        if mine:
            own.add(info["pid"])
    if driver_alive:
        own.update(ray_workers)
    out: dict[str, list[int]] = {}
    for pid, role in roles.items():
        cur, hops = pid, 0
        while cur and hops < 32:
            if cur in own:
                out.setdefault(role, []).append(pid)
                break
            p = procs.get(cur)
            cur = p.info.get("ppid") if p is not None else None
            hops += 1
    return out
