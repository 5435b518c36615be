"""What to do next, in words: one Advice for the band, the alerts screen, `status` (markdown and
JSON) and the notifications (docs/design.md, "Advice that would work").

The next step is checked against what killed the run: a full disk → free space first, naming
what could go (core dumps, failed saves, checkpoints beyond retention, with sizes and paths);
a GPU out of memory → the framework's setting to lower; SIGBUS in a save → `/dev/shm`; vLLM
refusing `max_tokens` → the number that fits; a hang, a dead engine, a vanished run → what to
check. Then the resume, whose action (`R`) is offered only where `runtop.rules.resumable` says a
resume could succeed. An action is named by its registry name (`runtop.actions.vetted.REGISTRY`);
the screen shows its key. runtop never deletes anything: what to remove is words only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtop.frameworks import get as get_framework
from runtop.parsers.events import Kind
from runtop.rules.findings import Finding
from runtop.rules.health import READING, Verdict
from runtop.rules.registry import max_tokens_that_fit
from runtop.rules.resumable import (
    disk_refusal,
    disk_text,
    full_disk_death,
    reclaimable,
    resume_refusal,
    running_roles,
    shm_full,
    short_disks,
)
from runtop.state.causes import SAVE_WORDS
from runtop.state.parts import ErrorEntry
from runtop.state.run import RunState
from runtop.units import human_bytes


@dataclass(frozen=True)
class Advice:
    text: str
    action: str | None = None  # a vetted action this advice leads to (its key is the screen's)
    pane: str | None = None  # a pane to read (its number key is the screen's)
    # Why a resume is not offered now (a Down run only): the same line `runtop send resume` refuses with.
    refused: str | None = None


def advise(state: RunState, verdict: Verdict) -> Advice | None:
    if verdict.verdict == "Down":
        return _down(state, verdict)
    if verdict.verdict == "Degraded":
        return _degraded(state, verdict) or Advice("read the alerts", pane="alerts")
    if verdict.verdict == "Unknown" and verdict != READING and not any(info.bytes_read for info in state.files.values()):
        # Only of a run judged with nothing read: beside a run starting up, or one whose tail is
        # still being read, the question was false (seen in tmux over step 32091 of a 1 GB run).
        return Advice("nothing read yet: is this the run's output directory?")
    return None


# ---- a dead run ------------------------------------------------------------------------------
def _down(state: RunState, verdict: Verdict) -> Advice:
    refused = resume_refusal(state)
    space = free_space_first(state)
    steps = [s for s in (space, fix_first(state, verdict)) if s]
    # Without an action, the pane to read: the disk pane (its core dumps, its checkpoints) while
    # space must be freed, else the logs.
    pane = "disk" if space is not None and disk_refusal(state) is not None else "logs"
    ckpt = state.last_complete_checkpoint()
    if ckpt is None:
        again = ("relaunch: no complete checkpoint to resume from" if state.checkpoints
                 else "relaunch (runtop read no checkpoint of this run)")
        if not steps:
            text = "no complete checkpoint: read the logs before relaunching" if state.checkpoints else "read the logs"
            return Advice(text, pane="logs", refused=refused)
        return Advice("; then ".join([*steps, again]), pane=pane, refused=refused)
    at = f"step {ckpt.step} ({_last_complete(state, ckpt.step)})"
    action: str | None
    slurm = state.slurm
    if slurm is not None and slurm.job is not None:
        # A SLURM run resumes by sbatch of its script, once its job has ended.
        if not slurm.job.state.ended:
            then, action = f"scancel job {slurm.job.job_id}, then resubmit from {at}", "stop"
        else:
            then, action = f"resubmit its batch script from {at}", "resume"
    elif running_roles(state):
        # Processes still up (a hang, a half-dead run) must be stopped before a resume.
        then, action = f"stop, then resume from {at}", "restart"
    else:
        then, action = f"resume from {at}", "resume"
    if action != "stop" and disk_refusal(state) is not None:
        action = None  # resuming onto a full disk fails again: the key is not offered
    return Advice("; then ".join([*steps, then]), action=action, pane=None if action else pane, refused=refused)


def _last_complete(state: RunState, step: int) -> str:
    """`last complete; step 4 is a failed save`: why not a later one."""
    later = sorted(s for s, c in state.checkpoints.items() if s > step and not c.complete)
    if not later:
        return "last complete"
    return "last complete; " + ", ".join(f"step {s}" for s in later) + (" is" if len(later) == 1 else " are") + " incomplete"


def free_space_first(state: RunState) -> str | None:
    """`free space first: 9.0 GB of core dumps in …; in /mnt/ckpts: global_step_2 beyond the last
    two (6.0 GB)`, while a resume would die of a full disk (`resumable.disk_refusal`)."""
    died = full_disk_death(state) is not None
    if state.disk is None:
        # The disks not looked at (the runs table judges without them): words only; a resume plan samples them.
        return "free space first: the run died of a full disk (check df -h, the checkpoint dir and /tmp for core dumps)" if died else None
    if disk_refusal(state) is None:
        if not died:
            return None
        room = next((u for u in state.disk.disks if "checkpoint dir" in u.labels), None)
        room = room or next((u for u in state.disk.disks if "output dir" in u.labels), None)
        # Died of a full disk and none is full now: say what was checked, so the resume is an informed one.
        return f"the disks have room again ({human_bytes(room.free)} free for the checkpoints)" if room else None
    short = short_disks(state)
    where = f" ({disk_text(short[0][0])})" if short else ""
    could_go = reclaimable(state, running=bool(running_roles(state)))
    if could_go.total:
        return f"free space first{where}: {could_go.text()}"
    return f"free space first{where}: nothing runtop can name to delete (no core dumps, checkpoints within retention); look with du -sh"


def _death(state: RunState, finding: Finding | None = None) -> ErrorEntry | None:
    """The fatal error a crash finding names (its cause is the entry's kind); without one, the
    death the crash rule would name (a certain or specific one first, then the oldest)."""
    fatals = state.open_fatals()
    named = next((e for e in fatals if finding is not None and e.kind == finding.cause), None)
    return named or min(fatals, key=lambda e: (not e.certain and e.rank >= 40, e.time or "99"), default=None)


def fix_first(state: RunState, verdict: Verdict) -> str | None:
    """What must change before the run can go on, by the cause of its death: the first of the
    findings that make it Down that names one (a stall says less than the failing rollouts beside it)."""
    # The findings that make it Down first, then the failing rollouts that may explain a stall.
    found = [a for a in verdict.alerts if a.down] + [a for a in verdict.alerts if not a.down and a.rule == "rollouts_failing"]
    for top in found:
        fix = _fix_for(state, top)
        if fix is not None:
            return fix
    return max_tokens_fix(state)


SILENT_FOR_RE = re.compile(r"(?:no log write anywhere|nothing written) for ([0-9dhms]+)")


def _fix_for(state: RunState, top: Finding) -> str | None:
    if top.rule == "crash":
        e = _death(state, top)
        return _crash_fix(state, e) if e is not None else None
    if top.rule == "stalled":
        if not running_roles(state) and state.processes is not None:
            return ("check the host and the job or pod first: dmesg for the OOM killer, a node reclaimed or preempted "
                    "(every process is gone and no log says why)")
        if running_roles(state):
            m = SILENT_FOR_RE.search(top.message)
            quiet = f"silent {m.group(1)}, " if m else ""
            return f"save the stacks first (F) to see where it hangs ({quiet}its processes alive)"
        return None
    if top.rule == "inference_dead":
        return "read the inference log's last lines for why vLLM stopped (the run waits on it)"
    if top.rule == "role_missing":
        return f"read the last lines of the {top.subject or 'missing role'}'s log ({top.message.split(' process is', 1)[0]} is gone while the others run)"
    if top.rule == "rollouts_failing":
        too_long = max_tokens_fix(state)
        if too_long is not None:
            return too_long
        return f"fix the env or its harness first: every rollout fails with {top.cause} (the logs show why)"
    if top.rule == "ray":
        if top.cause == "OUT_OF_MEMORY":
            return "give the node more RAM, offload less to the CPU, or raise RAY_memory_usage_threshold (Ray's memory monitor killed an actor)"
        if top.cause == "NODE_DIED":
            return "leave the dead node out (a reclaimed spot node, a hardware or network fault)"
    if top.rule == "slurm":
        if top.cause == "OUT_OF_MEMORY":
            return "raise sbatch --mem, or hold less in host memory (the job's memory limit ran out)"
        if top.cause == "NODE_FAIL":
            return "leave the failed node out (sbatch --exclude)"
    return None


def change_first(state: RunState) -> str | None:
    """What to change before a resume, from the run's death alone (the resume's confirmation
    says it): the fix of the first death's cause, or the max_tokens that fits."""
    death = _death(state)
    fix = _crash_fix(state, death) if death is not None else None
    return fix or max_tokens_fix(state)


