"""Which processes are the run's: pure rules over facts the process scan read (docs/reading.md,
"Which processes are the run's").

A run is launched in many shapes: `uv run rl @ rl.toml` whose launcher sends each child's stdout
into the run dir, `bash run.sh &> logs/x.log`, `python3 -m … 2>&1 | tee run.log`, a driver that
names its output dir. Each shape leaves one of four marks on at least one process (an argument,
a working directory, a redirected stdout, a parent); the rest of the tree is found from it.
Nothing here reads /proc: `processes.py` gathers the facts, so the rules can be tested on any.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Programs that are never the run, whatever they name, wherever they work and whatever they
# write: what a person runs beside a run (a pager on its log, an editor, a shell in its dir, a
# terminal multiplexer, a remote login) and the monitors that watch it, runtop among them.
BYSTANDERS = frozenset({
    "tmux", "screen", "zellij", "ssh", "sshd", "mosh-server", "mosh-client", "login", "su",
    "less", "more", "most", "bat", "tail", "head", "cat", "grep", "rg", "watch",
    "vi", "vim", "nvim", "view", "emacs", "nano", "micro", "hx", "code",
    "top", "htop", "btop", "nvtop", "nvitop", "nvidia-smi", "gpustat", "runtop",
})
# Shells are bystanders only when interactive: `bash run.sh` and `sh -c "…"` run something.
SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh", "tcsh", "csh"})
# Interpreters whose script (or `-m` module) names the program they run.
INTERPRETERS = ("python", "node", "perl", "ruby")
MAX_HOPS = 32  # parent chains longer than this are cut (a loop in stale parent links ends too)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the scan read of one process; identity is `(pid, create_time)`."""

    pid: int
    create_time: float
    ppid: int
    name: str  # the kernel's name (setproctitle sets it too)
    argv: tuple[str, ...]
    cwd: str | None  # None: gone, a zombie, or another user's
    outs: tuple[str, ...]  # where its stdout and stderr point
    stdin: str | None  # where its stdin points (`pipe:[…]` in a pipeline)
    status: str
    denied: str | None = None  # the owner of a process runtop may not inspect
    # Read with the rest, as they depend on nothing else: its title's role, and whether it is
    # a bystander (see `bystander`).
    title_role: str | None = None
    away: bool = False
    cmd: str = ""  # the argv joined, as the titles and drivers are matched against it


@dataclass(frozen=True, slots=True)
class Scope:
    """Where the run lives, as the scan knows it."""

    run_dir: str  # realpath
    logs: frozenset[str]  # realpaths of the run's logs
    launch_dir: str | None = None  # where it was launched from, when the plug-in knows (realpath)
    own_dir: bool = False  # the run dir holds this run alone (no other run works or writes there)


FEW_LOGS = 64


@functools.lru_cache(maxsize=8)
def basenames(logs: frozenset[str]) -> frozenset[str]:
    """The logs' file names (kept: a sampler hands the same set every scan)."""
    return frozenset(os.path.basename(p) for p in logs)


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def programs(argv: Iterable[str], name: str) -> set[str]:
    """The names a process runs under: its argv[0], its kernel name, and for an interpreter the
    script or module (`python .venv/bin/runtop` is runtop, `python -m verl.trainer…` is verl)."""
    words = list(argv)
    first = os.path.basename(words[0]) if words else name
    first = first.split(":", 1)[0].strip().lstrip("-")  # `-bash` (a login shell), `tmux: server`
    out = {first, name.strip().lstrip("-")}
    if first.startswith(INTERPRETERS):
        rest = iter(words[1:])
        for w in rest:
            if w == "-m":
                out.add(next(rest, "").split(".", 1)[0])
                break
            if not w.startswith("-"):
                out.add(os.path.basename(w))
                break
    return out


# Shell options whose value is the next word (`bash --rcfile ~/.bashrc -i`), not a script.
OPTION_VALUES = frozenset({"--rcfile", "--init-file", "-o", "+o", "-O", "+O"})


def interactive_shell(argv: tuple[str, ...], name: str) -> bool:
    """A shell with no script and no `-c` command, or one told `-i`: a person's prompt, not a launch."""
    if not programs(argv[:1], name) & SHELLS:
        return False
    words = iter(argv[1:])
    for w in words:
        if w in OPTION_VALUES:
            next(words, None)
            continue
        if w == "-i":
            return True
        if not w.startswith("-") or (not w.startswith("--") and "c" in w[1:]):
            return False
    return True


