"""Hangs that leave the logs talking: a GPU holding a run's memory at 0 % while no
step completes (a rank stuck in a collective: its peers' logs may go on), and the env
server's event loop lagging (rollouts time out while every process looks alive)."""

from __future__ import annotations

from dataclasses import dataclass

from runtop.parsers.node_files import node_of
from runtop.rules.findings import Facts, Finding
from runtop.sources.gpu import GpuSnapshot
from runtop.units import duration, human_bytes

GIB = 1 << 30
BUSY_PCT = 90.0  # a GPU this busy while the run makes no step: NCCL spinning in a collective


@dataclass
class Idle:
    since: float  # wall time the GPU was first seen idle with the run's memory held
    step: int | None  # the run's step then: a step completed since clears nothing, it proves work
    held: int  # bytes the run's processes hold on it


class GpuIdleTracker:
    """Per GPU, since when it has sat at 0 % with ≥ 1 GiB held by a run process (the engine
    updates it with each NVML reading; the rule reads it)."""

    def __init__(self) -> None:
        self.idle: dict[int, Idle] = {}

    def update(self, snap: GpuSnapshot, run_pids: set[int], step: int | None, now: float) -> None:
        seen = set()
        for g in snap.gpus:
            held = sum(p.used_bytes or 0 for p in g.processes if p.pid in run_pids)
            if g.error is None and g.util_pct is not None and g.util_pct < 1.0 and held >= GIB:
                seen.add(g.index)
                idle = self.idle.setdefault(g.index, Idle(now, step, held))
                idle.held = held
        for index in [i for i in self.idle if i not in seen]:
            del self.idle[index]


def gpu_idle_held(f: Facts) -> list[Finding]:
    if f.finished() or f.state.open_fatals() or not f.gpu_idle:
        return []  # a crash or the end explains an idle GPU
    out = []
    step = f.state.current_step()
    culprit = idle_rank(f)
    for index, idle in sorted(f.gpu_idle.items()):
        quiet = (f.now - idle.since) * f.cfg.time_scale
        if quiet < f.cfg.gpu_idle_s or step != idle.step:
            continue
        why = culprit if culprit and f"GPU {index} stopped" in culprit else "a rank may be stuck in a collective"
        msg = (f"GPU {index} idle with {human_bytes(idle.held)} held for {duration(quiet)} and no step since: "
               f"{why} (F or `runtop forensics` saves the stacks)")
        out.append(Finding("gpu_idle", "warning", msg, f"NVML: GPU {index} at 0 %", since_ts=idle.since, subject=f"gpu {index}"))
    return out


def busy_gpus(f: Facts) -> str:
    """The GPUs holding the run's memory at work (half busy or more), as `0, 3`; "" when none or unknown."""
    if f.gpu is None or not f.state.processes:
        return ""
    pids = {pid for ps in f.state.processes.values() for pid in ps}
    busy = [g.index for g in f.gpu.gpus if g.util_pct is not None and g.util_pct >= 50.0
            and sum(p.used_bytes or 0 for p in g.processes if p.pid in pids) >= GIB]
    return ", ".join(map(str, busy))


def idle_rank(f: Facts) -> str | None:
    """A GPU of a role idle with its memory held while that role's other GPUs spin at full use
    (NCCL's kernels busy-wait in a collective whose missing rank is the idle one)."""
    if f.gpu is None or not f.gpu_idle or not f.state.processes:
        return None
    role_of = {pid: role for role, pids in f.state.processes.items() for pid in pids}
    by_role: dict[str, list[tuple[int, bool]]] = {}
    for g in f.gpu.gpus:
        roles = {role_of.get(p.pid) for p in g.processes} - {None}
        if len(roles) == 1 and g.util_pct is not None:
            by_role.setdefault(str(roles.pop()), []).append((g.index, g.util_pct >= BUSY_PCT))
    for role, gpus in sorted(by_role.items()):
        idle = [i for i, _ in gpus if i in f.gpu_idle]
        busy = [i for i, spinning in gpus if spinning]
        if idle and len(idle) < len(busy):
            return (f"{role} rank on GPU {', '.join(map(str, idle))} stopped first: idle holding its memory while "
                    f"GPU {', '.join(map(str, busy))} spin at full use (a collective waiting on it)")
    return None



def env_lag(f: Facts) -> list[Finding]:
    """v0.6's env router prints its event loop's lag (`Server | Lag: … p99=11ms …`)."""
    p99 = f.state.env.lag_ms.get("p99")
    if p99 is None or p99 < f.cfg.env_lag_p99_ms:
        return []
    top = f.state.env.lag_ms.get("max")
    msg = (f"env server event loop lagging: p99 {p99 / 1000:.1f} s" + (f" (max {top / 1000:.1f} s)" if top is not None else "")
           + f" > {f.cfg.env_lag_p99_ms / 1000:g} s: rollouts wait on it and may time out")
    return [Finding("env_lag", "warning", msg, "env server log (Lag:)", subject="env loop")]


def node_silent(f: Facts) -> list[Finding]:
    """One node's log stopped while the same role's other nodes go on writing (a multi-node
    run: a hung or lost node shows only in its own file)."""
    if f.finished() or f.state.open_fatals():
        return []
    by_role: dict[str, list[tuple[int, float]]] = {}
    for info in f.state.files.values():
        at = node_of(info.path)
        if at is not None and info.kind == "log" and info.mtime is not None:
            by_role.setdefault(info.role, []).append((at[0], info.mtime))
    out = []
    limit = max(f.cfg.stall_min_s, 1.0)
    for role, nodes in sorted(by_role.items()):
        if len(nodes) < 2:
            continue
        newest = max(t for _, t in nodes)
        if (f.now - newest) * f.cfg.time_scale > limit:
            continue  # every node is quiet: the stall rule's to say
        quiet = sorted(n for n, t in nodes if (newest - t) * f.cfg.time_scale > limit)
        going = sorted(n for n, t in nodes if n not in quiet)
        for n in quiet:
            since = dict(nodes)[n]
            msg = (f"{role} node {n} has written nothing for {duration((newest - since) * f.cfg.time_scale)} while node(s) "
                   f"{', '.join(map(str, going))} go on: hung or lost? (F saves the stacks of this machine's processes)")
            out.append(Finding("node_silent", "warning", msg, f"{role}/node_{n}.log", since_ts=since, subject=f"{role} node {n}"))
    return out
