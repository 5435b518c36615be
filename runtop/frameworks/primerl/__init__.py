"""prime-rl: its four layout generations, logs, checkpoints, processes and resume flags.

Every generation in docs/formats.md (v0.5–v0.6, v0.7–v0.8, main, the announced newer one) is
detected here, not assumed; the parsers are `parsers.primerl` (orchestrator, trainer, env
servers) and `parsers.vllm` (inference.log), chosen per record by `parsers.logs`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from runtop.action_error import ActionError
from runtop.frameworks.base import Framework, Parse, drop_flags
from runtop.frameworks.layout import (
    RunLayout,
    Tracked,
)
from runtop.frameworks.primerl.layout import (
    EVIDENCE,
    NAME,
    OLD_LAYOUTS,
    RUN_NAME_RE,
    _checkpoint_roots,
    _file_layout,
    _looks_like_primerl_run,
    _metrics_file,
    _newest_mtime,
    _primerl_layout,
)
from runtop.parsers.events import Event
from runtop.parsers.skim import ORCHESTRATOR_NOISE, VLLM_NOISE, BulkNoise
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

if TYPE_CHECKING:
    from runtop.parsers.step_batches import StepBatch


class PrimeRL(Framework):

    name = NAME
    expected_roles = ("inference", "orchestrator", "trainer")
    rollout_role = "orchestrator"
    launches_inference = True
    # One output dir a run: the launcher sends each child's stdout into its `logs/`.
    owns_run_dir = True
    process_titles = (
        ("PRIME-RL::Launcher", "launcher"),
        ("PRIME-RL::Inference", "inference"),
        ("PRIME-RL::Orchestrator", "orchestrator"),
        ("PRIME-RL::Trainer", "trainer"),
        ("PRIME-RL::EnvServer", "env"),
        ("Verifiers::", "env"),
    )
    expects = (
        "a prime-rl run directory (logs/attempt_N/, logs/latest or logs/{orchestrator,trainer}.log, "
        "metrics.jsonl), an output directory holding runs"
    )
    gauge_label = "batch"
    evidence = EVIDENCE
    reads_inference_logs = True
    # The trainer packs samples into micro-batches of `seq_len` tokens (since v0.4: a shorter one
    # truncates longer samples); vLLM's share of its GPU is the inference config's.
    trainer_memory_settings = ("trainer.model.seq_len",)
    inference_memory_settings = ("inference.gpu_memory_utilization ([inference.vllm] on the newest)",)
    max_tokens_setting = "orchestrator.sampling.max_completion_tokens (max_tokens before 2026-05)"

    def looks_like_run(self, path: str) -> bool:
        return _looks_like_primerl_run(path)

    def run_layout(self, path: str) -> RunLayout:
        return _primerl_layout(path)

    def newest_run(self, path: str, entries: list[str]) -> RunLayout | None:
        """An output dir holding several runs: the newest, and say so."""
        runs = [os.path.join(path, e) for e in entries if os.path.isdir(os.path.join(path, e)) and _looks_like_primerl_run(os.path.join(path, e))]
        if not runs:
            return None
        runs.sort(key=_newest_mtime)
        lay = _primerl_layout(runs[-1])
        if len(runs) > 1:
            others = ", ".join(os.path.basename(r) for r in reversed(runs[:-1]))
            lay.notes.insert(0, f"{len(runs)} runs in {path}; showing the newest, {os.path.basename(runs[-1])} (others: {others})")
        return lay

    def file_layout(self, path: str, text: str) -> RunLayout:
        return _file_layout(path, text)

    def structured_file(self, path: str, text: str) -> RunLayout | None:
        return _metrics_file(path)

    def rescan(self, layout: RunLayout) -> RunLayout:
        if layout.single_file:
            return layout
        fresh = _primerl_layout(layout.root)
        # Keep what only the first look could know (which of several runs was picked).
        fresh.notes = [n for n in layout.notes if " runs in " in n] + fresh.notes
        return fresh

    def step_batch(self, tracked: Tracked, parse: Parse) -> StepBatch | None:
        # The orchestrator's and the trainer's step lines (an env server or vLLM writes none).
        if tracked.kind != "log" or tracked.role not in ("orchestrator", "trainer"):
            return None
        from runtop.parsers.primerl_steps import PrimeSteps

        return PrimeSteps(tracked.role)

    def bulk_noise(self, tracked: Tracked) -> BulkNoise | None:
        # The orchestrator's noise is its `Train batch` progress and its chatter (env bars, INFO
        # lines nothing reads), the inference log's vLLM's stat and access lines; the trainer's and
        # the envs' logs have none worth a scan.
        return {"orchestrator": ORCHESTRATOR_NOISE, "inference": VLLM_NOISE}.get(tracked.role)

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        from runtop.sources.checkpoints import scan_primerl

        return scan_primerl(layout.checkpoint_roots)

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        from runtop.sources.checkpoints import scan_primerl

        return scan_primerl(_checkpoint_roots(run_root))  # where its run dir keeps them, as `run_layout` says

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        if state.layout in OLD_LAYOUTS:  # v0.5–v0.8: `--ckpt.resume-step N`
            words = drop_flags(words, ("--ckpt.resume-step", "--ckpt.resume_step"), with_value=True)
            return [*words, "--ckpt.resume-step", str(step)]
        words = drop_flags(words, ("--resume",), with_value=False)
        words = drop_flags(words, ("--resume.step",), with_value=True)
        if "--run.name" not in {w.split("=", 1)[0] for w in words}:
            name = state.run_name or ""
            if not RUN_NAME_RE.match(name):
                raise ActionError(f"the run name {name!r} is not a plain name; put --run.name in the launch command")
            words += ["--run.name", name]
        return [*words, "--resume.step", str(step)]

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        from runtop.frameworks.primerl.sim import SCENARIOS

        return SCENARIOS

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        from runtop.frameworks.primerl.sim import Simulator

        return Simulator(root, scenario=scenario, **kw)

    def metrics_line(self, line: str, source: str) -> list[Event]:
        """prime-rl's `metrics.jsonl`: each row attributed to its role by its keys."""
        from runtop.parsers.metrics_jsonl import parse_line

        ev = parse_line(line, source)
        return [] if ev is None else [ev]


PRIME_RL = PrimeRL()
