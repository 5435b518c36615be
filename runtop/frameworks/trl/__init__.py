"""TRL's GRPOTrainer: the console a user redirected (`python train_grpo.py > grpo.log`) and
`{output_dir}/checkpoint-N/`, saved to `tmp-checkpoint-*` and renamed when whole
(docs/formats.md). Everything TRL-specific lives in this package."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from runtop.frameworks.base import drop_flags
from runtop.frameworks.driver_log import DriverLogFramework, scan_renamed
from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import RunLayout, Tracked
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

if TYPE_CHECKING:
    from runtop.parsers.skim import BulkNoise

# TRL by name, its trainers and configs, a logged dict with its own keys wherever they fall in
# the dict; a dict with `'loss'` or a `train_runtime` summary is any transformers Trainer's.
EVIDENCE = (
    sign(r"\b(?:GRPO|PPO|RLOO|DPO|SFT|Online DPO|GKD|ORPO|KTO)(?:Trainer|Config)\b|\btrl[./](?:trainer|models|scripts)\b|from trl import|\btrl==", 3, "TRL's trainers"),
    sign(r"'(?:completions/mean_length|completions/clipped_ratio|frac_reward_zero_std|completion_length|reward_std|rewards/[\w/.-]+|clip_ratio/region_mean)': ",
         3, "its logged keys (`'reward_std'`, `'completions/…'`)"),
    sign(r"\{'loss': ", 1, "a Trainer's `{'loss': …}`"),
    sign(r"\{'train_runtime': ", 1, "a Trainer's `train_runtime` summary"),
    sign(r"\bcheckpoint-\d+\b", 1, "`checkpoint-N`"),
)
CKPT_RE = re.compile(r"(tmp-)?checkpoint-(\d{1,9})$", re.ASCII)


def scan(output_dir: str) -> dict[int, Checkpoint]:
    return scan_renamed(output_dir, CKPT_RE, "trainer_state.json", "tmp-checkpoint: the save was interrupted (TRL renames it when whole)")


class Trl(DriverLogFramework):
    name = "trl"
    evidence = EVIDENCE
    package = __name__  # its parse (header, Parser) and sim (SCENARIOS, Simulator) modules
    layout_name = "console log"
    # No titles of its own: `accelerate launch …` (the script's name is the process's), or
    # torchrun's ranks (which every framework shares), tied to the run by their cwd or log.
    process_titles = (("accelerate", "trainer"),)
    expects = "a TRL GRPOTrainer console log or a directory holding one"
    # GRPOConfig's (raise gradient_accumulation_steps to keep the batch).
    trainer_memory_settings = ("per_device_train_batch_size", "max_completion_length")
    inference_memory_settings = ("vllm_gpu_memory_utilization",)
    max_tokens_setting = "max_completion_length"
    logs_steps_when_done = True  # the Trainer's dict and the bar's tick follow the optimizer step

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir` (the output_dir), else the run dir when it holds `checkpoint-N`."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        try:
            names = os.listdir(layout.root)
        except OSError as e:
            return None, f"cannot list {layout.root}: {e.strerror or e}"
        return (layout.root, None) if any(CKPT_RE.match(n) for n in names) else (None, None)

    def bulk_noise(self, tracked: Tracked) -> BulkNoise | None:
        # Beside vLLM's lines, the completions table `log_completions` draws at every logged step.
        from runtop.parsers.skim import TABLE_NOISE, VLLM_NOISE

        return VLLM_NOISE if tracked.role == "inference" else TABLE_NOISE

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        return scan(ckpt_dir) if ckpt_dir else {}

    def is_driver(self, cmd: str) -> bool:
        return "grpo" in cmd.lower() and ("python" in cmd or "accelerate" in cmd or "trl" in cmd)

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        return [*drop_flags(words, ("--resume_from_checkpoint",), with_value=True), "--resume_from_checkpoint", ckpt_path]

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        return scan(os.path.dirname(planned.path)) if planned else {}



TRL = Trl()
