"""A run that stopped making progress, judged at its own pace (docs/reading.md, "Stalls, at the
run's own pace"): Degraded once no step came for longer than its pace allows (`runtop.rules.pace`),
Down when the evidence agrees — nothing written anywhere and its GPUs idle or its stacks in a
collective — or when nothing was written anywhere for the silence limit (a reclaimed pod).
What stopped first is named (`culprit`)."""

from __future__ import annotations

import re

from runtop.parsers.node_files import node_of
from runtop.rules.findings import Facts, Finding
from runtop.rules.hang import busy_gpus, idle_rank
from runtop.rules.pace import Limit, Pace, PaceView, saving
from runtop.state.run import RunState
from runtop.units import duration

SAVE_DOWN_FACTOR = 3.0
SAVE_DOWN_S = 3600.0


def pace_of(f: Facts) -> PaceView:
    """The run's pace: the engine's, or one measured once from the files (`HealthTracker.evaluate`)."""
    return f.pace if f.pace is not None else Pace.once(f.state, f.now)


def stalled(f: Facts) -> list[Finding]:
    """No step for longer than the run's pace allows, or no write at all (a reclaimed spot pod:
    docs/incidents.md#vllm-dies-silently)."""
    s = f.state
    if f.finished() or s.open_fatals():
        return []  # a crash explains the silence; the crash rule says so
    newest = f.newest_write()
    if newest is None or f.booting():
        return []
    scale = f.cfg.time_scale
    pace = pace_of(f)
    # Nothing written, and nothing done: a save that completed or grew is the run's doing though no log says so.
    newest = max(newest, pace.last_progress or newest, pace.last_alive or newest)
    quiet = (f.now - newest) * scale  # in the run's own seconds (a demo runs faster)
    lim = pace.limit(s, f.cfg)
    block = (pace.block_wait or 0.0) * scale
    if 2 * block > lim.seconds:
        # A block-buffered log (`python train.py > log`, no -u) says nothing until its next 8 KB.
        lim = Limit(2 * block, f"its log is written in 8 KB blocks, one every {duration(block)}", lim.p99)
    limit = lim.seconds
    waiting = waiting_on(s)
    alive = f.alive
    live = f.trainer_live
    silence = max(f.cfg.silence_s, limit, 2.5 * block)
    if quiet >= silence and live is not None and live.last_step_ts is not None:
        fresh = (f.now - live.last_step_ts) * scale
        if fresh < limit:
            # The trainer steps on its own clock while the files say nothing: the logs lag
            # (a shared filesystem's attribute cache, a stuck writer), the run does not.
            logged = s.current_step()
            msg = (f"the logs have been silent for {duration(quiet)}, but the trainer's /metrics says step {live.step} came "
                   f"{duration(fresh)} ago (the logs show step {logged if logged is not None else 'none'}): what runtop reads lags the run")
            return [Finding("stalled", "warning", msg, live.url, subject="logs lag")]
    first = culprit(f, lim)
    idle = (f.now - pace.last_progress) * scale if pace.last_progress is not None and s.current_step() is not None else None
    # An evaluation or a save it said it is in: alive while that goes on, though no step comes.
    awake = idle if idle is None or pace.pause is None else min(idle, (f.now - (pace.last_alive or f.now)) * scale)
    held = idle_gpus(f, limit)
    stacks = f.forensics if f.forensics and "a collective" in f.forensics else None
    if saving(s):
        # A save being written is evidence against a hang: its GPUs sit idle and its logs are
        # quiet by nature. Down waits for thrice the longest save seen (an hour before one).
        silence = max(silence, SAVE_DOWN_FACTOR * max(pace.saves) * scale if pace.saves else SAVE_DOWN_S)
        held = None
    agrees = quiet >= limit and awake is not None and awake >= limit and (held or stacks)
    busy = busy_gpus(f) if s.current_step() is None else ""
    if quiet >= silence and busy:
        # Before its first step, GPUs at work: it compiles, loads or generates its first rollouts
        # behind a quiet (or block-buffered) log. A hang at start-up (a rendezvous, a process
        # group's init) leaves them idle.
        return [Finding("stalled", "info", f"no log write anywhere for {duration(quiet)} and no step yet; GPU {busy} busy: warming up "
                        "behind a quiet or block-buffered log?", f"newest write {duration(quiet)} ago", since_ts=newest, subject="silence")]
    if quiet >= silence or agrees:
        nobody = alive is not None and not any(p for r, p in alive.items() if r != "ray")
        # Silent this long, the run is not training, whether its processes are gone (a
        # reclaimed pod) or alive and hung (an NCCL hang): Down either way (a
        # critical stall under a "Degraded" verdict read as a contradiction).
        alive_but = "; its processes are alive but silent: hung?" if alive and not nobody else ""
        gone = "; no run process alive: the pod or job may be gone"
        job = f.slurm.job if f.slurm is not None else None
        if job is not None and job.state.alive:
            # The scheduler still runs it: its processes are on nodes this machine cannot see.
            gone = f"; SLURM job {job.job_id} is still {job.state_text} on {job.nodes or 'its nodes'}: hung?"
        if agrees and quiet < silence:
            why = "; ".join(x for x in (held and f"GPU {held} idle holding the run's memory", stacks and "its stacks wait in a collective") if x)
            msg = f"{_no_step(idle or quiet, awake or quiet, pace.pause, lim)} and nothing written for {duration(quiet)}; {why}: hung?"
        else:
            msg = f"no log write anywhere for {duration(quiet)}" + (gone if nobody else (f"; {waiting}" if waiting else alive_but))
        msg += f"; {first}" if first else ""
        # Since the last write: when the silence began, not when runtop noticed it.
        evidence = f"newest write {duration(quiet)} ago" + (f"; stacks: {f.forensics}" if f.forensics else "")
        if live is not None and live.last_step_ts is not None:
            evidence += f"; trainer /metrics: step {live.step}, {duration((f.now - live.last_step_ts) * scale)} ago"
        return [Finding("stalled", "critical", msg, evidence, since_ts=newest, down=True, subject="silence")]
    # Degraded early where the run went silent past its own pace; where its logs go on (an
    # evaluation's bar, retries), no sooner than the fixed limit. Down waits for the evidence.
    if idle is not None and awake is not None and awake >= (limit if quiet >= limit else max(limit, f.cfg.stall_min_s)):
        writing = "nothing written anywhere since" if quiet >= limit else f"the logs go on (newest write {duration(quiet)} ago)"
        msg = f"{_no_step(idle, awake, pace.pause, lim)}; {writing}" + (f"; {waiting}" if waiting else "") + (f"; {first}" if first else "")
        since = pace.last_progress
        return [Finding("stalled", "warning", msg, f"last step {s.current_step()} at {s.last_step_time or 'an unknown log time'}; limit {lim.why}",
                        s.last_step_time, since_ts=None if s.last_step_time else since, subject="no step")]
    return []


