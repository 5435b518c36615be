"""The run that vanishes: every process runtop saw gone at once, and the logs say nothing
(SIGKILL of the whole run, the OOM killer, a reclaimed pod, a lost node), judged over the
process lifetimes the engine keeps (docs/reading.md, "A run that vanishes")."""

from __future__ import annotations

import datetime as _dt

from runtop.rules.findings import Facts, Finding, _short
from runtop.sources.lifetimes import GONE_SAMPLES, Seen
from runtop.state.run import RunState

# A log written this long after the last process runtop saw went is written by one it cannot see.
WRITE_SLACK_S = 2.0


def vanished(f: Facts) -> list[Finding]:
    """Every process of the run gone at once and the logs say nothing: killed whole (SIGKILL,
    the OOM killer), a reclaimed pod or a lost node, the commonest death there is
    (docs/reading.md, "A run that vanishes"). Seen over two samples by this runtop, or
    against what an earlier one recorded; a run whose processes this host never showed is
    said to be judged from its files alone."""
    s, lt = f.state, f.lifetimes
    if lt is None or not lt.sampled or f.alive is None or lt.alive_now or f.finished() or s.open_fatals():
        return []  # a death in the logs is the crash rule's; some processes left, the missing-role rule's
    here = f"this host ({lt.host})"
    if lt.last_alive:
        if lt.gone_samples < GONE_SAMPLES or lt.gone_at is None:
            return []
        newest = f.newest_write()
        if newest is not None and newest > lt.gone_at + WRITE_SLACK_S:
            msg = (f"every process runtop saw of this run is gone since {_clock(s, lt.gone_at)}, yet its logs are still "
                   f"written: a process runtop cannot see on {here} writes them")
            return [Finding("vanished", "info", msg, "process table", subject="unseen writer")]
        return [_vanished(f, lt.last_alive, f"exited at {_clock(s, lt.gone_at)}", lt.gone_at)]
    rec = lt.recorded
    job = f.slurm.job if f.slurm is not None else None
    if rec is not None and rec.host == lt.host and rec.attempt >= s.attempt and not (job is not None and job.state.alive):
        newest = f.newest_write()
        if rec.gone_at is None or newest is None or newest <= rec.gone_at + WRITE_SLACK_S:
            when = f"exited at {_clock(s, rec.gone_at)}" if rec.gone_at else f"exited since runtop saw them alive at {_clock(s, rec.alive_at)}"
            return [_vanished(f, rec.processes, when, rec.gone_at or rec.alive_at)]
    if f.booting() or s.current_step() is None:
        return []
    elsewhere = f"; runtop saw them on {rec.host} at {_clock(s, rec.alive_at)}" if rec is not None and rec.host != lt.host else ""
    msg = f"no process of this run on {here}: judged from its files alone{elsewhere}"
    return [Finding("vanished", "info", msg, "process table", subject="unseen")]


def _vanished(f: Facts, gone: tuple[Seen, ...], when: str, at: float) -> Finding:
    s, lt = f.state, f.lifetimes
    roles = sorted({p.role for p in gone if p.role})
    who = f"{', '.join(roles) or 'its processes'} ({len(gone)} process{'es' if len(gone) != 1 else ''})"
    oom = lt.oom if lt is not None else ()
    if oom:
        kill = oom[0]
        role = next((p.role for p in gone if p.pid == kill.pid and p.role), None)
        how = (f"the kernel's OOM killer killed {kill.name} pid {kill.pid}{f' ({role})' if role else ''}"
               f"{f' at {_clock(s, kill.at)}' if kill.at else ''}: the host ran out of memory")
        cause = "OOM killer"
    elif f.shell_says is not None:
        said = f.shell_says
        why = SHELL_MEANS.get(said.signal, "ended by a signal")
        how = f"the Launcher pane's shell says {_short(said.line, 60)!r} ({said.signal}): {why}"
        cause = said.signal
    else:
        how = "killed (SIGKILL / OOM killer), pod reclaimed or node lost"
        cause = "vanished"
    ckpt = s.last_complete_checkpoint()
    saved = f"last complete checkpoint: step {ckpt.step}" if ckpt else ("no complete checkpoint" if s.checkpoints else "no checkpoint read")
    msg = f"every process of the run {when} and the logs say nothing: {how}; {saved}"
    return Finding("vanished", "critical", msg, f"process table: {who} alive, then none", since_ts=at, down=True,
                   cause=cause, subject="run")


# What a signal its shell names says of a run's death (the kernel's OOM kill, where known, says more).
SHELL_MEANS = {
    "SIGKILL": "killed outright (the OOM killer, a preemption, kill -9)",
    "SIGTERM": "stopped from outside (scancel, a pod's shutdown, kill)",
    "SIGHUP": "its terminal went away (an SSH session closed without tmux)",
    "SIGINT": "interrupted (ctrl+c)",
}


def _clock(s: RunState, ts: float) -> str:
    """A wall time on the logs' clock, as every `since` is shown (else the wall's)."""
    return s.log_clock(ts) or _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")
