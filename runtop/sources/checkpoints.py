"""List checkpoint dirs and size them; completeness is judged by `parsers.checkpoints`."""

from __future__ import annotations

import os
import re

from runtop.parsers.checkpoints import judge_primerl
from runtop.state import Checkpoint

_STEP_RE = re.compile(r"step_(\d+)$")
MAX_FILES = 20_000  # a sharded checkpoint has thousands of files; stop listing past this


def _listing(base: str, prefix: str, files: dict[str, int]) -> None:
    for dirpath, _dirs, names in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        for n in names:
            if len(files) >= MAX_FILES:
                return
            try:
                size = os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                continue
            key = n if rel == "." else f"{rel}/{n}"
            files[f"{prefix}{key}"] = size


def scan_primerl(roots: list[tuple[str, str | None]]) -> dict[int, Checkpoint]:
    """`checkpoints/step_N/{trainer,orchestrator}`; v0.5–v0.8 keep the orchestrator part
    under `run_default/checkpoints/step_N/orchestrator` (FORMATS.md)."""
    out: dict[int, Checkpoint] = {}
    for trainer_root, orch_root in roots:
        try:
            names = os.listdir(trainer_root)
        except OSError:
            continue
        for name in names:
            m = _STEP_RE.match(name)
            if not m:
                continue
            step = int(m.group(1))
            path = os.path.join(trainer_root, name)
            if not os.path.isdir(path):
                continue
            files: dict[str, int] = {}
            _listing(path, "", files)
            if orch_root is not None:
                orch = os.path.join(orch_root, name)
                if os.path.isdir(orch):
                    _listing(orch, "", files)
            verdict = judge_primerl(files)
            out[step] = Checkpoint(step, path, verdict.complete, verdict.reason, sum(files.values()))
    return out
