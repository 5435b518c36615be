"""Is a checkpoint complete? Judged from a listing of its files (no I/O here).

prime-rl (FORMATS.md): a step is complete when `trainer/.metadata` (written last by
torch DCP; `.metadata.tmp` means in progress) and `orchestrator/progress.pt` exist
and no `*.tmp` remains. `--resume` picks the highest `step_*` without checking, so
a safe resume must name the last *complete* one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CheckpointVerdict:
    complete: bool
    reason: str


def judge_primerl(files: dict[str, int]) -> CheckpointVerdict:
    """`files`: path relative to `step_N/` → size in bytes."""
    tmp = sorted(f for f in files if f.endswith(".tmp") or ".tmp." in f.rsplit("/", 1)[-1])
    has_meta = "trainer/.metadata" in files
    has_progress = "orchestrator/progress.pt" in files
    missing = []
    if not has_meta:
        missing.append("trainer/.metadata")
    if not has_progress:
        missing.append("orchestrator/progress.pt")
    if tmp:
        return CheckpointVerdict(False, f"save in progress or interrupted ({tmp[0]})")
    if missing:
        return CheckpointVerdict(False, "missing " + " and ".join(missing))
    return CheckpointVerdict(True, "trainer/.metadata and orchestrator/progress.pt present")
