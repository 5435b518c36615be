"""The run's processes (psutil): which exist, in which role, and how they are doing.

The scan reads each process's facts (argv, cwd, where its stdout goes, parent, process group);
`ownership.claim` says which are the run's (docs/reading.md, "Which processes are the run's").
Titled processes (`setproctitle`) lose their argv, so they are tied to the run by their parent
chain, working directory or output, not by their command line (docs/formats.md). Processes are
identified by `(pid, create_time)`, as nvitop does, so a PID the kernel reuses is a new
process, never the old one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import psutil

from runtop.sources.ownership import Facts, Scope, bystander, claim, programs, writes_log

# Titles and commands every framework's processes share (vLLM is everyone's); each
# plug-in adds its own (`Framework.process_titles`: `PRIME-RL::Trainer`, `ray::skyrl_entrypoint`).
COMMON_TITLES = (("VLLM::", "inference"),)
MAX_PROCS = 200


def _no_driver(cmd: str) -> str | None:
    return None


def _no_launch_dir(run_dir: str) -> str | None:
    return None


@dataclass(frozen=True)
class ProcessRoles:
    """What the plug-ins say of a run's processes, handed in as data
    (`runtop.frameworks.process_roles` makes it from the registry): this source asks no plug-in.
    The defaults know no framework: only the titles every framework's processes share."""

    # (title or command prefix, role) of every plug-in's processes, most specific first
    # (`ray::skyrl_entrypoint` before the `ray::` catch-all).
    titles: tuple[tuple[str, str], ...] = COMMON_TITLES
    # The role of an untitled process whose command line drives the run (the run's plug-in's
    # driver; with no plug-in, whichever framework's driver it is), else None.
    driver: Callable[[str], str | None] = _no_driver
    # The role of a Python writing the run's log (docs/reading.md, "Which processes are the run's").
    driver_role: str = "launcher"
    launch_dir: Callable[[str], str | None] = _no_launch_dir  # where the run was launched from, if not its dir
    owns_run_dir: bool = False  # any process working or writing inside the run dir is the run's
    expected_roles: tuple[str, ...] = ()  # roles that must be up while the run trains


def role_of(name: str, cmd: str, titles: tuple[tuple[str, str], ...] = COMMON_TITLES) -> str | None:
    for prefix, role in titles:
        if name.startswith(prefix) or cmd.startswith(prefix):
            return role
    if "torchrun" in cmd:
        return "trainer"
    if "vllm-router" in cmd or "vllm serve" in cmd:
        return "inference"
    return None


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


class ProcessSource(Protocol):
    """What the engine's process probe asks: the sampler below, or a replay's virtual processes."""

    def set_logs(self, logs: list[str]) -> None: ...

    def sample(self, finished: bool = False) -> ProcessSnapshot: ...


# How long a process's facts (command line, name, parent, cwd, where its output goes) are
# trusted before being read again. setproctitle renames a process just after it starts, and a
# launcher hands its children their stdout as it starts them, so young processes are re-read.
DETAILS_TTL_S = 30.0
YOUNG_S = 30.0
_DETAILS = ["ppid", "name", "cmdline", "status"]


def _fds(pid: int) -> tuple[str | None, tuple[str, ...]]:
    """Where the process's stdin, and its stdout and stderr, point (`bash run.sh &> logs/x.log`,
    `… | tee run.log`). The kernel's link is already the canonical path."""
    out: list[str | None] = []
    for fd in (0, 1, 2):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            out.append(None)
    return out[0], tuple(o for o in out[1:] if o is not None)


def _facts(p: psutil.Process, pid: int, ctime: float, titles: tuple[tuple[str, str], ...]) -> Facts:
    info = p.as_dict(_DETAILS)
    argv = tuple(w for w in info.get("cmdline") or () if w)  # a retitled process pads its argv with empty words
    name = info.get("name") or ""
    status = info.get("status") or "?"
    cwd: str | None = None
    denied: str | None = None
    if status != psutil.STATUS_ZOMBIE:
        try:
            cwd = p.cwd()
        except psutil.AccessDenied:
            # Another user's process: it may be this run's, and runtop cannot tell. For a
            # titled one, saying so beats calling it absent (76 of 77 denied read as Down).
            if role_of(name, " ".join(argv).strip(), titles) is not None:
                denied = _owner(p)
        except (psutil.Error, OSError):
            cwd = None  # exited between the listing and the read
    stdin, outs = _fds(pid) if cwd is not None else (None, ())
    cmd = " ".join(argv).strip()
    return Facts(pid, ctime, info.get("ppid") or 0, name, argv, cwd, outs, stdin, status, denied,
                 title_role=role_of(name, cmd, titles), away=bystander(argv, name), cmd=cmd)


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


def denied_roles(scanned: list[tuple[psutil.Process, Facts]], own: dict[int, str | None]) -> dict[str, list[str]]:
    """user → roles of the titled processes runtop could not inspect (and so could not tie
    to this run or rule out)."""
    out: dict[str, list[str]] = {}
    for _p, f in scanned:
        if f.denied and f.title_role and f.pid not in own:
            out.setdefault(f.denied, []).append(f.title_role)
    return out


def driver_role_for(roles: ProcessRoles, logs: frozenset[str]) -> Callable[[Facts], str | None]:
    """The plug-in's part in ownership: its driver's role for an untitled process that drives
    the run (by its command line, or a Python writing the run's log)."""

    def driver(f: Facts) -> str | None:
        role = roles.driver(f.cmd)
        if role is None and writes_log(f, logs) and any(n.startswith("python") for n in programs(f.argv[:1], f.name)):
            role = roles.driver_role
        return role

    return driver


