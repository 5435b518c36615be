"""Rules on the Ray cluster a run lives in: which actor died, why, and which node
was lost, from Ray's state API rather than the driver's wrapper.

A Ray-based run's log usually says only `ActorDiedError: The actor died unexpectedly` (a
wrapper: `parsers.crashes`); the state API keeps each dead actor's `death_cause` with Ray's
reason. So when the log's only death is a wrapper, the dead actor (the one whose pid the
wrapper names, else the most telling) becomes the cause. A specific death in the log (a
CUDA OOM traceback, a SIGBUS) stays the cause; the actor is its evidence. Dead actors with
no death in the log may be an earlier job's on a shared cluster: said as info, never a verdict.
"""

from __future__ import annotations

from runtop.rules.findings import Facts, Finding
from runtop.sources.ray_state import DeadActor, RaySnapshot

# Ray's reasons, most telling first, in words (ray/_private/... `ActorDiedErrorContext.Reason`).
REASONS: dict[str, str] = {
    "NODE_DIED": "its node died",
    "OUT_OF_MEMORY": "Ray's memory monitor killed it (the node's RAM)",
    "WORKER_DIED": "its worker process died (the kernel's OOM killer, a segfault, or `ray stop --force`)",
    "CREATION_TASK_ERROR": "its __init__ raised",
    "OWNER_DIED": "its owner died",
    "RAY_KILL": "it was killed with ray.kill",
}
GENERIC_RANK = 30  # a log death ranked this or above only reports one (parsers.crashes: WorkerDied, ActorDiedError)


def _start(f: Facts) -> float | None:
    """When the run began, on the wall clock: its newest write less its log-clock duration."""
    newest, span = f.newest_write(), f.state.duration_s()
    return newest - span if newest is not None and span is not None else None


def _pick(snap: RaySnapshot, pids: set[int]) -> DeadActor:
    named = [a for a in snap.dead if a.pid is not None and a.pid in pids]
    order = list(REASONS)
    pool = named or list(snap.dead)
    return min(pool, key=lambda a: order.index(a.reason) if a.reason in order else len(order))


def ray_cluster(f: Facts) -> list[Finding]:
    snap = f.ray
    if snap is None:
        return []
    out: list[Finding] = []
    evidence = f"Ray state API at {snap.address} ({snap.how})"
    fatals = f.state.open_fatals()
    start = _start(f)
    for node in snap.lost_nodes():
        if start is not None and node.end_ms and node.end_ms / 1000 < start - 60:
            continue  # lost before this run began
        on_it = [a.label for a in snap.dead if a.node_id == node.node_id]
        gpus = f" ({node.gpus:g} GPUs)" if node.gpus else ""
        why = f": {node.message}" if node.message else ""
        also = f"; its actors died: {', '.join(on_it[:3])}" if on_it else ""
        out.append(Finding("ray", "critical" if on_it else "warning", f"Ray lost node {node.ip}{gpus}{why}{also}", evidence,
                           subject=f"node:{node.node_id}"))
    if not snap.dead:
        return out
    actor = _pick(snap, {e.pid for e in fatals if e.pid})
    words = REASONS.get(actor.reason, actor.reason)
    detail = f" ({actor.message[:140]})" if actor.message and actor.reason in ("CREATION_TASK_ERROR", "NODE_DIED") else ""
    line = f"Ray actor {actor.label} on {actor.ip or '?'} died: {actor.reason}, {words}{detail}"
    if fatals and all(e.rank >= GENERIC_RANK for e in fatals):
        # The log names only the wrapper: the state API knows which actor and why.
        wrapper = fatals[0].kind
        out.insert(0, Finding("ray", "critical", f"{line}; the log reports it as {wrapper}", evidence, down=True,
                              cause=actor.reason, wrapper=wrapper, subject="actor"))
    elif fatals:
        out.append(Finding("ray", "info", f"{line} (the crash above is the cause)", evidence, subject="actor"))
    else:
        n = len(snap.dead)
        out.append(Finding("ray", "info", f"{n} dead Ray actor{'s' if n > 1 else ''} on the cluster, none in this run's logs: "
                           f"{line} (an earlier job's?)", evidence, subject="actors"))
    return out