def _no_step(idle: float, alive: float, pause: str | None, lim: Limit) -> str:
    """`no step for 4m10s (3.1× its p99 step gap, 42s)`, or, in a pause the run said it was in,
    `no step for 1h02m; the evaluation has said nothing for 2m10s (3.1× …)`."""
    if pause is None or alive >= idle:
        return f"no step for {duration(idle)} ({_past(idle, lim)})"
    return f"no step for {duration(idle)}; the {pause} has said nothing for {duration(alive)} ({_past(alive, lim)})"


def _past(idle: float, lim: Limit) -> str:
    """`3.1× its p99 step gap (42s)`, or the limit passed and why it stood there."""
    if lim.p99 and lim.why.startswith(("2× its p99", "the ")):
        return f"{idle / lim.p99:.1f}× its p99 step gap, {duration(lim.p99)}"
    return f"past its limit of {duration(lim.seconds)}: {lim.why}"


def idle_gpus(f: Facts, limit: float) -> str | None:
    """GPUs that have sat at 0 % holding the run's memory for the whole limit, as `0, 3`."""
    if not f.gpu_idle:
        return None
    long = sorted(i for i, idle in f.gpu_idle.items() if (f.now - idle.since) * f.cfg.time_scale >= min(limit, f.cfg.gpu_idle_s))
    return ", ".join(map(str, long)) or None