def bystander(argv: tuple[str, ...], name: str) -> bool:
    return bool(programs(argv, name) & BYSTANDERS) or interactive_shell(argv, name)


def _paths(word: str) -> tuple[str, ...]:
    """The path an argument may be: `--output-dir=x/y` and `logger.log_dir=x/y` are their values."""
    key, eq, value = word.partition("=")
    return (value,) if eq and "/" not in key else (word,)


def _resolves(word: str, cwd: str | None) -> str | None:
    if not os.path.isabs(word):
        if cwd is None:
            return None
        word = os.path.join(cwd, word)
    return os.path.realpath(word)


def names_run(f: Facts, run_dir: str) -> bool:
    """An argument that resolves (relative ones from the process's cwd) to the run dir or a file
    in it: `--output-dir outputs/my-run`, `--save_path=/abs/run`, `logger.log_dir=…`. A basename
    or a substring never counts (`…/xa/outputs/my-run` is not `…/xb/outputs/my-run`), a bare
    word only when it is the run dir's own name, and a relative path from a cwd already in the
    run dir proves no more than that cwd does (the cwd rule decides)."""
    name = os.path.basename(run_dir)
    if name not in f.cmd:  # a cheap test first, the proof next
        return False
    from_inside = f.cwd is not None and inside(f.cwd, run_dir)
    for word in f.argv[1:]:
        for cand in _paths(word):
            if not cand or "/" not in cand and cand != name:
                continue
            if from_inside and not os.path.isabs(cand):
                continue
            path = _resolves(cand, f.cwd)
            if path is not None and inside(path, run_dir):
                return True
    return False


def names_log(f: Facts, logs: frozenset[str], bases: frozenset[str]) -> bool:
    """An argument that is one of the run's logs, bare names too: `tee verl_demo.log`."""
    if len(bases) <= FEW_LOGS and not any(b in f.cmd for b in bases):
        return False  # a cheap test first where there are few names (20k env logs: 5 M tests a scan)
    for word in f.argv[1:]:
        for cand in _paths(word):
            if cand and os.path.basename(cand) in bases and _resolves(cand, f.cwd) in logs:
                return True
    return False


def writes_log(f: Facts, logs: frozenset[str]) -> bool:
    return any(o in logs for o in f.outs)


def _direct(f: Facts, scope: Scope, titled: bool, bases: frozenset[str], name: str) -> str | None:
    """Why the process itself is the run's (an argument, its log, its cwd), or None."""
    if name in f.cmd and names_run(f, scope.run_dir) and not programs(f.argv[:1], f.name) & SHELLS:
        return "argv"  # a shell's `-c "… RUN …"` mentions the run; what it starts may be it
    if names_log(f, scope.logs, bases) or writes_log(f, scope.logs):
        return "log"
    if scope.own_dir and any(inside(o, scope.run_dir) for o in f.outs):
        return "log"  # prime-rl's launcher sends each child's stdout to `logs/<role>.stdout`
    if f.cwd is not None:
        # A dir only this run uses proves any process working in it or below. A dir runs share
        # (the checkout a driver log sits in, SkyRL's launch dir, or a home dir) proves only a
        # titled process working in that very dir, as a launch's children do (Ray's workers too).
        if scope.own_dir and inside(f.cwd, scope.run_dir):
            return "cwd"
        if titled and f.cwd in (scope.run_dir, scope.launch_dir):
            return "cwd"
    return None


def _parent(by_pid: dict[int, Facts], f: Facts) -> Facts | None:
    p = by_pid.get(f.ppid)
    # A parent younger than its child is a reused PID in a stale parent link, not the parent.
    if p is None or p.pid == f.pid or p.create_time > f.create_time + 1.0:
        return None
    return p


