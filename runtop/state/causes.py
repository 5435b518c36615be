"""The root cause of a death: one place, for every framework.

A process that dies rarely says why in its last line. torchrun prints each rank's
traceback, then its own `ChildFailedError` summary; Ray's driver prints
`ActorDiedError` before or after the dying worker's `*** SIGBUS received`; vLLM's API
server says `EngineDeadError … see stack trace (above)` after EngineCore's own
traceback. The parsers mark each fatal error with what it is (a wrapper or not), how
specific a way to die it names (`rank`), and the process it speaks of; this module
picks, among the fatal errors of one death, the one an expert would name, and says
which wrapper reported it, what phase was open, and where to look next.
"""

from __future__ import annotations

import re
from dataclasses import replace

from runtop.state.parts import ErrorEntry

SAVE_WORDS = ("save_checkpoint", "checkpoint save", "save_hf_model", "saving checkpoint")


def root_cause(death: list[ErrorEntry]) -> ErrorEntry:
    """The cause among the fatal errors of one death (non-empty, in log order)."""
    causes = [e for e in death if not e.wrapper]
    wrappers = [e for e in death if e.wrapper]
    if not causes:
        # Only wrappers: the exception a user would search for, over Ray's raylet prose.
        chosen = min(death, key=lambda e: ("Error" not in e.kind, e.rank))
        wrapper = None
    else:
        # The exception a user would search for (`ActorDiedError`) over Ray's raylet prose.
        wrappers.sort(key=lambda e: "Error" not in e.kind)
        wrapper = wrappers[0] if wrappers else None
        # A wrapper that names the process it reports (Ray's `pid:` / `class_name:`) points
        # at the cause: that process's own dump, whichever order Ray printed them in.
        named = [e for e in causes if any(_same_process(w, e) for w in wrappers)]
        pool = named or causes
        # The most specific; among equals the one that names its process (the driver's copy of
        # Ray's OOM text names the actor, the raylet's summary does not); min keeps log order.
        chosen = min(pool, key=lambda e: (e.rank, e.actor is None and e.pid is None))
    phase = chosen.phase or (wrapper.phase if wrapper else None)
    # A cause that names no process (the raylet's OOM summary) takes the one its wrapper names
    # (`name=CriticModelRayActor.__init__, pid=3984`): which actor died is half the answer.
    named_by = wrapper if wrapper is not None and wrapper is not chosen and chosen.actor is None and chosen.pid is None else None
    return replace(
        chosen,
        phase=phase,
        actor=named_by.actor if named_by else chosen.actor,
        pid=named_by.pid if named_by else chosen.pid,
        wrapped_by=_short_kind(wrapper.kind) if wrapper is not None and wrapper is not chosen else None,
        hint=hint_for(chosen.signature or chosen.kind, phase, chosen.message),
    )


def _same_process(wrapper: ErrorEntry, e: ErrorEntry) -> bool:
    if wrapper.pid is not None and e.pid is not None:
        return wrapper.pid == e.pid
    return wrapper.actor is not None and e.actor is not None and wrapper.actor == e.actor


def _short_kind(kind: str) -> str:
    return kind.rsplit(".", 1)[-1] if "(" not in kind else kind.split(".")[-1]


def hint_for(kind: str, phase: str | None, message: str = "") -> str | None:
    """Where an expert looks next, for the ways to die that have one answer (the users' run notes
    and the frameworks' issue threads: docs/reading.md, "Known fixes")."""
    saving = phase is not None and any(w in phase.lower() for w in SAVE_WORDS)
    if kind == "SIGBUS":
        return ("check /dev/shm: a checkpoint save that fills the tmpfs dies of SIGBUS (give the container a larger --shm-size)" if saving
                else "check /dev/shm: a full tmpfs is the usual cause of SIGBUS (give the container a larger --shm-size)")
    if kind == "NoSpaceLeft":
        return "a disk is full: check the checkpoint dir and /tmp (core dumps)" if saving else "a disk is full: check df -h"
    if kind.startswith("SIGKILL"):
        if RAY_MEMORY_RE.search(message):
            return ("host RAM ran out and Ray's memory monitor (its OOM killer) killed the worker: give the node more RAM, offload less to the CPU, "
                    "or raise RAY_memory_usage_threshold (default 0.95)")
        if SLURM_MEMORY_RE.search(message):
            return "the job's memory limit ran out (host RAM, not the GPU's): raise sbatch --mem, or hold less in host memory"
        return "killed by SIGKILL: usually the kernel or Ray OOM killer (host memory); see dmesg"
    if kind == "CUDAOutOfMemory":
        if "cumem" in message:
            return "vLLM's sleep/wake allocator ran out of GPU memory on waking: lower the rollout's gpu_memory_utilization or free the trainer's memory first"
        return "GPU memory ran out: lower the micro-batch or sequence length (or vLLM's gpu_memory_utilization beside it)"
    if kind == "NCCLTimeout":
        return "a collective timed out: one rank hung or died first; look at every rank's last lines"
    if kind == "NCCLError":
        return "NCCL failed, usually a rank's own CUDA error or a lost peer: look at every rank's last lines (NCCL_DEBUG=INFO says more)"
    if kind in ("CUDAIllegalMemoryAccess", "CUDADeviceAssert"):
        return "a sticky CUDA error: the process cannot go on; rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel, resume from the last complete checkpoint"
    if kind == "RayNodeDied":
        return "a node stopped answering (a reclaimed spot node, a hardware or network fault): resume on healthy nodes"
    if kind == "SLURM time limit":
        return "the job reached its time limit: resume from the last complete checkpoint in a new job, or ask for more --time"
    if kind == "SLURM preemption":
        return "the scheduler preempted the job: it may be requeued; otherwise resume from the last complete checkpoint"
    return None


RAY_MEMORY_RE = re.compile(r"memory monitor|memory pressure|running low on memory", re.ASCII)
SLURM_MEMORY_RE = re.compile(r"oom[-_]kill|Out Of Memory", re.ASCII)
