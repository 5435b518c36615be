"""The run's processes (psutil): which exist, in which role, and how they are doing.

Titled processes (`setproctitle`) lose their argv, so they are tied to the run by
their parent chain, working directory or the log their stdout goes to, not by their
command line (docs/formats.md). Processes are identified by `(pid, create_time)`, as
nvitop does, so a PID the kernel reuses is a new process, never the old one.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psutil

if TYPE_CHECKING:
    from runtop.frameworks.base import Framework

# Titles and commands every framework's processes share (vLLM is everyone's); each
# plug-in adds its own (`Framework.process_titles`: `PRIME-RL::Trainer`, `ray::skyrl_entrypoint`).
COMMON_TITLES = (("VLLM::", "inference"),)
MAX_PROCS = 200


@functools.lru_cache(maxsize=1)
def _titles() -> tuple[tuple[str, str], ...]:
    from runtop.frameworks import all_frameworks

    own = [t for fw in all_frameworks() for t in fw.process_titles]
    # Most specific first: `ray::skyrl_entrypoint` before the `ray::` catch-all.
    return tuple(sorted((*own, *COMMON_TITLES), key=lambda t: -len(t[0])))


def role_of(name: str, cmd: str) -> str | None:
    for prefix, role in _titles():
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


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    create_time: float
    ppid: int
    title: str
    role: str | None
    status: str  # psutil status: running, sleeping, zombie, …
    cpu_pct: float | None  # None on the first sample of a process (no interval yet)
    rss: int | None
    depth: int = 0

    @property
    def key(self) -> tuple[int, float]:
        return (self.pid, self.create_time)

    @property
    def zombie(self) -> bool:
        return bool(self.status == psutil.STATUS_ZOMBIE)


@dataclass
class ProcessSnapshot:
    procs: list[ProcInfo] = field(default_factory=list)  # tree order: parents before children
    missing: list[str] = field(default_factory=list)  # expected roles with no live process
    zombie_roles: list[str] = field(default_factory=list)
    denied: dict[str, list[str]] = field(default_factory=dict)  # user → roles that could not be inspected
    error: str | None = None
    taken_at: float = 0.0

    def roles(self) -> dict[str, list[int]]:
        """role → pids of live (non-zombie) processes."""
        out: dict[str, list[int]] = {}
        for p in self.procs:
            if p.role and not p.zombie:
                out.setdefault(p.role, []).append(p.pid)
        return out


# How long a process's command line, name and parent are trusted before being read again.
# setproctitle renames a process just after it starts, so young processes are re-read.
DETAILS_TTL_S = 30.0
YOUNG_S = 30.0
_DETAILS = ["ppid", "name", "cmdline", "status"]


# Programs that are never part of a run because an argument names it: a tmux server or
# client started with `runtop RUN`, a shell running `bash -c "… RUN …"`, runtop itself
# (issue 11: the whole tmux server was claimed, with every pane under it).
NEVER_BY_ARGV = {"tmux", "screen", "bash", "sh", "zsh", "fish", "dash", "ksh", "tcsh", "csh", "login", "sshd", "runtop", "watch", "less", "tail", "vim", "nvim"}


def _inside(path: str, run_dir: str) -> bool:
    return path == run_dir or path.startswith(run_dir + os.sep)


def _names_run(argv: list[str], cwd: str | None, run_dir: str) -> bool:
    """An argument that resolves (realpath, relative ones from the process's cwd) to the run
    dir or a file inside it: `--output-dir outputs/my-run`, `--output-dir=/abs/my-run`,
    `trainer.ckpt_path=…`. A basename or a substring never counts (issue 11:
    `…/xa/outputs/my-run` is not `…/xb/outputs/my-run`)."""
    for word in argv[1:]:
        for cand in (word, word.partition("=")[2]):
            if not cand or "/" not in cand and cand != os.path.basename(run_dir):
                continue
            if not os.path.isabs(cand):
                if cwd is None:
                    continue
                cand = os.path.join(cwd, cand)
            if _inside(os.path.realpath(cand), run_dir):
                return True
    return False


INTERPRETER_RE = re.compile(r"python[\d.]*\Z", re.ASCII)


def _program(argv: list[str], name: str) -> str:
    first = os.path.basename(argv[0]) if argv else name
    first = first.split(":", 1)[0].strip().lstrip("-")  # `-bash` (login shell), `tmux: server`
    if INTERPRETER_RE.match(first) and len(argv) > 1:
        # `python3 …/bin/runtop watch RUN` and `python -m runtop …` are runtop, not the run their argument names.
        if argv[1] == "-m" and len(argv) > 2:
            return argv[2].split(".", 1)[0]
        if not argv[1].startswith("-"):
            return os.path.basename(argv[1])
    return first


def _details(p: psutil.Process, pid: int, ctime: float, run_dir: str, logs: set[str],
             is_driver: Callable[[str], bool]) -> tuple[dict[str, Any], str | None, bool, bool]:
    """(info, role, belongs, is this run's driver) for one process."""
    info = p.as_dict(_DETAILS)
    info["pid"], info["create_time"] = pid, ctime
    argv = info.get("cmdline") or []
    cmd = " ".join(argv).strip()
    info["cmd"] = cmd
    role = role_of(info.get("name") or "", cmd)
    cwd: str | None = None
    try:
        cwd = p.cwd() if info.get("status") != psutil.STATUS_ZOMBIE else None
    except psutil.AccessDenied:
        # Another user's process: it may be this run's, and runtop cannot tell. For a
        # titled one, saying so beats calling it absent (issue 10: 76 of 77 denied read as Down).
        if role is not None:
            info["denied"] = _owner(p)
    except (psutil.Error, OSError):
        cwd = None  # exited between the listing and the read
    program = _program(argv, info.get("name") or "")
    mine = False
    if program not in NEVER_BY_ARGV and os.path.basename(run_dir) in cmd:  # a cheap test first, the proof next
        mine = _names_run(argv, cwd, run_dir)
    if not mine and role is not None and cwd is not None:
        mine = _inside(os.path.realpath(cwd), run_dir)
    driver = False
    # A driver writing the run's log (`bash run.sh &> logs/x.log`): proven by its stdout.
    if not mine and logs and (is_driver(cmd) or cmd.startswith(("bash", "python", "sh "))):
        mine = _writes_to(pid, logs)
        if mine and is_driver(cmd):
            driver = True
            role = role or "launcher"
    return info, role, mine, driver


def ancestor_pids(pids: list[int]) -> set[int]:
    """Every ancestor of these processes (the shells and panes they descend from)."""
    out: set[int] = set()
    for pid in pids:
        try:
            out.update(p.pid for p in psutil.Process(pid).parents())
        except psutil.Error:
            continue
    return out


def _owner(p: psutil.Process) -> str:
    try:
        return str(p.username())
    except (psutil.Error, KeyError, OSError):
        try:
            return str(p.uids().real)
        except (psutil.Error, OSError):
            return "another user"


def denied_roles(scanned: list[tuple[psutil.Process, dict[str, Any], str | None, bool]], own: dict[int, Any]) -> dict[str, list[str]]:
    """user → roles of the titled processes runtop could not inspect (and so could not tie
    to this run or rule out)."""
    out: dict[str, list[str]] = {}
    for _p, info, role, _mine in scanned:
        user = info.get("denied")
        if user and role and info["pid"] not in own:
            out.setdefault(user, []).append(role)
    return out


def any_driver(cmd: str) -> bool:
    """A command line that drives a run of any framework runtop knows."""
    from runtop.frameworks import all_frameworks

    return any(fw.is_driver(cmd) for fw in all_frameworks())


def _scan(run_dir: str, logs: set[str], cache: dict[Any, Any] | None = None,
          is_driver: Callable[[str], bool] = any_driver) -> list[tuple[psutil.Process, dict[str, Any], str | None, bool]]:
    """Every process: (process, info, role, belongs-by-itself).

    With a `cache` (the sampler's), a known `(pid, create_time)` is not read again
    until its details expire: listing PIDs costs a tenth of reading every command line.
    """
    run_dir = os.path.realpath(run_dir)
    me = os.getpid()
    # runtop and what started it (the shell, the tmux pane) are never the run's.
    mine_not = {me}
    try:
        mine_not.update(a.pid for a in psutil.Process(me).parents())
    except psutil.Error:
        pass
    now = time.time()
    out = []
    driver_alive = False
    seen: set[tuple[int, float]] = set()
    for p in psutil.process_iter(["pid", "create_time"]):
        pid, ctime = p.info["pid"], p.info.get("create_time") or 0.0
        if pid in mine_not:
            continue
        key = (pid, ctime)
        seen.add(key)
        entry = cache.get(key) if cache is not None else None
        if entry is None or (now - entry[4] > DETAILS_TTL_S) or (now - ctime < YOUNG_S):
            try:
                info, role, mine, driver = _details(p, pid, ctime, run_dir, logs, is_driver)
            except (psutil.Error, OSError):
                continue  # gone between the listing and the read
            entry = (info, role, mine, driver, now)
            if cache is not None:
                cache[key] = entry
        info, role, mine, driver = entry[:4]
        driver_alive |= driver
        out.append((p, info, role, mine))
    if cache is not None:
        for key in [k for k in cache if k not in seen]:
            del cache[key]
    if driver_alive:
        # Ray's workers are children of the raylet, not of the driver: while this run's
        # driver lives, the machine's SkyRL Ray workers are its own (one cluster per run).
        out = [(p, i, r, m or (r is not None and (i.get("cmd") or i.get("name") or "").startswith("ray::"))) for p, i, r, m in out]
    return out


def _own(scanned: list[tuple[psutil.Process, dict[str, Any], str | None, bool]]) -> dict[int, tuple[psutil.Process, dict[str, Any], str | None]]:
    """The run's processes: those that belong, and every descendant of one that does."""
    by_pid = {i["pid"]: (p, i, r, m) for p, i, r, m in scanned}
    own: dict[int, tuple[psutil.Process, dict[str, Any], str | None]] = {}
    for pid, (p, info, role, _mine) in by_pid.items():
        cur, hops = pid, 0
        while cur and hops < 32:
            entry = by_pid.get(cur)
            if entry is None:
                break
            if entry[3]:
                own[pid] = (p, info, role)
                break
            cur = entry[1].get("ppid")
            hops += 1
    return own


def run_processes(run_dir: str, logs: list[str] | None = None) -> dict[str, list[int]]:
    """role → pids of the run's live processes (zombies are not alive)."""
    return scan_run(run_dir, logs)[0]


def scan_run(run_dir: str, logs: list[str] | None = None) -> tuple[dict[str, list[int]], dict[str, list[str]]]:
    """(role → pids of the run's live processes, user → roles runtop could not inspect)."""
    scanned = _scan(run_dir, {os.path.realpath(p) for p in logs or ()})
    own = _own(scanned)
    out: dict[str, list[int]] = {}
    for pid, (_p, info, role) in own.items():
        if role and info.get("status") != psutil.STATUS_ZOMBIE:
            out.setdefault(role, []).append(pid)
    return out, denied_roles(scanned, own)


class ProcessSampler:
    """The run's process tree with CPU% and RSS, sampled on demand (call it from a worker).

    CPU% is measured between two samples of the same `(pid, create_time)`; a reused
    PID starts from nothing. Roles once seen are expected: one that disappears, or
    turns zombie, is reported while the run's other processes go on.
    """

    def __init__(self, run_dir: str, logs: list[str] | None = None, framework: Framework | None = None) -> None:
        self.run_dir = run_dir
        self.logs = {os.path.realpath(p) for p in logs or ()}
        from runtop.frameworks import UNKNOWN

        self.framework = framework or UNKNOWN
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._details: dict[Any, Any] = {}
        self.seen_roles: set[str] = set()

    def set_logs(self, logs: list[str]) -> None:
        self.logs = {os.path.realpath(p) for p in logs}

    def sample(self, finished: bool = False) -> ProcessSnapshot:
        try:
            scanned = _scan(self.run_dir, self.logs, self._details, self.framework.is_driver)
            own = _own(scanned)
        except (psutil.Error, OSError) as e:
            return ProcessSnapshot(error=f"process scan failed: {e}", taken_at=time.time())
        keep: dict[tuple[int, float], psutil.Process] = {}
        rows: dict[int, ProcInfo] = {}
        for pid, (proc, info, role) in list(own.items())[:MAX_PROCS]:
            key = (pid, info.get("create_time") or 0.0)
            cached = self._procs.get(key)
            cpu = rss = None
            status = info.get("status") or "?"
            target = cached or proc
            try:
                with target.oneshot():
                    status = target.status()  # fresh each time: the cached details may be older
                    if status != psutil.STATUS_ZOMBIE:
                        # The first call on a process only starts the interval: report None, not 0.
                        pct = target.cpu_percent(None)
                        cpu = pct if cached is not None else None
                        rss = target.memory_info().rss
            except (psutil.Error, OSError):
                cpu = rss = None  # exited between the scan and now: shown without numbers this once
            keep[key] = cached or proc
            title = info.get("cmd") or info.get("name") or "?"
            rows[pid] = ProcInfo(pid, key[1], info.get("ppid") or 0, title[:200], role, status, cpu, rss)
        self._procs = keep
        snap = ProcessSnapshot(procs=_tree_order(rows), denied=denied_roles(scanned, own), taken_at=time.time())
        alive = snap.roles()
        zombies = sorted({p.role for p in rows.values() if p.role and p.zombie and p.role not in alive})
        if alive:
            self.seen_roles.update(alive)
            self.seen_roles.update(self.framework.expected_roles)
        if not finished:
            hidden = {r for roles in snap.denied.values() for r in roles}
            snap.missing = sorted(r for r in self.seen_roles - set(alive) - {"ray"} - hidden if r not in zombies)
            snap.zombie_roles = zombies
        return snap


def _tree_order(rows: dict[int, ProcInfo]) -> list[ProcInfo]:
    children: dict[int, list[int]] = {}
    roots = []
    for pid, p in rows.items():
        if p.ppid in rows:
            children.setdefault(p.ppid, []).append(pid)
        else:
            roots.append(pid)
    out: list[ProcInfo] = []

    def visit(pid: int, depth: int) -> None:
        p = rows[pid]
        out.append(ProcInfo(p.pid, p.create_time, p.ppid, p.title, p.role, p.status, p.cpu_pct, p.rss, depth))
        for c in sorted(children.get(pid, [])):
            if len(out) < MAX_PROCS:
                visit(c, depth + 1)

    for r in sorted(roots):
        visit(r, 0)
    return out