def claim(facts: Iterable[Facts], scope: Scope, driver_role: Callable[[Facts], str | None]) -> dict[int, str | None]:
    """pid → role (None: the run's, in no role) of every process that is the run's.
    `driver_role` is the plug-in's part: the role of an untitled process that drives the run."""
    by_pid = {f.pid: f for f in facts}
    bases = basenames(scope.logs)
    name = os.path.basename(scope.run_dir)
    away = {pid for pid, f in by_pid.items() if f.away}
    titled = {pid for pid, f in by_pid.items() if f.title_role is not None}
    own: set[int] = set()
    writers: list[Facts] = []
    for pid, f in by_pid.items():
        if pid in away:
            continue
        why = _direct(f, scope, pid in titled, bases, name)
        if why is not None:
            own.add(pid)
            if why == "log":
                writers.append(f)
    # A pipeline writing the log (`python3 -m … 2>&1 | tee run.log`): tee names the log, and what
    # feeds its stdin is the run, stage by stage upstream (a filter between them is passed
    # through, and claimed unless it is a bystander).
    feeds: dict[str, list[Facts]] = {}
    for f in by_pid.values():
        for o in f.outs:
            if o.startswith("pipe:"):
                feeds.setdefault(o, []).append(f)
    todo, seen = list(writers), {w.pid for w in writers}
    while todo and len(seen) < MAX_HOPS * 4:
        w = todo.pop()
        for up in feeds.get(w.stdin or "", []) if (w.stdin or "").startswith("pipe:") else []:
            if up.pid not in seen:
                seen.add(up.pid)
                todo.append(up)
                if up.pid not in away:
                    own.add(up.pid)
    # A titled parent of the run's process is the run's too (the launcher whose children write
    # into the run dir, from a cwd elsewhere); an untitled one may be the user's shell.
    for pid in list(own):
        f, hops = by_pid[pid], 0
        while hops < MAX_HOPS and (p := _parent(by_pid, f)) is not None and p.pid in titled and p.pid not in away:
            own.add(p.pid)
            f, hops = p, hops + 1
    # Every descendant, except bystanders and what runs under them.
    known: dict[int, bool] = {pid: True for pid in own}
    known.update({pid: False for pid in away})
    for pid in by_pid:
        chain: list[int] = []
        f, verdict = by_pid[pid], False
        while len(chain) < MAX_HOPS:
            if f.pid in known:
                verdict = known[f.pid]
                break
            chain.append(f.pid)
            p = _parent(by_pid, f)
            if p is None:
                break
            f = p
        for c in chain:
            known[c] = verdict
    own = {pid for pid, yes in known.items() if yes and pid in by_pid}
    own |= _standalone_ray_workers(by_pid, own, away, driver_role)
    out: dict[int, str | None] = {}
    for pid in sorted(own):
        f = by_pid[pid]
        out[pid] = f.title_role or driver_role(f)
    return out


def _standalone_ray_workers(by_pid: dict[int, Facts], own: set[int], away: set[int],
                            driver_role: Callable[[Facts], str | None]) -> set[int]:
    """Ray's workers under a cluster started apart (`ray start --head`, then the driver): they
    descend from that raylet, not from the driver. While this run's driver lives they are its
    own (one cluster per run). A cluster a driver started itself (`ray.init()`) hangs under
    that driver: descent already decides, and another run's is never taken."""
    if not any(driver_role(by_pid[pid]) is not None for pid in own):
        return set()
    out = set()
    for pid, f in by_pid.items():
        if pid in own or pid in away or not (f.cmd or f.name).startswith("ray::") or f.title_role is None:
            continue
        raylet = _ancestor(by_pid, f, lambda a: "raylet" in programs(a.argv, a.name))
        if raylet is not None and not _started_by_a_driver(by_pid, raylet):
            out.add(pid)
    return out


def _started_by_a_driver(by_pid: dict[int, Facts], raylet: Facts) -> bool:
    """`ray.init()` starts the raylet as the driver's own child; `ray start` leaves it to init
    (or to `ray start --block`, Ray's own CLI)."""
    p = _parent(by_pid, raylet)
    if p is None or p.pid == 1:
        return False
    names = programs(p.argv, p.name)
    return "ray" not in names and any(n.startswith("python") for n in names)


def _ancestor(by_pid: dict[int, Facts], f: Facts, pred: Callable[[Facts], bool]) -> Facts | None:
    for _ in range(MAX_HOPS):
        p = _parent(by_pid, f)
        if p is None:
            return None
        if pred(p):
            return p
        f = p
    return None
