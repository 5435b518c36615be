"""NeMo-RL (Ray; DTensor or Megatron policy workers, vLLM generation): the driver console a
user redirected (`uv run examples/run_grpo_math.py … > grpo.log`) and
`checkpointing.checkpoint_dir/step_N/` (written as `tmp_step_N`, renamed when whole; resume
is automatic from the highest `step_N`). Everything NeMo-RL-specific lives here."""

from __future__ import annotations

import os
import re

from runtop.frameworks.driver_log import DriverLogFramework, scan_renamed
from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import RunLayout
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

# Its modules and examples, its step block and bullets, its workers.
EVIDENCE = (
    sign(r"nemo_rl[./]|NeMo[- ]RL", 3, "NeMo-RL's modules"),
    sign(r"examples/run_(?:grpo|sft|dpo|rm|eval)\w*\.py", 3, "its example entrypoints"),
    sign(r"={10,} Step \d+/\d+ ={10,}", 3, "`==== Step i/n ====`"),
    sign(r"📊 Training Results:", 3, "`📊 Training Results:`"),
    sign(r"DTensorPolicyWorker|VllmGenerationWorker|MegatronPolicyWorker(?!Base)|RayWorkerGroup", 3, "its workers"),
    sign(r"• (?:Loss|loss|Avg Reward|Total step time|Mean Generation Length):", 2, "its `• Key:` bullets"),
    sign(r"⏱️ {1,2}Timing:", 2, "`⏱️ Timing:`"),
)
STEP_DIR_RE = re.compile(r"(tmp_)?step_(\d{1,9})$", re.ASCII)
CKPT_DIR_RE = re.compile(r"""checkpoint_dir['"]?\s*[:=]\s*['"]?([^\s'",}]+)""", re.ASCII)


def scan(ckpt_dir: str) -> dict[int, Checkpoint]:
    return scan_renamed(ckpt_dir, STEP_DIR_RE, "training_info.json", "tmp_step: the save was interrupted (NeMo-RL renames it when whole)")


class NemoRl(DriverLogFramework):
    name = "nemo-rl"
    evidence = EVIDENCE
    package = __name__  # its parse (header, Parser) and sim (SCENARIOS, Simulator) modules
    checkpoints_in_run_dir = False
    process_titles = (
        ("ray::DTensorPolicyWorker", "trainer"),
        ("ray::MegatronPolicyWorker", "trainer"),
        ("ray::VllmGenerationWorker", "inference"),
        ("ray::", "ray"),
    )
    expects = "a NeMo-RL driver log or a directory holding one"
    trainer_memory_settings = ("policy.train_micro_batch_size", "policy.logprob_batch_size")
    inference_memory_settings = ("policy.generation.vllm_cfg.gpu_memory_utilization",)
    max_tokens_setting = "policy.generation.max_new_tokens"

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir`, else `checkpoint_dir` as the config the log prints says it (relative to
        the run dir)."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        return self.named_in_log(layout, CKPT_DIR_RE)

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



NEMO_RL = NemoRl()
