"""List checkpoint dirs and size them; completeness is judged by `parsers.checkpoints`."""

from __future__ import annotations

import os
import re

from runtop.parsers.checkpoints import Checkpoint, Problem, judge_primerl, judge_skyrl
from runtop.parsers.numbers import strict_int
from runtop.sources.regular import open_text
from runtop.sources.walk import Walk

_STEP_RE = re.compile(r"step_(\d{1,12})\Z", re.ASCII)  # not `$`: it allows a trailing newline (`step_9\n`)
_GLOBAL_STEP_RE = re.compile(r"global_step_(\d{1,12})\Z", re.ASCII)
LATEST_TXT = "latest_ckpt_global_step.txt"
MAX_FILES = 20_000  # a sharded checkpoint has thousands of files; stop listing past this


def _listing(base: str, prefix: str, files: dict[str, int]) -> None:
    # Iterative and bounded: a directory 1000 levels deep in a checkpoint is not a RecursionError.
    for f in Walk(base, max_entries=MAX_FILES):
        if len(files) >= MAX_FILES:
            return
        files[f"{prefix}{f.rel}"] = f.size


def scan_primerl(roots: list[tuple[str, str | None]]) -> dict[int, Checkpoint]:
    """`checkpoints/step_N/{trainer,orchestrator}`; v0.5–v0.8 keep the orchestrator part
    under `run_default/checkpoints/step_N/orchestrator` (docs/formats.md)."""
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
            _put(out, Checkpoint(step, path, verdict.complete, verdict.reason, sum(files.values()), verdict.problem))
    return out


AMBIGUOUS = "ambiguous:"


def _put(out: dict[int, Checkpoint], ck: Checkpoint) -> None:
    """Two directories naming one step (`step_9`, `step_09`) are neither trusted: a resume by
    number could load either. Both show, marked; resume is disabled."""
    prev = out.get(ck.step)
    if prev is None:
        out[ck.step] = ck
        return
    names = sorted({os.path.basename(prev.path), os.path.basename(ck.path)})
    reason = f"{AMBIGUOUS} {' and '.join(names)} both name step {ck.step}"
    out[ck.step] = Checkpoint(ck.step, min(prev.path, ck.path), False, reason, prev.bytes + ck.bytes, Problem.AMBIGUOUS)


def read_latest_txt(ckpt_dir: str) -> int | None:
    try:
        with open_text(os.path.join(ckpt_dir, LATEST_TXT)) as f:
            text = f.read(64).strip()
    except OSError:
        return None
    return strict_int(text)


def scan_skyrl(ckpt_dir: str) -> dict[int, Checkpoint]:
    """`<ckpt_path>/global_step_N/` dirs, sized, judged against `latest_ckpt_global_step.txt`."""
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        return {}
    latest = read_latest_txt(ckpt_dir)
    out: dict[int, Checkpoint] = {}
    for name in names:
        m = _GLOBAL_STEP_RE.match(name)
        path = os.path.join(ckpt_dir, name)
        if not m or not os.path.isdir(path):
            continue
        step = int(m.group(1))
        files: dict[str, int] = {}
        _listing(path, "", files)
        verdict = judge_skyrl(step, files, latest)
        _put(out, Checkpoint(step, path, verdict.complete, verdict.reason, sum(files.values()), verdict.problem))
    return out