def _crash_fix(state: RunState, e: ErrorEntry) -> str | None:
    kind = e.signature or e.kind
    fw = get_framework(state.framework)
    if shm_full(e):
        return f"give the container a larger /dev/shm: docker run --shm-size (NCCL could not create its shared memory there{_shm(state)})"
    if kind == "NoSpaceLeft":
        return None  # the free-space step says it, with what could go
    if kind == "SIGBUS":
        saving = any(w in (e.phase or "").lower() for w in SAVE_WORDS)
        why = "the save filled it" if saving else "a full /dev/shm is the usual cause"
        return f"give the container a larger /dev/shm: docker run --shm-size (SIGBUS: {why}{_shm(state)})"
    if kind == "CUDAOutOfMemory":
        vllm = e.role == "inference" or "cumem" in e.message or "vllm" in f"{e.actor or ''} {e.kind}".lower()
        settings = fw.oom_settings("inference" if vllm else e.role)
        who = "vLLM" if vllm else f"the {e.role}"
        waking = " waking up (its sleep/wake allocator)" if "cumem" in e.message else ""
        return f"lower {' or '.join(settings)} ({who} ran out of GPU memory{waking})"
    if kind == "NCCLTimeout":
        return "find the rank that hung or died first: every rank's last lines, NCCL_DEBUG=INFO (a collective timed out)"
    if kind in ("CUDAIllegalMemoryAccess", "CUDADeviceAssert"):
        who = "vLLM" if e.role == "inference" else f"the {e.role}"
        return f"if it comes back, rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel (a sticky CUDA error killed {who})"
    if kind in ("EngineDead", "EngineDeadError", "EngineStartFailed"):
        return "read the inference log above its last error for why vLLM's engine died"
    if kind in ("SLURM time limit", "SLURM preemption"):
        return None  # nothing to fix: the resubmission is the next step
    if e.hint:
        return e.hint
    where = f" in the {e.role}'s log" if e.role else ""
    return f"read the {kind.rsplit('.', 1)[-1]} traceback{where} first: a resume meets it again unless its cause changed"