def scope_for(run_dir: str, logs: set[str] | frozenset[str], roles: ProcessRoles) -> Scope:
    run_dir = os.path.realpath(run_dir)
    launch = roles.launch_dir(run_dir)
    return Scope(run_dir, frozenset(logs), os.path.realpath(launch) if launch else None, roles.owns_run_dir)


def _scan(titles: tuple[tuple[str, str], ...], cache: dict[tuple[int, float], tuple[Facts, float]] | None = None) -> list[tuple[psutil.Process, Facts]]:
    """Every process but runtop and what started it (the shell, the tmux pane), with its facts.

    With a `cache` (the sampler's), a known `(pid, create_time)` is not read again
    until its facts expire: listing PIDs costs a tenth of reading every command line.
    """
    me = os.getpid()
    mine_not = {me}
    try:
        mine_not.update(a.pid for a in psutil.Process(me).parents())
    except psutil.Error:
        pass
    now = time.time()
    out = []
    seen: set[tuple[int, float]] = set()
    for p in psutil.process_iter(["pid", "create_time"]):
        pid, ctime = p.info["pid"], p.info.get("create_time") or 0.0
        if pid in mine_not:
            continue
        key = (pid, ctime)
        seen.add(key)
        entry = cache.get(key) if cache is not None else None
        if entry is None or (now - entry[1] > DETAILS_TTL_S) or (now - ctime < YOUNG_S):
            try:
                entry = (_facts(p, pid, ctime, titles), now)
            except (psutil.Error, OSError):
                continue  # gone between the listing and the read
            if cache is not None:
                cache[key] = entry
        out.append((p, entry[0]))
    if cache is not None:
        for key in [k for k in cache if k not in seen]:
            del cache[key]
    return out


def _claim(scanned: list[tuple[psutil.Process, Facts]], run_dir: str, logs: set[str] | frozenset[str],
           roles: ProcessRoles) -> dict[int, str | None]:
    return claim((f for _p, f in scanned), scope_for(run_dir, logs, roles), driver_role_for(roles, frozenset(logs)))


def run_processes(run_dir: str, logs: list[str] | None = None, roles: ProcessRoles | None = None) -> dict[str, list[int]]:
    """role → pids of the run's live processes (zombies are not alive)."""
    return scan_run(run_dir, logs, roles)[0]


def scan_run(run_dir: str, logs: list[str] | None = None,
             roles: ProcessRoles | None = None) -> tuple[dict[str, list[int]], dict[str, list[str]]]:
    """(role → pids of the run's live processes, user → roles runtop could not inspect)."""
    roles = roles or ProcessRoles()
    scanned = _scan(roles.titles)
    own = _claim(scanned, run_dir, {os.path.realpath(p) for p in logs or ()}, roles)
    facts = {f.pid: f for _p, f in scanned}
    out: dict[str, list[int]] = {}
    for pid, role in own.items():
        if role and facts[pid].status != psutil.STATUS_ZOMBIE:
            out.setdefault(role, []).append(pid)
    return out, denied_roles(scanned, own)


class ProcessSampler:
    """The run's process tree with CPU% and RSS, sampled on demand (call it from a worker).

    CPU% is measured between two samples of the same `(pid, create_time)`; a reused
    PID starts from nothing. Roles once seen are expected: one that disappears, or
    turns zombie, is reported while the run's other processes go on.
    """

    def __init__(self, run_dir: str, logs: list[str] | None = None, roles: ProcessRoles | None = None) -> None:
        self.run_dir = run_dir
        self._given: list[str] = list(logs or ())
        self.logs = frozenset(os.path.realpath(p) for p in self._given)
        self.roles = roles or ProcessRoles()
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._facts: dict[tuple[int, float], tuple[Facts, float]] = {}
        self.seen_roles: set[str] = set()

    def set_logs(self, logs: list[str]) -> None:
        # Resolved only when the list changed: 20k env logs cost 160k `lstat`s a sample otherwise.
        if logs != self._given:
            self._given = list(logs)
            self.logs = frozenset(os.path.realpath(p) for p in logs)  # one object: its hash and names are kept

    def sample(self, finished: bool = False) -> ProcessSnapshot:
        try:
            scanned = _scan(self.roles.titles, self._facts)
            own = _claim(scanned, self.run_dir, self.logs, self.roles)
        except (psutil.Error, OSError) as e:
            return ProcessSnapshot(error=f"process scan failed: {e}", taken_at=time.time())
        keep: dict[tuple[int, float], psutil.Process] = {}
        rows: dict[int, ProcInfo] = {}
        by_pid = {f.pid: (p, f) for p, f in scanned}
        for pid, role in list(own.items())[:MAX_PROCS]:
            proc, facts = by_pid[pid]
            key = (pid, facts.create_time)
            cached = self._procs.get(key)
            cpu = rss = None
            status = facts.status
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
            title = facts.cmd or facts.name or "?"
            rows[pid] = ProcInfo(pid, key[1], facts.ppid, title[:200], role, status, cpu, rss)
        self._procs = keep
        snap = ProcessSnapshot(procs=_tree_order(rows), denied=denied_roles(scanned, own), taken_at=time.time())
        alive = snap.roles()
        zombies = sorted({p.role for p in rows.values() if p.role and p.zombie and p.role not in alive})
        if alive:
            self.seen_roles.update(alive)
            self.seen_roles.update(self.roles.expected_roles)
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