def culprit(f: Facts, lim: Limit) -> str | None:
    """What stopped first in a run that went quiet (docs/reading.md, "Stalls, at the run's own
    pace"): the process whose stack is not in the collective the others wait in, the GPU idle
    while its peers spin in one, or the node whose log stopped first."""
    return odd_stack(f.forensics) or idle_rank(f) or first_stopped(f.state, lim, f.cfg.time_scale)


# `3 of 4 trainer process(es) in `all_reduce` (a collective); pid 2210 in `load_batch`` (parsers/pyspy.py's summary)
ODD_STACK_RE = re.compile(r"(\d+) of (\d+) (\S+) process\(es\) in `[^`]*` \(a collective\); pid (\d+) in `([^`]*)`")


def odd_stack(forensics: str | None) -> str | None:
    """The one process of a role whose stack is elsewhere while the others wait in a collective."""
    m = ODD_STACK_RE.search(forensics or "")
    if m is None:
        return None
    waiting, total, role, pid, where = m.groups()
    return f"{role} pid {pid} stopped first: in `{where}` while {waiting} of {total} wait in a collective"


def first_stopped(s: RunState, lim: Limit, scale: float) -> str | None:
    """On a multi-node run whose nodes all went quiet, the node whose log stopped first: the one
    the others wait on in a collective (`node 2 stopped first, 48s before the others`)."""
    by_role: dict[str, list[tuple[float, int]]] = {}
    for info in s.files.values():
        at = node_of(info.path)
        if at is not None and info.kind == "log" and info.mtime is not None:
            by_role.setdefault(info.role, []).append((info.mtime, at[0]))
    gap = max(5.0, 0.25 * (lim.p99 or 0.0))
    for role, nodes in sorted(by_role.items()):
        if len(nodes) < 2:
            continue
        nodes.sort()
        (t0, node), (t1, _) = nodes[0], nodes[1]
        if (t1 - t0) * scale >= gap:
            return f"{role} node {node} stopped first, {duration((t1 - t0) * scale)} before the others"
    return None


def waiting_on(s: RunState) -> str:
    for role, on in sorted(s.waiting.items()):
        return f"{role} waiting on {on}"
    if s.batch is not None and s.batch.inflight == 0 and s.batch.done < (s.batch.total or 1):
        return "waiting on env: no rollouts in flight"
    return ""


SLOW_WINDOW = 8  # the last this many step gaps …
SLOW_FACTOR = 2.0  # … took on average this much longer than the run's usual windows, most of them slow


def slowdown(f: Facts) -> list[Finding]:
    """The run's steps slowed down as a whole: the mean of its last 8 step gaps is twice the
    median of its earlier windows' means, and most of those 8 were slow (a straggler rank or node
    slows every synchronous step; one long pause, or a heavy tail's random slow step, does not)."""
    if f.finished() or f.state.open_fatals():
        return []
    gaps = pace_of(f).gaps
    if len(gaps) < 4 * SLOW_WINDOW:
        return []
    earlier = gaps[:-SLOW_WINDOW][-6 * SLOW_WINDOW:]
    typical = sorted(earlier)[len(earlier) // 2]
    # Each gap counted at most 3× the typical one: one long pause (an evaluation, a save) is not a slowdown.
    cap = 3 * typical
    recent = [min(g, cap) for g in gaps[-SLOW_WINDOW:]]
    before = [min(g, cap) for g in earlier]
    windows = sorted(sum(before[i:i + SLOW_WINDOW]) / SLOW_WINDOW for i in range(0, len(before) - SLOW_WINDOW + 1, SLOW_WINDOW))
    usual = windows[len(windows) // 2]
    now = sum(recent) / SLOW_WINDOW
    slow = sum(1 for g in recent if g >= 1.5 * typical)
    if usual <= 0 or now < SLOW_FACTOR * usual or slow * 2 < SLOW_WINDOW:
        return []
    scale = f.cfg.time_scale
    msg = (f"steps {now / usual:.1f}× slower over the last {SLOW_WINDOW} (mean gap {duration(usual * scale)} → {duration(now * scale)}): "
           "a straggler rank or node, a throttled GPU, or a slower phase?")
    return [Finding("slowdown", "warning", msg, f"the last {SLOW_WINDOW} step gaps against the {len(before)} before", subject="pace")]