def _shm(state: RunState) -> str:
    """`; /dev/shm is 64.0 MB, 0 B free now`: as the disk probe saw it."""
    u = next((u for u in (state.disk.disks if state.disk is not None else []) if "/dev/shm" in u.labels), None)
    return f"; /dev/shm is {human_bytes(u.total)}, {human_bytes(u.free)} free now" if u is not None else ""


# ---- a run that still trains ---------------------------------------------------------------
def _degraded(state: RunState, verdict: Verdict) -> Advice | None:
    rules = {a.rule: a for a in verdict.alerts}
    fix = max_tokens_fix(state) if ("rollouts_hung" in rules or "rollouts_failing" in rules) else None
    if fix is not None:
        return _then_resume(state, fix)
    disk = rules.get("disk_pressure")
    if disk is not None and disk.severity == "critical":
        could_go = reclaimable(state, running=True)
        what = f": {could_go.text()}" if could_go.total else ""
        return Advice(f"free space before the next save{what}", pane="alerts")
    stall = rules.get("stalled")
    if stall is not None and stall.subject == "no step" and running_roles(state):
        # Past its own pace but not yet proven hung: the stacks say whether it waits in a collective.
        return Advice("watch it: no step past its own pace; F saves the stacks (waiting in a collective: hung)", pane="alerts")
    return None


def _then_resume(state: RunState, fix: str) -> Advice:
    """A run that trains but cannot go on as it is (vLLM refuses its requests): the change, then
    a restart from the last complete checkpoint."""
    ckpt = state.last_complete_checkpoint()
    if ckpt is None:
        return Advice(f"{fix}; then relaunch: no complete checkpoint to resume from")
    if running_roles(state):
        return Advice(f"{fix}; then stop, then resume from step {ckpt.step} (last complete)", action=None if disk_refusal(state) else "restart")
    return Advice(f"{fix}; then resume from step {ckpt.step} (last complete)", action=None if resume_refusal(state) else "resume")


def max_tokens_fix(state: RunState) -> str | None:
    """vLLM refuses requests longer than its context: the setting to change and the number that fits."""
    messages = [e.message for e in state.errors if e.kind == Kind.MAX_TOKENS_TOO_LARGE]
    messages += [m for _, _, m, _ in state.rollouts_since_step if m and "context length" in m]
    if not messages:
        return None
    setting = get_framework(state.framework).max_tokens_setting
    fits = max_tokens_that_fit(messages)
    if fits is None:
        return f"lower {setting} below vLLM's context minus the prompt, or raise max_model_len (vLLM refuses longer requests)"
    return (f"set {setting} to at most {fits[0]}, or raise max_model_len (vLLM refuses requests past its context of {fits[1]} "
            f"tokens; the longest prompt is {fits[2]})")
