"""Rules on the SLURM job a run lives in: what the scheduler did to it.

A job the scheduler ended (its time limit, a preemption, a failed node, the cgroup's
memory limit, a `scancel`) leaves logs that just stop: the run reads as a stall until
someone runs `sacct`. These rules put the scheduler's word in the verdict instead, ahead
of the stall it causes. A job that *failed* (its script exited non-zero) is the log's to
explain: the crash rule names the exception, this one adds the exit code as evidence.
"""

from __future__ import annotations

from runtop.parsers.slurm import JobState, SlurmJob, slurm_time
from runtop.rules.findings import Facts, Finding
from runtop.units import duration

# What each scheduler-side end means, in words (slurm.schedmd.com/job_state_codes.html).
KILLED = {
    JobState.TIMEOUT: "hit its time limit",
    JobState.PREEMPTED: "was preempted",
    JobState.NODE_FAIL: "lost a node (NODE_FAIL)",
    JobState.OUT_OF_MEMORY: "was killed for memory (OUT_OF_MEMORY: the job's cgroup limit, host RAM, not the GPU's)",
    JobState.BOOT_FAIL: "failed to boot its nodes",
    JobState.DEADLINE: "passed its deadline",
    JobState.CANCELLED: "was cancelled",
}
# Time left below this is said even when the checkpoint cadence is unknown.
WALLTIME_FLOOR_S = 15 * 60


def _name(job: SlurmJob) -> str:
    return f"SLURM job {job.job_id}"


def _where(f: Facts) -> str:
    step = f.state.current_step()
    last = f.state.last_complete_checkpoint()
    at = f" at step {step}/{f.state.max_steps or '?'}" if step is not None else ""
    return at + (f"; last complete checkpoint: step {last.step}" if last else "; no complete checkpoint to resume from")


def _evidence(f: Facts) -> str:
    snap = f.slurm
    assert snap is not None
    job = snap.job
    parts = [f"{snap.source}"]
    if job is not None:
        parts.append(f"state {job.state_text or job.state.value}")
        if job.exit_code is not None:
            parts.append(f"exit {job.exit_code}:{job.signal or 0}")
        if job.elapsed_s is not None:
            parts.append(f"ran {duration(job.elapsed_s)}" + (f" of {duration(job.limit_s)}" if job.limit_s else ""))
        if job.nodes:
            parts.append(f"nodes {job.nodes}")
    parts.append(f"job from {snap.ref.how}")
    if snap.log_end is not None:
        parts.append(f"{snap.ref.log}: {snap.log_end.line[:160]}")
    return "; ".join(parts)


def slurm_job(f: Facts) -> list[Finding]:
    """The job's state, when it says more than the logs: ended by the scheduler (Down,
    named as the cause), ended while the logs never finished, or queued again."""
    snap = f.slurm
    if snap is None:
        return []
    out = [Finding("slurm", "info", f"SLURM: {note}", snap.source or "squeue/sacct", subject=f"note:{note[:40]}") for note in snap.notes]
    job = snap.job
    end = snap.log_end
    if job is None:
        if end is not None and end.state in KILLED and not f.finished():
            # No squeue/sacct here (a copied run dir, a laptop): the job's own output says it.
            on = end.node and end.state in (JobState.NODE_FAIL, JobState.OUT_OF_MEMORY)
            words = KILLED[end.state] + (f" on {end.node}" if on else "")
            msg = f"SLURM job {snap.ref.job_id} {words} (its output says so){_where(f)}"
            out.append(Finding("slurm", "critical", msg, f"{snap.ref.log}: {end.line[:160]}", down=True, cause=end.state.value, subject="job"))
        return out
    name = _name(job)
    state = job.state
    step = f.state.current_step()
    where = f" at step {step}/{f.state.max_steps or '?'}" if step is not None else ""
    resume = _where(f)[len(where):]
    worst = job.worst_step()
    if state is JobState.FAILED and worst is not None:
        state = worst[1]  # `4242.0 OUT_OF_MEMORY` under a FAILED allocation: the step's is the cause
    if state in KILLED:
        words = KILLED[state]
        if state is JobState.CANCELLED and job.state_text.upper().startswith("CANCELLED BY"):
            words += f" ({job.state_text.split(' ', 1)[1]})"
        if state is JobState.TIMEOUT and job.limit_s:
            words += f" ({slurm_time(job.limit_s)})"
        if state is JobState.NODE_FAIL and job.nodes:
            words += f" on {job.nodes}"
        msg = f"{name} {words}{where}{resume}"
        out.append(Finding("slurm", "critical", msg, _evidence(f), down=True, cause=state.value, subject="job"))
        return out
    if state is JobState.FAILED:
        code = f" with exit code {job.exit_code}" if job.exit_code is not None else ""
        sig = f" (signal {job.signal})" if job.signal else ""
        if f.state.open_fatals():
            # The log names the exception; the exit code is evidence beside it.
            out.append(Finding("slurm", "info", f"{name} FAILED{code}{sig}: the crash above is its cause", _evidence(f), subject="job"))
        else:
            out.append(Finding("slurm", "critical", f"{name} FAILED{code}{sig}{where}; the logs name no error{resume}",
                               _evidence(f), down=True, cause="FAILED", subject="job"))
        return out
    if state is JobState.COMPLETED and not f.finished():
        if f.state.open_fatals():
            out.append(Finding("slurm", "info", f"{name} ended COMPLETED after the crash above (its script's last command succeeded)", _evidence(f), subject="job"))
            return out
        msg = f"{name} ended COMPLETED (exit {job.exit_code or 0}) but the run never said it finished{where}{resume}"
        out.append(Finding("slurm", "critical", msg, _evidence(f), down=True, cause="COMPLETED", subject="job"))
        return out
    if state.waiting:
        why = f" ({job.reason})" if job.reason else ""
        out.append(Finding("slurm", "warning", f"{name} is {job.state_text or state.value}{why}: queued, not running{where}",
                           _evidence(f), subject="job"))
        return out
    if state is JobState.OTHER:
        out.append(Finding("slurm", "info", f"{name} is in state {job.state_text!r}, which runtop does not know", _evidence(f), subject="job"))
    return out


def walltime(f: Facts) -> list[Finding]:
    """The job's time runs out before the next checkpoint: the steps since the last save
    will be lost (SLURM users get `TIME_LIMIT_80` mail; this says what it costs)."""
    snap = f.slurm
    if snap is None or snap.job is None or not snap.job.state.alive or f.finished():
        return []
    job = snap.job
    left = job.time_left()
    if left is None:
        return []
    s = f.state
    step, med, every = s.current_step(), s.median_step_time(), s.ckpt_interval
    last = s.last_complete_checkpoint()
    if step is not None and med and every:
        base = last.step if last is not None else 0
        next_ckpt = base + every
        while next_ckpt <= step:
            next_ckpt += every
        to_next = (next_ckpt - step) * med
        if left >= to_next:
            return []
        lost = (step - base) * med + left
        saved = f"step {last.step}" if last is not None else "nothing"
        msg = (f"{_name(job)} has {duration(left)} left; the next checkpoint (step {next_ckpt}) is ~{duration(to_next)} away "
               f"at {duration(med)}/step: ~{duration(lost)} of training since {saved} will be lost")
        return [Finding("walltime", "warning", msg, _evidence(f), subject="job")]
    if left < WALLTIME_FLOOR_S:
        return [Finding("walltime", "warning", f"{_name(job)} has {duration(left)} left (checkpoint cadence unknown)", _evidence(f), subject="job")]
    return []
