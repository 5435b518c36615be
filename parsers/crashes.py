"""Crash signatures and traceback reading, shared by every framework's parser."""

from __future__ import annotations

import re

# The line that ends a Python traceback: `torch.OutOfMemoryError: CUDA out of memory…`,
# `ray.exceptions.RayTaskError(ActorDiedError): …`, `KeyboardInterrupt`.
EXC_LINE_RE = re.compile(
    r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Failure|Died)\w*"
    r"(?:\([\w.]+\))?)(?::\s*(.*))?$"
)

# (kind, pattern, fatal). Searched in ERROR records, orphan lines and traceback text.
CRASH_SIGNATURES: list[tuple[str, re.Pattern[str], bool]] = [
    ("SIGBUS", re.compile(r"SIGBUS received|Fatal Python error: Bus error"), True),
    ("SIGSEGV", re.compile(r"SIGSEGV received|Fatal Python error: Segmentation fault|Segfault encountered"), True),
    ("NoSpaceLeft", re.compile(r"No space left on device|\[Errno 28\]"), True),
    ("NCCLTimeout", re.compile(r"Watchdog caught collective operation timeout|NCCL.{0,80}[Tt]imeout"), True),
    ("CUDAOutOfMemory", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError"), True),
    ("EngineDeadError", re.compile(r"EngineDeadError|EngineCore encountered a fatal error"), True),
    ("WorkerDied", re.compile(r"A worker died or was killed while executing a task"), True),
    ("ActorDiedError", re.compile(r"ActorDiedError"), True),
    ("TooManyOpenFiles", re.compile(r"Too many open files"), False),
]

_QUICK = re.compile(
    r"SIGBUS|SIGSEGV|Fatal Python error|Segfault|No space left|Errno 28|Watchdog|NCCL|out of memory"
    r"|OutOfMemoryError|EngineDead|EngineCore encountered|worker died|ActorDied|Too many open files"
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
