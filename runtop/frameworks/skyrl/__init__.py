"""SkyRL (skyrl-train, skyrl-agent, on Ray): one driver log wherever the launch redirected it.

The driver log names the rest (the `infra-*.log` of workers and vLLM, the checkpoint
dir), so the reader follows them as they are named; `--ckpt-dir` overrides the dir.
"""

from __future__ import annotations

import os
from typing import Any

from runtop.frameworks.base import Framework, Parse
from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import RunLayout, Tracked, resolve
from runtop.frameworks.skyrl import agent
from runtop.parsers.records import HeaderFn
from runtop.parsers.skim import BulkNoise
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

# Its modules (old `skyrl_train`, new `skyrl.train`), its entrypoint actor, its timer lines
# and bars, its crash line.
EVIDENCE = (
    sign(r"skyrl_train|skyrl\.train|skyrl_entrypoint|skyrl-agent|skyrl_agent|skyrl_gym|\bSkyRL\b", 3, "SkyRL's modules"),
    sign(r"Training Batches Processed", 3, "its `Training Batches Processed` bar"),
    sign(r"Started: '(?:step|generate|policy_train|sync_weights|fwd_logprobs_values_reward)'", 3, "its timer lines"),
    sign(r"Training failed at step \d+", 3, "`Training failed at step N`"),
    sign(r"Finished: '\w+', time cost: ", 2, "`Finished: '…', time cost`"),
    sign(r"global_step: \d|avg_final_rewards|Policy Train epoch", 2, "its step prints"),
    sign(r"\((?:MegatronPolicyWorkerBase|FSDPPolicyWorkerBase|AsyncVLLMInferenceEngine)\w* pid=", 2, "its workers"),
)


def _layout(path: str) -> RunLayout:
    """A SkyRL driver log (`bash run_x.sh &> logs/name.log`). The infra log and the
    checkpoint dir are named inside it, so the reader adds them as it reads."""
    path = os.path.abspath(path)
    lay = RunLayout(os.path.dirname(path), SkyRL.name, "driver log")
    lay.logs = [Tracked(path, "trainer", "log")]
    return lay






class SkyRL(Framework):
    name = "skyrl"
    expected_roles = ("trainer",)  # the entrypoint; its death is the run's death
    rollout_role = "generator"
    reducers = agent.REDUCERS  # skyrl-agent's trajectories, rewards, format rules, code errors
    takes_ckpt_dir = True
    # On Ray (docs/formats.md): the entrypoint actor is the trainer; its death is the run's.
    process_titles = (
        ("ray::skyrl_entrypoint", "trainer"),
        ("ray::MegatronPolicyWorkerBase", "trainer"),
        ("ray::FSDPPolicyWorkerBase", "trainer"),
        ("ray::AsyncVLLMInferenceEngine", "inference"),
        ("ray::RayWorkerWrapper", "inference"),
        ("ray::", "ray"),
    )
    checkpoints_in_run_dir = False  # `trainer.ckpt_path` is anywhere (often another disk)
    batch_words = "rewards this batch"
    batch_is_agent_layer = True
    expects = "a SkyRL driver log or a directory holding one"
    evidence = EVIDENCE
    gauge_label = "rewards in"
    trainer_memory_settings = ("trainer.micro_train_batch_size_per_gpu", "trainer.micro_forward_batch_size_per_gpu")
    # Upstream moved it under `inference_engine` in 2026-03; the forks before keep `generator.gpu_memory_utilization`.
    inference_memory_settings = ("generator.inference_engine.gpu_memory_utilization (generator.gpu_memory_utilization before 2026-03)",)
    max_tokens_setting = "generator.sampling_params.max_generate_length"

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        found = [f for f in logs if not os.path.basename(f).startswith("infra-")]
        if not found:
            return None
        found.sort(key=lambda f: os.path.getmtime(f))
        lay = _layout(found[-1])
        if len(found) > 1:
            others = ", ".join(os.path.basename(f) for f in reversed(found[:-1]))
            lay.notes.insert(0, f"{len(found)} SkyRL logs in {path}; showing the newest, {os.path.basename(found[-1])} (others: {others})")
        return lay

    def file_layout(self, path: str, text: str) -> RunLayout:
        return _layout(path)

    def header(self, tracked: Tracked) -> HeaderFn | None:
        from runtop.parsers.skyrl_records import header

        return header

    def parser(self, tracked: Tracked, batch_rollouts: int | None) -> Parse:
        from runtop.parsers.skyrl import SkyrlParser

        return SkyrlParser(batch_rollouts).parse

    def split_lines(self, lines: list[str]) -> list[str]:
        from runtop.parsers.skyrl_records import split_frames

        return split_frames(lines)

    def bulk_noise(self, tracked: Tracked) -> BulkNoise | None:
        # Beside vLLM's lines (an inference log, or a server's lines in the driver's), the agent's
        # transcripts the generator prints: most of a week-old agent run's log, and no event.
        from runtop.parsers.skim import TRANSCRIPT_NOISE

        return TRANSCRIPT_NOISE

    def default_run_name(self, layout: RunLayout) -> str:
        # The driver log is named for the run (`logs/<name>.log`); its dir is just `logs`.
        if layout.logs:
            return os.path.splitext(os.path.basename(layout.logs[0].path))[0]
        return super().default_run_name(layout)

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir`, else the dir the log names (resolved on this machine), else None."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        named = state.checkpoint_dir
        if not named:
            return None, None
        resolved = resolve(named, layout.root)
        if resolved is None:
            return None, f"checkpoint dir {named} ({state.checkpoint_dir_source}) is not on this machine; give --ckpt-dir"
        return resolved, None

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        from runtop.sources.checkpoints import scan_skyrl

        return scan_skyrl(ckpt_dir) if ckpt_dir else {}

    def named_logs(self, state: RunState) -> dict[str, str]:
        return dict(state.extra_logs)

    def is_driver(self, cmd: str) -> bool:
        return "skyrl" in cmd

    def launch_dir(self, root: str) -> str | None:
        # `bash examples/…/run_x.sh &> logs/x.log` runs from the dir above `logs/`: the entrypoint
        # and its actors work there (docs/formats.md).
        return os.path.dirname(root) if os.path.basename(root) == "logs" else None

    def core_roots(self, root: str) -> list[str]:
        # A SkyRL log's dir is `logs/`: core dumps land beside it (docs/incidents.md#sigbus-save-core-dumps).
        return [os.path.dirname(root)] if os.path.basename(root) == "logs" else [root]

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        words = [w for w in words if not w.startswith(("trainer.resume_mode=", "trainer.resume_path="))]
        return [*words, "trainer.resume_mode=from_path", f"trainer.resume_path={ckpt_path}"]

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        from runtop.sources.checkpoints import scan_skyrl

        return scan_skyrl(os.path.dirname(planned.path)) if planned else {}

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        from runtop.frameworks.skyrl.sim import SCENARIOS

        return SCENARIOS

    def new_state(self) -> object | None:
        return agent.new_state()

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        from runtop.frameworks.skyrl.sim import SkyrlSimulator

        return SkyrlSimulator(root, scenario=scenario, **kw)


SKYRL = SkyRL()
