"""Crash signatures and traceback reading, shared by every framework's parser."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .events import Kind, Notice
from .records import Record

# The line that ends a Python traceback: `torch.OutOfMemoryError: CUDA out of memory…`,
# `ray.exceptions.RayTaskError(ActorDiedError): …`, `KeyboardInterrupt`.
EXC_LINE_RE = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Failure|Died)\w*"
    r"(?:\([\w.]+\))?)(?::\s*(.*))?$", re.ASCII
)

@dataclass(frozen=True)
class Signature:
    """One way to die. `rank`: lower is more specific and wins the root cause (a SIGBUS
    explains an ActorDiedError, not the other way round). `certain`: the run is dead
    or dying whatever the process table says (an engine that says it is dead is dead
    even while its API server still answers). `wrapper`: it reports a death whose
    cause is printed elsewhere (`ActorDiedError`, `See root cause above`)."""

    kind: str
    pattern: re.Pattern[str]
    fatal: bool = True
    rank: int = 50
    certain: bool = False
    wrapper: bool = False


def _sig(kind: str, pattern: str, **kw: object) -> Signature:
    return Signature(kind, re.compile(pattern, re.ASCII), **kw)  # type: ignore[arg-type]


# Searched in ERROR records, orphan lines and traceback text; the first that matches names the
# death, so the most specific come first: what caused an abort (an illegal memory access, an
# NCCL error) before the abort itself. The words come from genuine output (docs/reading.md,
# "The death vocabulary"; tests/corpus/).
CRASH_SIGNATURES: list[Signature] = [
    _sig("SIGBUS", r"SIGBUS received|Fatal Python error: Bus error|exitcode\W{1,5}-7\b|srun: error: \S+: tasks? [\d,-]+: Bus error", rank=0),
    _sig("NoSpaceLeft", r"No space left on device|\[Errno 28\]", rank=1),
    _sig("SIGKILL (out of memory?)", r"killed by the memory monitor|Task was killed due to the node running low on memory"
         r"|exitcode\W{1,5}-9\b|Killed process \d+ \(|oom-kill|killed due to memory pressure \(OOM\)"
         r"|Detected \d+ oom[-_]kill event|srun: error: \S+: tasks? [\d,-]+: (?:Out Of Memory|Killed)", rank=2),
    # A Ray node that stopped answering took its actors with it (a lost machine, a spot pod).
    _sig("RayNodeDied", r"The actor died because its node has died|has been marked dead because the detector has missed too many heartbeats"
         r"|node was terminated unexpectedly|missing too many heartbeats", rank=2, certain=True),
    _sig("SIGSEGV", r"SIGSEGV received|Fatal Python error: Segmentation fault|Segfault encountered|exitcode\W{1,5}-11\b"
         r"|srun: error: \S+: tasks? [\d,-]+: Segmentation fault", rank=3),
    # Every spelling of a GPU out of memory: PyTorch's, the CUDA driver's (vLLM's sleep/wake
    # allocator: `CUDA Error: out of memory at …cumem_allocator.cpp`), cuBLAS's, JAX's.
    _sig("CUDAOutOfMemory", r"CUDA out of memory|torch\.OutOfMemoryError|\bOutOfMemoryError\b|CUDA [Ee]rror: out of memory"
         r"|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|RESOURCE_EXHAUSTED: Out of memory", rank=4),
    # A sticky CUDA error: the process's CUDA context is gone, whatever catches the exception.
    _sig("CUDAIllegalMemoryAccess", r"an illegal memory access was encountered|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress", rank=4, certain=True),
    _sig("NCCLTimeout", r"Watchdog caught collective operation timeout|Received a dump signal due to a collective timeout"
         r"|Some NCCL operations have failed or timed out|NCCL.{0,80}[Tt]imeout|Could not acquire GIL within \d+ ms on exit",
         rank=5, certain=True),
    # NCCL's own failures (a rank's CUDA failure seen through NCCL, a peer gone): the run's
    # collectives cannot go on.
    _sig("NCCLError", r"ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclRemoteError|ncclInvalidUsage"
         r"|DistBackendError|NCCL error in: |NCCL communicator was aborted|ProcessGroupNCCL.{0,40}(?:aborted|[Ee]rror)",
         rank=5, certain=True),
    _sig("CUDADeviceAssert", r"device-side assert triggered", rank=6, certain=True),
    _sig("CUDAError", r"CUDA error: (?!out of memory)[a-z]|CUDA_ERROR_[A-Z_]+|cudaError[A-Z]\w+|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+"
         r"|Xid \d+|uncorrectable ECC error", rank=6),
    _sig("SIGABRT", r"SIGABRT received|Fatal Python error: Aborted|exitcode\W{1,5}-6\b|Signal 6 \(SIGABRT\)|signal 6 \(SIGABRT\)"
         r"|terminate called after throwing an instance of", rank=7),
    _sig("SIGTERM", r"SIGTERM received|Fatal Python error: Terminated|exitcode\W{1,5}-15\b", rank=8),
    # The scheduler ended the job: its last word is the cause (slurmstepd's cancel line).
    _sig("SLURM time limit", r"CANCELLED AT \S+ DUE TO TIME LIMIT|DUE TO TIME LIMIT (?:on \S+ )?\*\*\*", rank=8, certain=True),
    _sig("SLURM preemption", r"CANCELLED AT \S+ DUE TO PREEMPTION", rank=8, certain=True),
    _sig("SLURM node failure", r"CANCELLED AT \S+ DUE TO NODE FAILURE|NODE_FAIL", rank=8, certain=True),
    _sig("SLURM cancelled", r"slurmstepd(?:-[\w.-]+)?: (?:error: )?\*\*\* (?:JOB|STEP) \d+\S* (?:ON \S+ )?CANCELLED AT", rank=9, certain=True),
    _sig("FatalPythonError", r"Fatal Python error: \w", rank=9),
    _sig("EngineStartFailed", r"EngineCore failed to start|Engine core initialization failed", rank=20, certain=True, wrapper=True),
    _sig("EngineDead", r"EngineCore encountered a fatal error|MQLLMEngine is already dead|failed \(engine dead\)"
         r"|Engine core proc \S+ died unexpectedly|Engine loop has died|Background loop has errored already",
         rank=21, certain=True),
    _sig("EngineDeadError", r"EngineDeadError", rank=22, certain=True, wrapper=True),
    # Ray prints an actor task's error the driver never fetched (an `init_model()` that
    # raised): the exception in the traceback after it is the cause.
    _sig("RayUnhandledError", r"Unhandled error \(suppress with", rank=25),
    _sig("WorkerDied", r"A worker died or was killed while executing a task", rank=30, wrapper=True),
    _sig("ActorDiedError", r"ActorDiedError|RayActorError|The actor died unexpectedly", rank=31, wrapper=True),
    _sig(Kind.TOO_MANY_OPEN_FILES, r"Too many open files", fatal=False),
]

_QUICK = re.compile(
    r"SIG|Fatal Python error|Segfault|No space left|Errno 28|Watchdog|NCCL|nccl|out of memory|OutOfMemoryError|memory monitor"
    r"|low on memory|heartbeats|node has died|exitcode|Killed process|oom[-_]kill|dump signal|acquire GIL|Engine|engine dead|worker died|Actor"
    r"|actor died|Too many open files|illegal memory|CUDA|cuda|CUBLAS|DistBackendError|device-side|Xid|ECC|memory pressure"
    r"|srun: error|CANCELLED|NODE_FAIL|Unhandled error|terminate called|RESOURCE_EXHAUSTED", re.ASCII
)

# Exceptions that report a death printed elsewhere: the cause is in another record (the
# rank's traceback above torchrun's summary, the Ray worker's own dump, EngineCore's).
WRAPPER_TYPES = {
    "ChildFailedError", "ActorDiedError", "RayActorError", "RayTaskError", "EngineDeadError",
    "AsyncEngineDeadError", "MQEngineDeadError", "WorkerCrashedError", "RaySystemError",
}
WRAPPER_WORDS_RE = re.compile(
    r"See root cause above|see stack trace \(above\)|See stack trace \(above\)|Inspect the stacktrace to find the original"
    r"|root cause|exitcode\W{1,5}1\b", re.ASCII
)
# Exception types that say nothing of how the process died: the death words in them do.
GENERIC_TYPES = {"RuntimeError", "Exception", "SystemError", "ChildProcessError", "RaySystemError", "AssertionError"}
# What a record says of the process that died: Ray's `class_name: X` / `pid: N`, a Ray
# task header `ray::TaskRunner.run() (pid=53223, …)`, torchrun's `(pid: 1622990)`.
PID_RE = re.compile(r"(?<![\w.])pid[:=]\s?(\d{1,9})", re.ASCII)
ACTOR_PID_RE = re.compile(r"^\s*pid: (\d{1,9})\s*$", re.ASCII | re.M)
CLASS_RE = re.compile(r"class_name: ([\w.<>]+)|\bname=([A-Za-z_]\w*)(?:\.\w+)?, pid=", re.ASCII)


# A traceback frame in checkpoint-saving code: `…/ckpt.py", line 88, in save`, `dcp.save`.
SAVE_FRAME_RE = re.compile(r"ckpt|checkpoint|in save|dist_checkpointing|torch/serialization", re.ASCII | re.I)


def signature_of(text: str) -> Signature | None:
    """The most specific crash signature in `text`, or None."""
    if not _QUICK.search(text):
        return None
    for sig in CRASH_SIGNATURES:
        if sig.pattern.search(text):
            return sig
    return None


def crash_signature(text: str) -> tuple[str, bool] | None:
    """(kind, fatal) of the most specific crash signature in `text`, or None."""
    sig = signature_of(text)
    return (sig.kind, sig.fatal) if sig else None


def is_wrapper(kind: str, message: str) -> bool:
    base = kind.rsplit(".", 1)[-1].split("(", 1)[0]
    return base in WRAPPER_TYPES or bool(WRAPPER_WORDS_RE.search(message))


def exception_of(lines: list[str]) -> tuple[str, str] | None:
    """(type, message) of a traceback's exception, or None.

    The last `Type: message` line, except where several ranks' tracebacks interleave
    (torchrun writes them into one file at once: several `Traceback` headings and no
    chaining between them): then the first rank's, the first exception line.
    Only unindented lines count: loguru's `diagnose` output quotes code such as
    `raise OutOfMemoryError(OOM)` indented, and `^^^^` markers and `File …` lines are
    indented too (once the `[rankN]: ` prefix is gone).
    """
    heads = sum(1 for line in lines if line.startswith("Traceback (most recent call last)"))
    chained = any(line.startswith(("During handling of the above", "The above exception was")) for line in lines)
    order = lines if heads > 1 and not chained else reversed(lines)
    for line in order:
        if not line or line[0].isspace():
            continue
        m = EXC_LINE_RE.match(line.rstrip())
        if m:
            return m.group(1), (m.group(2) or "").strip()
    return None


def _unwrapped(lines: list[str], exc: tuple[str, str] | None) -> tuple[str, str] | None:
    """A wrapper's exception (`RuntimeError: Engine core initialization failed. See root cause
    above`) gives way to the exception printed above it in the same record (EngineCore's
    `DistNetworkError … EADDRINUSE`, run together with it by a shared process prefix)."""
    if exc is None or not is_wrapper(*exc):
        return exc
    for line in reversed(lines):
        if not line or line[0].isspace():
            continue
        m = EXC_LINE_RE.match(line.rstrip())
        if m and not is_wrapper(m.group(1), (m.group(2) or "").strip()):
            return m.group(1), (m.group(2) or "").strip()
    return exc


def has_traceback(lines: list[str]) -> bool:
    """A traceback's heading, or its frames and exception line where the heading was cut
    away (a pasted tail, a record that began mid-traceback)."""
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        return True
    return any(is_frame(line) for line in lines) and exception_of(lines) is not None


def is_frame(line: str) -> bool:
    """`  File "…/train.py", line 412, in train`: a traceback frame, whatever its indent."""
    return line.lstrip().startswith('File "')


_TB_WORDS = ("Traceback (most recent", "During handling of", "The above exception")


def says_nothing(line: str) -> bool:
    """A line that never says what went wrong: a frame, the caret markers under it (`^^^^^^`,
    `~~~~^^^`), torchrun's rules (`=====`), a traceback heading, nothing at all."""
    s = line.strip()
    if not s or s.startswith('File "') or s.startswith(_TB_WORDS):
        return True
    return not s.strip("^~ ") or (len(s) >= 4 and not s.strip("=-*"))


def telling(lines: list[str], default: str = "") -> str:
    """The first line that says something (`telling(["^^^^^", "  File …", "boom"])` is
    `boom`): a caret line, a frame or a blank is never a message."""
    for line in lines:
        if not says_nothing(line):
            return line.strip()
    return default


def _pid_actor(rec: Record, text: str, wrapper: bool) -> tuple[int | None, str | None]:
    """The pid and class/actor name a record speaks of: its own process prefix for a dump
    (`(MegatronPolicyWorkerBase pid=4242)`), the dead actor for a Ray wrapper. A wrapper's
    own prefix is not the process it reports (the API server reporting EngineCore's death)."""
    m = CLASS_RE.search(text)
    actor = (m.group(1) or m.group(2)).rsplit(".", 1)[-1] if m else None
    # Ray's `pid: N` line names the dead actor; a `ray::task() (pid=N, …)` header names the caller.
    m = ACTOR_PID_RE.search(text) or PID_RE.search(text)
    pid = int(m.group(1)) if m else None
    if pid is None and rec.proc and rec.proc != "raylet" and not wrapper:  # Ray's own daemon is no process of the run
        name, _, rest = rec.proc.partition("pid=")
        digits = rest.split(",", 1)[0].strip()
        pid = int(digits) if digits.isdigit() else None
        actor = actor or (name.strip() or None)
    return pid, actor


def error_notice(rec: Record, role: str, *, traceback_is_fatal: bool) -> Notice | None:
    """An ERROR record, or a headerless (orphan) one, as a `Notice`.

    The kind is the exception its traceback ends with, else a crash signature, else
    plain "error". A traceback whose exception is generic (`RuntimeError`) but whose
    text holds a more specific way to die (`CUDA out of memory`) is named by that way.
    `traceback_is_fatal`: prime-rl processes print a traceback when they die; vLLM also
    prints them for one failed request, so there only a crash signature makes it fatal.
    An orphan with neither traceback nor signature is None.
    """
    lines = [rec.message, *rec.lines()]
    head = telling(lines, rec.message.strip())
    text = "\n".join(lines[:20] + lines[-20:])
    sig = signature_of(text)
    declared = rec.message.startswith("Fatal error")  # prime-rl's `Fatal error in train`
    # A bare exception line with no logger's header (`ValueError: Expected parameter logits …`
    # where the traceback above it was cut or never printed): Python's own last words.
    bare = rec.level is None and rec.fmt in ("orphan", "line", "print") and EXC_LINE_RE.match(rec.message.rstrip()) is not None
    # An ERROR record whose message is an exception line: a traceback's last line cut from the
    # rest by other processes' lines (vLLM's EngineCore prefixes every line, Ray interleaves
    # them). It names the exception; only a way to die in it makes it a death on its own.
    cut = (exception_of([ln.strip() if i == 0 else ln for i, ln in enumerate(lines)])
           if sig is None and rec.level in ("ERROR", "CRITICAL") and not has_traceback(lines) else None)
    if cut is not None:
        kind, detail = _unwrapped(lines, cut) or cut
        wrapper = is_wrapper(kind, detail)
        return _notice(rec, role, rec.level or "ERROR", kind, detail or head, text, fatal=bool(sig and sig.fatal), wrapper=wrapper, sig=sig,
                       traceback=True)
    if has_traceback(lines) or declared or bare:
        exc = _unwrapped(lines, exception_of(lines))
        if exc:
            kind, detail = exc
        else:
            kind, detail = (sig.kind if sig else ("FatalError" if declared else "Traceback")), ""
        # prime-rl's `Fatal error in train` says where; elsewhere the exception says it all.
        # An exception with no words of its own (`ChildFailedError:`) is named by the line
        # after it that says something, never by a caret line or a frame.
        if not detail and exc:
            after = lines[next((i for i, ln in enumerate(lines) if ln.startswith(exc[0]) or exc[0] in ln[:200]), len(lines)) + 1:]
            detail = telling(after[:12])
        message = f"{head}: {detail}" if detail and declared else (detail or head)
        fatal = declared or traceback_is_fatal or bool(sig and sig.fatal)
        wrapper = is_wrapper(kind, detail) or (sig is not None and sig.wrapper and sig.kind in kind)
        if sig is not None and sig.rank < 20 and sig.fatal:
            # A physical way to die (signal, full disk, OOM, NCCL) in the text says more.
            if wrapper:
                # The wrapper's own text names the death: `exitcode: -9` in torchrun's
                # summary, `Task was killed due to the node running low on memory` in Ray's.
                kind, wrapper, message = sig.kind, False, _words(sig, lines, message)
            elif kind.rsplit(".", 1)[-1] in GENERIC_TYPES:
                # `RuntimeError: Error in model execution …: CUDA error: an illegal memory access`:
                # the exception's type says nothing, the way to die in its words does.
                kind, message = sig.kind, _words(sig, lines, message)
        return _notice(rec, role, "ERROR", kind, message, text, fatal=fatal, wrapper=wrapper, sig=sig, traceback=exc is not None)
    if sig:
        return _notice(rec, role, rec.level or "ERROR", sig.kind, _words(sig, lines, head), text, fatal=sig.fatal, wrapper=sig.wrapper, sig=sig,
                       traceback=False)
    if rec.fmt == "orphan":
        return None
    return Notice(role, rec.level or "ERROR", "error", head, rec.time)


def _words(sig: Signature, lines: list[str], default: str) -> str:
    """The words that name the death (`Fatal Python error: Bus error`, `Worker exit detail:
    Task was killed due to the node running low on memory`), not a dump's banner."""
    said = [ln.strip() for ln in lines if sig.pattern.search(ln)]
    if not said:
        return default
    best = next((ln for ln in said if ln.startswith("Fatal Python error")), said[0])
    m = sig.pattern.search(best)
    # A long line (Ray's one-line paragraph): from a little before the words that matched.
    return best if len(best) <= 100 or m is None else "…" + best[max(0, m.start() - 20) :]


def _notice(rec: Record, role: str, level: str, kind: str, message: str, text: str, *, fatal: bool, wrapper: bool,
            sig: Signature | None, traceback: bool) -> Notice:
    """How specific a way to die it names (`rank`, lower wins): a physical death (signal,
    full disk, OOM, NCCL) 0-5; an exception with its traceback 10; an engine that only says
    it is dead 20-22; a wrapper 60; anything else 40."""
    if wrapper:
        rank = 60
    elif sig is not None and sig.rank < 20:
        rank = sig.rank
    elif traceback:
        rank = 10
    else:
        rank = sig.rank if sig is not None else 40
    pid, actor = _pid_actor(rec, text, wrapper)
    in_save = any(line.lstrip().startswith("File ") and SAVE_FRAME_RE.search(line) for line in text.splitlines())
    return Notice(role, level, kind, message, rec.time, fatal=fatal, wrapper=wrapper, pid=pid, actor=actor,
                  rank=rank, certain=bool(sig and sig.certain and fatal), signature=sig.kind if sig else None,
                  in_save=in_save)
