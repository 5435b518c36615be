"""TRL's GRPOTrainer: the console a user redirected (`python train_grpo.py > grpo.log`) and
`{output_dir}/checkpoint-N/`, saved to `tmp-checkpoint-*` and renamed when whole
(FORMATS.md). Everything TRL-specific lives in this package (issue 16)."""

from __future__ import annotations

import os
import re
from typing import Any

from runtop.discovery import RunLayout, Tracked
from runtop.frameworks.base import Parse, drop_flags
from runtop.frameworks.driver_log import DriverLogFramework
from runtop.parsers.checkpoints import Problem
from runtop.parsers.records import HeaderFn
from runtop.state import RunState
from runtop.state_parts import Checkpoint

# A Trainer's logged dict with GRPO's own keys, or TRL by name.
SIGNS = re.compile(r"\{'loss': [^}]{0,400}'(?:reward|completions/mean_length|completion_length|frac_reward_zero_std)'"
                   r"|GRPOTrainer|trl\.trainer", re.ASCII)
CKPT_RE = re.compile(r"(tmp-)?checkpoint-(\d{1,9})$", re.ASCII)


def scan(output_dir: str) -> dict[int, Checkpoint]:
    try:
        names = os.listdir(output_dir)
    except OSError:
        return {}
    out: dict[int, Checkpoint] = {}
    for name in sorted(names, key=lambda n: n.startswith("tmp-")):  # a whole one wins over its tmp twin
        m = CKPT_RE.match(name)
        path = os.path.join(output_dir, name)
        if not m or not os.path.isdir(path):
            continue
        step = int(m.group(2))
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        if m.group(1):
            if step not in out:
                out[step] = Checkpoint(step, path, False, "tmp-checkpoint: the save was interrupted (TRL renames it when whole)",
                                       size, Problem.IN_PROGRESS)
            continue
        if not os.path.isfile(os.path.join(path, "trainer_state.json")):
            out[step] = Checkpoint(step, path, False, "no trainer_state.json", size, Problem.MISSING_PART)
            continue
        out[step] = Checkpoint(step, path, True, "renamed from tmp-checkpoint, trainer_state.json present", size)
    return out


class Trl(DriverLogFramework):
    name = "trl"
    signs = SIGNS
    layout_name = "console log"
    expected_roles = ("trainer",)
    rollout_role = "rollout"
    takes_ckpt_dir = True
    # No titles of its own: `accelerate launch …` (the script's name is the process's), or
    # torchrun's ranks (which every framework shares), tied to the run by their cwd or log.
    process_titles = (("accelerate", "trainer"),)
    file_priority = 2
    expects = "a TRL GRPOTrainer console log or a directory holding one"

    def header(self, tracked: Tracked) -> HeaderFn | None:
        from runtop.frameworks.trl.parse import header

        return header

    def parser(self, tracked: Tracked, batch_rollouts: int | None) -> Parse:
        from runtop.frameworks.trl.parse import TrlParser

        return TrlParser().parse

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir` (the output_dir), else the run dir when it holds `checkpoint-N`."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        try:
            names = os.listdir(layout.root)
        except OSError as e:
            return None, f"cannot list {layout.root}: {e.strerror or e}"
        return (layout.root, None) if any(CKPT_RE.match(n) for n in names) else (None, None)

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        return scan(ckpt_dir) if ckpt_dir else {}

    def is_driver(self, cmd: str) -> bool:
        return "grpo" in cmd.lower() and ("python" in cmd or "accelerate" in cmd or "trl" in cmd)

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        return [*drop_flags(words, ("--resume_from_checkpoint",), with_value=True), "--resume_from_checkpoint", ckpt_path]

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        return scan(os.path.dirname(planned.path)) if planned else {}

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        from runtop.frameworks.trl.sim import SCENARIOS

        return SCENARIOS

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        from runtop.frameworks.trl.sim import TrlSimulator

        return TrlSimulator(root, scenario=scenario, **kw)


TRL = Trl()
