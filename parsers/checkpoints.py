"""Is a checkpoint complete? Judged from a listing of its files (no I/O here).

SkyRL (docs/formats.md): `global_step_N/{policy/…, data.pt, trainer_state.pt}`; the
bare integer in `latest_ckpt_global_step.txt` is written last. A Megatron
`policy/` holding only `common.pt` and metadata (a few hundred KB) is a save that
failed (SIGBUS, a full disk) while the log may still say it succeeded.

prime-rl (docs/formats.md): a step is complete when `trainer/.metadata` (written last by
torch DCP; `.metadata.tmp` means in progress) and `orchestrator/progress.pt` exist
and no `*.tmp` remains. `--resume` picks the highest `step_*` without checking, so
a safe resume must name the last *complete* one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Problem(str, Enum):
    """Why a checkpoint is not complete: what the rules and actions decide on (no
    rule searches the prose `reason`, which is for people)."""

    IN_PROGRESS = "in_progress"  # a `.tmp` file: being written, or interrupted
    MISSING_PART = "missing_part"  # a part that is written last is absent
    FAILED_SAVE = "failed_save"  # metadata without weights (SIGBUS, a full disk): a save that failed
    NOT_NAMED = "not_named"  # SkyRL's latest_ckpt_global_step.txt does not reach it
    AMBIGUOUS = "ambiguous"  # two dirs name the same step
    UNTRACKED = "untracked"  # whole, but the file the framework's auto-resume reads does not name it


@dataclass
class Checkpoint:
    """One save of the run, as its files were listed and judged (the state keeps them by step)."""

    step: int
    path: str
    complete: bool
    reason: str  # for people
    bytes: int
    problem: Problem | None = None  # for rules and actions


@dataclass(frozen=True, slots=True)
class CheckpointVerdict:
    complete: bool
    reason: str
    problem: Problem | None = None


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
        return CheckpointVerdict(False, f"save in progress or interrupted ({tmp[0]})", Problem.IN_PROGRESS)
    if missing:
        return CheckpointVerdict(False, "missing " + " and ".join(missing), Problem.MISSING_PART)
    return CheckpointVerdict(True, "trainer/.metadata and orchestrator/progress.pt present")


# Files of a Megatron `policy/` dir that are metadata, not weights.
_SKYRL_META = {"common.pt", "metadata.json", ".metadata"}
_WEIGHT_EXTS = (".distcp", ".pt", ".pth", ".safetensors", ".bin")


def _kb(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def judge_skyrl(step: int, files: dict[str, int], latest: int | None) -> CheckpointVerdict:
    """`files`: path relative to `global_step_N/` → size; `latest`: the txt's step (None: no txt)."""
    tmp = sorted(f for f in files if f.endswith(".tmp") or ".tmp." in f.rsplit("/", 1)[-1])
    if tmp:
        return CheckpointVerdict(False, f"save in progress or interrupted ({tmp[0]})", Problem.IN_PROGRESS)
    policy = {k[len("policy/"):]: v for k, v in files.items() if k.startswith("policy/")}
    if not policy:
        return CheckpointVerdict(False, "no policy/ files", Problem.MISSING_PART)
    weights = [k for k in policy if k.rsplit("/", 1)[-1] not in _SKYRL_META and k.endswith(_WEIGHT_EXTS)]
    if not weights:
        names = ", ".join(sorted(policy)[:4])
        return CheckpointVerdict(False, f"policy/ holds only {names} ({_kb(sum(policy.values()))}): no weight shards, a failed save", Problem.FAILED_SAVE)
    if "trainer_state.pt" not in files:
        return CheckpointVerdict(False, "no trainer_state.pt", Problem.MISSING_PART)
    if latest is None:
        return CheckpointVerdict(False, "latest_ckpt_global_step.txt missing (written last): the save did not finish", Problem.NOT_NAMED)
    if latest < step:
        return CheckpointVerdict(False, f"latest_ckpt_global_step.txt says {latest}: this save did not finish", Problem.NOT_NAMED)
    return CheckpointVerdict(True, f"{len(weights)} weight file(s), trainer_state.pt, named by latest_ckpt_global_step.txt ({latest})")
