"""NeMo-RL (Ray; DTensor or Megatron policy workers, vLLM generation): the driver console a
user redirected (`uv run examples/run_grpo_math.py … > grpo.log`) and
`checkpointing.checkpoint_dir/step_N/` (written as `tmp_step_N`, renamed when whole; resume
is automatic from the highest `step_N`). Everything NeMo-RL-specific lives here (issue 16)."""

from __future__ import annotations

import os
import re
from typing import Any

from runtop.discovery import RunLayout, Tracked, resolve
from runtop.frameworks.base import Parse
from runtop.frameworks.driver_log import DriverLogFramework
from runtop.parsers.checkpoints import Problem
from runtop.parsers.records import HeaderFn
from runtop.state import RunState
from runtop.state_parts import Checkpoint

SIGNS = re.compile(r"={10,} Step \d+/\d+ ={10,}|nemo_rl\.|examples/run_grpo\w*\.py|📊 Training Results:|DTensorPolicyWorker|VllmGenerationWorker")
STEP_DIR_RE = re.compile(r"(tmp_)?step_(\d{1,9})$", re.ASCII)
CKPT_DIR_RE = re.compile(r"""checkpoint_dir['"]?\s*[:=]\s*['"]?([^\s'",}]+)""", re.ASCII)


def scan(ckpt_dir: str) -> dict[int, Checkpoint]:
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        return {}
    out: dict[int, Checkpoint] = {}
    for name in sorted(names, key=lambda n: n.startswith("tmp_")):  # a whole one wins over its tmp twin
        m = STEP_DIR_RE.match(name)
        path = os.path.join(ckpt_dir, name)
        if not m or not os.path.isdir(path):
            continue
        step = int(m.group(2))
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        if m.group(1):
            if step not in out:
                out[step] = Checkpoint(step, path, False, "tmp_step: the save was interrupted (NeMo-RL renames it when whole)", size, Problem.IN_PROGRESS)
        elif not os.path.isfile(os.path.join(path, "training_info.json")):
            out[step] = Checkpoint(step, path, False, "no training_info.json", size, Problem.MISSING_PART)
        else:
            out[step] = Checkpoint(step, path, True, "renamed from tmp_step, training_info.json present", size)
    return out


class NemoRl(DriverLogFramework):
    name = "nemo-rl"
    signs = SIGNS
    expected_roles = ("trainer",)
    rollout_role = "rollout"
    takes_ckpt_dir = True
    checkpoints_in_run_dir = False
    process_titles = (
        ("ray::DTensorPolicyWorker", "trainer"),
        ("ray::MegatronPolicyWorker", "trainer"),
        ("ray::VllmGenerationWorker", "inference"),
        ("ray::", "ray"),
    )
    file_priority = 0
    expects = "a NeMo-RL driver log or a directory holding one"

    def header(self, tracked: Tracked) -> HeaderFn | None:
        from runtop.frameworks.nemo_rl.parse import header

        return header

    def parser(self, tracked: Tracked, batch_rollouts: int | None) -> Parse:
        from runtop.frameworks.nemo_rl.parse import NemoRlParser

        return NemoRlParser().parse

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir`, else `checkpoint_dir` as the config the log prints says it (relative to
        the run dir)."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        for t in layout.logs:
            try:
                with open(t.path, encoding="utf-8", errors="replace") as f:
                    m = CKPT_DIR_RE.search(f.read(1 << 16))
            except OSError:
                continue
            if m:
                resolved = resolve(m.group(1), layout.root)
                return (resolved, None) if resolved else (None, f"checkpoint dir {m.group(1)} is not on this machine; give --ckpt-dir")
        return None, None

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        return scan(ckpt_dir) if ckpt_dir else {}

    def is_driver(self, cmd: str) -> bool:
        return "run_grpo" in cmd or "nemo_rl" in cmd

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        # NeMo-RL resumes by itself from the highest whole `step_N` (interrupted saves stay
        # `tmp_step_N`): the same command again resumes from the last complete checkpoint.
        return list(words)

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        return scan(os.path.dirname(planned.path)) if planned else {}

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        from runtop.frameworks.nemo_rl.sim import SCENARIOS

        return SCENARIOS

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        from runtop.frameworks.nemo_rl.sim import NemoRlSimulator

        return NemoRlSimulator(root, scenario=scenario, **kw)


NEMO_RL = NemoRl()
