"""verl's checkpoints: `<default_local_dir>/global_step_N/{actor/, critic/, data.pt}` and the
tracker `latest_checkpointed_iteration.txt` (a bare integer) written last (docs/formats.md).

With `async_save` verl never writes the tracker: `trainer.resume_mode=auto` then finds no
checkpoint and silently starts from scratch. A save whose files are whole but that no
tracker names is complete for an explicit `resume_path` (what runtop's resume types) and
marked `UNTRACKED`, so the checkpoint rule says what `auto` would do."""

from __future__ import annotations

import os
import re

from runtop.parsers.checkpoints import Checkpoint, CheckpointVerdict, Problem
from runtop.parsers.numbers import strict_int
from runtop.sources.regular import open_text
from runtop.sources.walk import Walk

TRACKER = "latest_checkpointed_iteration.txt"
GLOBAL_STEP_RE = re.compile(r"global_step_(\d{1,9})$", re.ASCII)
WEIGHTS = re.compile(r"(^|/)(model_world_size_\d+_rank_\d+\.pt|[^/]*\.safetensors|[^/]*\.distcp|pytorch_model[^/]*\.bin)$", re.ASCII)


def tracker(ckpt_dir: str) -> int | None:
    try:
        with open_text(os.path.join(ckpt_dir, TRACKER)) as f:
            return strict_int(f.read(64).strip())
    except OSError:
        return None


def judge(step: int, files: dict[str, int], latest: int | None) -> CheckpointVerdict:
    """`files`: path relative to `global_step_N/` → size; `latest`: the tracker's step, or None."""
    tmp = sorted(f for f in files if f.endswith(".tmp") or ".tmp." in f.rsplit("/", 1)[-1])
    if tmp:
        return CheckpointVerdict(False, f"save in progress or interrupted ({tmp[0]})", Problem.IN_PROGRESS)
    actor = [k for k in files if k.startswith("actor/")]
    if not actor:
        return CheckpointVerdict(False, "no actor/ files", Problem.MISSING_PART)
    weights = [k for k in actor if WEIGHTS.search(k)]
    if not weights:
        kb = sum(files[k] for k in actor) / 1024
        return CheckpointVerdict(False, f"actor/ holds only {', '.join(sorted(actor)[:3])} ({kb:.0f} KB): no weights, a failed save", Problem.FAILED_SAVE)
    if "data.pt" not in files:
        return CheckpointVerdict(False, "no data.pt (the dataloader's state, saved after the model)", Problem.MISSING_PART)
    if latest is None:
        return CheckpointVerdict(True, f"{len(weights)} weight file(s) and data.pt, but no {TRACKER} (async save?): "
                                       "`resume_mode=auto` would start from scratch", Problem.UNTRACKED)
    if latest < step:
        return CheckpointVerdict(False, f"{TRACKER} says {latest}: this save did not finish", Problem.NOT_NAMED)
    return CheckpointVerdict(True, f"{len(weights)} weight file(s), data.pt, named by {TRACKER} ({latest})")


def scan(ckpt_dir: str) -> dict[int, Checkpoint]:
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        return {}
    latest = tracker(ckpt_dir)
    out: dict[int, Checkpoint] = {}
    for name in names:
        m = GLOBAL_STEP_RE.match(name)
        path = os.path.join(ckpt_dir, name)
        if not m or not os.path.isdir(path):
            continue
        files = {f.rel: f.size for f in Walk(path)}
        step = int(m.group(1))
        verdict = judge(step, files, latest)
        out[step] = Checkpoint(step, path, verdict.complete, verdict.reason, sum(files.values()), verdict.problem)
    return out
