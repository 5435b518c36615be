"""Find what to read: which framework and layout generation a path holds, and its files.

Each framework plug-in (`runtop.frameworks`) recognises its own run directories, log
directories and files; this module asks them in turn and owns what is common: the
path checks, the layout types, and the one-line `DiscoveryError` naming what was
expected (from every plug-in's `expects`).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

_STEP_DIR_RE = re.compile(r"step_(\d{1,12})\Z", re.ASCII)


class DiscoveryError(Exception):
    """A path runtop cannot read, with a one-line reason."""


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
        with open(path, "rb") as f:
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


def expected() -> str:
    from runtop.frameworks import all_frameworks

    return "expected " + ", ".join(fw.expects for fw in all_frameworks() if fw.expects) + ", or a single log file"


def _single_file(path: str) -> RunLayout:
    from runtop.frameworks import all_frameworks

    text = sniff(path)
    if not text.strip():
        raise DiscoveryError(f"{path} is empty: {expected()}")
    for fw in sorted(all_frameworks(), key=lambda fw: fw.file_priority):
        lay = fw.file_layout(path, text)
        if lay is not None:
            return lay
    raise DiscoveryError(f"nothing runtop recognises in {path}: {expected()}")


def discover(path: str) -> RunLayout:
    """The layout of `path`, or `DiscoveryError` with a one-line reason."""
    from runtop.frameworks import all_frameworks

    if not os.path.exists(path):
        raise DiscoveryError(f"no such file or directory: {path} ({expected()})")
    path = os.path.abspath(path)
    if os.path.isfile(path):
        return _single_file(path)
    if not os.path.isdir(path):
        raise DiscoveryError(f"{path} is not a regular file or directory ({expected()})")
    try:
        entries = os.listdir(path)
    except OSError as e:
        raise DiscoveryError(f"cannot list {path}: {e.strerror or e}") from None
    if not entries:
        raise DiscoveryError(f"{path} is empty: {expected()}")
    frameworks = all_frameworks()
    for fw in frameworks:
        if fw.looks_like_run(path):
            return fw.run_layout(path)
    for fw in frameworks:
        lay = fw.newest_run(path, entries)
        if lay is not None:
            return lay
    logs = [os.path.join(path, e) for e in entries if e.endswith(".log") and os.path.isfile(os.path.join(path, e))]
    sub = os.path.join(path, "logs")
    if os.path.isdir(sub):
        logs += sorted(glob.glob(os.path.join(sub, "*.log")))
    for fw in frameworks:
        lay = fw.logs_in_dir(path, logs)
        if lay is not None:
            return lay
    if len(logs) == 1:
        return _single_file(logs[0])
    raise DiscoveryError(f"nothing runtop recognises in {path}: {expected()}")


def with_ckpt_dir(layout: RunLayout, ckpt_dir: str | None) -> RunLayout:
    """Apply `--ckpt-dir`: a checkpoint dir the run dir does not lead to (SkyRL's), checked
    now so a typo fails at once."""
    from runtop.frameworks import all_frameworks, get

    if ckpt_dir is None:
        return layout
    if not get(layout.framework).takes_ckpt_dir:
        takers = ", ".join(fw.name for fw in all_frameworks() if fw.takes_ckpt_dir)
        raise DiscoveryError(
            f"--ckpt-dir is for {takers} runs; {layout.root} is a {layout.framework} run (its checkpoints are found from the run dir)"
        )
    if not os.path.isdir(ckpt_dir):
        raise DiscoveryError(f"--ckpt-dir {ckpt_dir}: no such directory")
    layout.ckpt_dir = os.path.abspath(ckpt_dir)
    return layout


CUSTOM = "custom"  # the role of a metrics file given with --metrics: read by its rows' names


def with_metrics(layout: RunLayout, paths: list[str] | None, mapping: dict[str, str] | None = None) -> RunLayout:
    """Apply `--metrics FILE`: any JSONL of `{"step": N, …}` rows, read beside the run's own
    files, its keys mapped by `mapping` onto runtop's metric names."""
    for path in paths or []:
        if not os.path.isfile(path):
            raise DiscoveryError(f"--metrics {path}: no such file")
        layout.metrics.append(Tracked(os.path.abspath(path), CUSTOM, "metrics"))
    layout.metrics_map = dict(mapping or {})
    return layout


def rescan(layout: RunLayout) -> RunLayout:
    """The same run listed again: new attempts, env logs, rollout steps, configs."""
    from runtop.frameworks import get

    return get(layout.framework).rescan(layout)
