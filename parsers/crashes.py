"""Crash signatures and traceback reading, shared by every framework's parser."""

from __future__ import annotations

import re

from .events import Notice
from .records import Record

# The line that ends a Python traceback: `torch.OutOfMemoryError: CUDA out of memory…`,
# `ray.exceptions.RayTaskError(ActorDiedError): …`, `KeyboardInterrupt`.
EXC_LINE_RE = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Failure|Died)\w*"
    r"(?:\([\w.]+\))?)(?::\s*(.*))?$", re.ASCII
)

# (kind, pattern, fatal). Searched in ERROR records, orphan lines and traceback text.
CRASH_SIGNATURES: list[tuple[str, re.Pattern[str], bool]] = [
    ("SIGBUS", re.compile(r"SIGBUS received|Fatal Python error: Bus error", re.ASCII), True),
    ("SIGSEGV", re.compile(r"SIGSEGV received|Fatal Python error: Segmentation fault|Segfault encountered", re.ASCII), True),
    ("NoSpaceLeft", re.compile(r"No space left on device|\[Errno 28\]", re.ASCII), True),
    ("NCCLTimeout", re.compile(r"Watchdog caught collective operation timeout|NCCL.{0,80}[Tt]imeout", re.ASCII), True),
    ("CUDAOutOfMemory", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError", re.ASCII), True),
    ("EngineDeadError", re.compile(r"EngineDeadError|EngineCore encountered a fatal error", re.ASCII), True),
    ("WorkerDied", re.compile(r"A worker died or was killed while executing a task", re.ASCII), True),
    ("ActorDiedError", re.compile(r"ActorDiedError", re.ASCII), True),
    ("TooManyOpenFiles", re.compile(r"Too many open files", re.ASCII), False),
]

_QUICK = re.compile(
    r"SIGBUS|SIGSEGV|Fatal Python error|Segfault|No space left|Errno 28|Watchdog|NCCL|out of memory"
    r"|OutOfMemoryError|EngineDead|EngineCore encountered|worker died|ActorDied|Too many open files", re.ASCII
)


def crash_signature(text: str) -> tuple[str, bool] | None:
    """(kind, fatal) of the first crash signature in `text`, or None."""
    if not _QUICK.search(text):
        return None
    for kind, pat, fatal in CRASH_SIGNATURES:
        if pat.search(text):
            return kind, fatal
    return None


def exception_of(lines: list[str]) -> tuple[str, str] | None:
    """(type, message) from the last exception line of a traceback, or None.

    Only unindented lines count: loguru's `diagnose` output quotes code such as
    `raise OutOfMemoryError(OOM)` indented, and those are not the exception.
    """
    for line in reversed(lines):
        if not line or line[0].isspace():
            continue
        m = EXC_LINE_RE.match(line.rstrip())
        if m:
            return m.group(1), (m.group(2) or "").strip()
    return None


def has_traceback(lines: list[str]) -> bool:
    return any(line.startswith("Traceback (most recent call last)") for line in lines)


def error_notice(rec: Record, role: str, *, traceback_is_fatal: bool) -> Notice | None:
    """An ERROR record, or a headerless (orphan) one, as a `Notice`.

    The kind is the exception its traceback ends with, else a crash signature, else
    plain "error". `traceback_is_fatal`: prime-rl processes print a traceback when
    they die; vLLM also prints them for one failed request, so there only a crash
    signature makes it fatal. An orphan with neither traceback nor signature is None.
    """
    lines = [rec.message, *rec.lines()]
    head = rec.message.strip()
    sig = crash_signature("\n".join(lines[:20] + lines[-20:]))
    declared = rec.message.startswith("Fatal error")  # prime-rl's `Fatal error in train`
    if has_traceback(lines) or declared:
        exc = exception_of(lines)
        if exc:
            kind, detail = exc
        else:
            kind, detail = (sig[0] if sig else ("FatalError" if declared else "Traceback")), ""
        message = f"{head}: {detail}" if detail and rec.fmt != "orphan" else (detail or head)
        fatal = declared or traceback_is_fatal or bool(sig and sig[1])
        return Notice(role, "ERROR", kind, message, rec.time, fatal=fatal)
    if sig:
        return Notice(role, rec.level or "ERROR", sig[0], head, rec.time, fatal=sig[1])
    if rec.fmt == "orphan":
        return None
    return Notice(role, rec.level or "ERROR", "error", head, rec.time)
