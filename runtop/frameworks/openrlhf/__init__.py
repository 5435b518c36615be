"""OpenRLHF (Ray + DeepSpeed + vLLM): the driver console a user redirected
(`ray job submit … -- python3 -m openrlhf.cli.train_ppo_ray … > run.log`) and DeepSpeed's
checkpoints `{ckpt.path}/_actor/global_stepN/` with the `latest` file naming the last whole
tag (docs/formats.md). Everything OpenRLHF-specific lives in this package."""

from __future__ import annotations

import os
import re

from runtop.frameworks.driver_log import DriverLogFramework
from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import RunLayout
from runtop.parsers.checkpoints import Problem
from runtop.sources.regular import open_text
from runtop.sources.walk import tree_size
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

# Its modules, its Ray actors (with `ip=` on multi-node runs, under forks' names: `…ActorBOX`,
# critic, reference and reward actors), its step line, its Episode bar, its flags.
EVIDENCE = (
    sign(r"openrlhf[./](?:cli|trainer|models|utils|datasets)\b|\bopenrlhf\b", 3, "OpenRLHF's modules"),
    sign(r"\((?:ActorModel|CriticModel|ReferenceModel|RewardModel|PolicyModel)\w*(?:Ray)?Actor\w* pid=\d+|ray::(?:ActorModel|CriticModel|ReferenceModel|RewardModel)\w*RayActor",
         3, "its Ray actors `(ActorModelRayActor pid=…)`"),
    sign(r"\bLLMRayActor\w*\b", 2, "its `LLMRayActor` engines"),
    sign(r"Global step \d+: \{'", 3, "`Global step N: {…}`"),
    sign(r"Episode \[\d+/\d+\]:", 3, "its `Episode [i/n]` bar"),
    sign(r"--(?:pretrain|reward_pretrain|critic_pretrain|micro_train_batch_size|micro_rollout_batch_size|rollout_batch_size|actor_learning_rate)\b", 2, "its flags"),
    sign(r"_actor/global_step\d+|\bglobal_step\d+\b", 1, "`_actor/global_stepN`"),
)
TAG_RE = re.compile(r"global_step(\d{1,9})$", re.ASCII)
CKPT_FLAG_RE = re.compile(r"--(?:ckpt\.path|ckpt_path)[= ](\S+)", re.ASCII)


def scan(ckpt_path: str) -> dict[int, Checkpoint]:
    """`{ckpt.path}/_actor/global_stepN/`, judged against DeepSpeed's `latest` (written last)."""
    actor = os.path.join(ckpt_path, "_actor")
    try:
        names = os.listdir(actor)
    except OSError:
        return {}
    latest = None
    try:
        with open_text(os.path.join(actor, "latest")) as f:
            m = TAG_RE.match(f.read(64).strip())
            latest = int(m.group(1)) if m else None
    except OSError:
        latest = None
    out: dict[int, Checkpoint] = {}
    for name in names:
        m = TAG_RE.match(name)
        path = os.path.join(actor, name)
        if not m or not os.path.isdir(path):
            continue
        step = int(m.group(1))
        size = tree_size(path)
        if latest is None:
            out[step] = Checkpoint(step, path, False, "no `latest` file (DeepSpeed writes it last): the save did not finish", size, Problem.NOT_NAMED)
        elif step > latest:
            out[step] = Checkpoint(step, path, False, f"`latest` names global_step{latest}: this save did not finish", size, Problem.NOT_NAMED)
        else:
            out[step] = Checkpoint(step, path, True, f"named by `latest` (global_step{latest})" if step == latest else "an earlier whole save", size)
    return out


class OpenRlhf(DriverLogFramework):
    name = "openrlhf"
    evidence = EVIDENCE
    package = __name__  # its parse (header, Parser) and sim (SCENARIOS, Simulator) modules
    checkpoints_in_run_dir = False
    process_titles = (
        ("ray::ActorModelRayActor", "trainer"),
        ("ray::PolicyModelActor", "trainer"),
        ("ray::LLMRayActor", "inference"),
        ("ray::", "ray"),
    )
    expects = "an OpenRLHF driver log or a directory holding one"
    # Its flags up to v0.9; the newer releases spell them `--train.micro_batch_size`, `--vllm.gpu_memory_utilization`.
    trainer_memory_settings = ("--micro_train_batch_size (--train.micro_batch_size on newer releases)",)
    inference_memory_settings = ("--vllm_gpu_memory_utilization (--vllm.gpu_memory_utilization on newer releases)",)
    max_tokens_setting = "--max_new_tokens (--generate_max_len on older releases)"


    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir` (the `ckpt.path`), else `--ckpt.path` as the launch line in the log says it."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        return self.named_in_log(layout, CKPT_FLAG_RE)

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        return scan(ckpt_dir) if ckpt_dir else {}

    def is_driver(self, cmd: str) -> bool:
        return "openrlhf.cli" in cmd

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        # DeepSpeed resumes from the tag `latest` names (written last: the last whole save);
        # the flag's name changed in 2026-04 (`--load_checkpoint` before).
        if "--ckpt.load_enable" in words or "--load_checkpoint" in words:
            return list(words)
        return [*words, "--ckpt.load_enable"]

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        return scan(os.path.dirname(os.path.dirname(planned.path))) if planned else {}



OPENRLHF = OpenRlhf()
