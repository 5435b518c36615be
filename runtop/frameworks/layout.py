"""What a run is made of, as a plug-in lays it out: the files runtop follows (`Tracked`), the
run's layout (`RunLayout`), and the one-line `DiscoveryError`; the path helpers every plug-in's
discovery shares. Below the plug-ins: each builds its layouts from these, and
`runtop.frameworks.discovery` asks them in turn (docs/architecture.md, "Adding a framework").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from runtop.sources.regular import open_binary

_STEP_DIR_RE = re.compile(r"step_(\d{1,12})\Z", re.ASCII)


class DiscoveryError(Exception):
    """A path runtop cannot read: a short one-line reason (`str(e)`), and perhaps a `hint`
    line of what runtop reads instead (the command line prints it below the reason; a row of
    the runs table shows only the reason)."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.hint = hint


@dataclass(frozen=True)
class Tracked:
    path: str
    role: str
    kind: str  # "log", "metrics", "rollouts", "config"
    step: int | None = None


@dataclass
class RunLayout:
    root: str
    framework: str
    layout: str
    notes: list[str] = field(default_factory=list)
    attempt: int | None = None
    attempt_dir: str | None = None
    earlier_attempts: list[str] = field(default_factory=list)
    logs: list[Tracked] = field(default_factory=list)
    metrics: list[Tracked] = field(default_factory=list)
    rollouts: list[Tracked] = field(default_factory=list)
    configs: list[Tracked] = field(default_factory=list)
    # (trainer checkpoints root, orchestrator checkpoints root or None)
    checkpoint_roots: list[tuple[str, str | None]] = field(default_factory=list)
    single_file: bool = False
    # SkyRL: the checkpoint dir given with --ckpt-dir (else the log names it).
    ckpt_dir: str | None = None
    # `--metrics FILE`'s keys → runtop's metric names (`[metrics]` in the config).
    metrics_map: dict[str, str] = field(default_factory=dict)
    # Why runtop reads it as this framework: the signs it saw, or why it was not recognised.
    detection: str = ""
    # The path the user named (a run dir or one log): looked at again while undecided.
    given: str = ""

    def files(self) -> list[Tracked]:
        return [*self.configs, *self.metrics, *self.logs, *self.rollouts]


def _isdir(*parts: str) -> bool:
    return os.path.isdir(os.path.join(*parts))


def _isfile(*parts: str) -> bool:
    return os.path.isfile(os.path.join(*parts))


def _step_of(path: str) -> int | None:
    for part in reversed(path.split(os.sep)):
        m = _STEP_DIR_RE.match(part)
        if m:
            return int(m.group(1))
    return None


def sniff(path: str, n: int = 65536) -> str:
    """The head (and tail, for a large file) of `path` as text, to tell who wrote it."""
    try:
        with open_binary(path) as f:  # a FIFO named like a log would block the open for ever
            head = f.read(n)
            size = os.fstat(f.fileno()).st_size
            if size > 2 * n:
                f.seek(size - n)
                head += b"\n" + f.read(n)
    except OSError as e:
        raise DiscoveryError(f"cannot read {path}: {e.strerror or e}") from None
    return head.decode("utf-8", "replace")


def resolve(path: str, root: str, *, want_dir: bool = True) -> str | None:
    """A path a log names, as it exists here: absolute, or relative to the run dir or
    its parent (where the launch script ran). None when it is not on this machine."""
    path = os.path.expanduser(path)
    candidates = [path] if os.path.isabs(path) else [os.path.join(root, path), os.path.join(os.path.dirname(root), path)]
    for c in candidates:
        if os.path.isdir(c) if want_dir else os.path.isfile(c):
            return os.path.abspath(c)
    return None


JOB = "job"  # the role of a SLURM job's output file
