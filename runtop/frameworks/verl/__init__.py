"""verl (volcengine/verl, verl-project/verl) on Ray: the driver log a user redirected
(`python -m verl.trainer.main_ppo … > run.log`), its checkpoints under
`trainer.default_local_dir` (`--ckpt-dir` where the log does not say), its Ray processes.
Everything verl-specific lives in this package."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from runtop.frameworks.base import Parse
from runtop.frameworks.driver_log import DriverLogFramework
from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import RunLayout, Tracked, resolve
from runtop.parsers.events import Event
from runtop.state.parts import Checkpoint
from runtop.state.run import RunState

if TYPE_CHECKING:
    from runtop.parsers.step_batches import StepBatch

# What a verl driver log carries (forks and recipes included: verl-agent, DAPO): its module
# paths, its Ray driver and workers under their old and new names, its step line whatever key
# comes first, its keys, its bar, its checkpoints (docs/reading.md, "Detection").
EVIDENCE = (
    sign(r"verl\.trainer\.\w+|verl/trainer/\w+\.py|verl\.(?:workers|single_controller|utils|protocol)\b|verl/(?:workers|single_controller|utils)/", 3, "verl's modules"),
    sign(r"\bstep:\d+ - [\w/@.\-]+:[-+\d.]", 3, "`step:N - key:value`"),
    sign(r"\((?:TaskRunner|main_task) pid=\d+|ray::TaskRunner|ray::main_task", 3, "its driver `(TaskRunner pid=…)`"),
    sign(r"\(WorkerDict pid=\d+|ray::WorkerDict|create_colocated_worker_cls|actor_rollout_(?:init_model|generate_sequences|compute_log_prob)", 3, "its `WorkerDict` workers"),
    sign(r"actor_rollout_ref\.(?:actor|rollout|model)\.|trainer\.default_local_dir|algorithm\.adv_estimator", 3, "its config keys"),
    sign(r"latest_checkpointed_iteration", 3, "`latest_checkpointed_iteration`"),
    sign(r"critic/score/mean|response_length/mean|timing_s/\w+|actor/pg_clipfrac|val-core/", 2, "its metric keys"),
    sign(r"Training Progress:", 2, "its `Training Progress` bar"),
    sign(r"global_step_\d+", 1, "`global_step_N`"),
)
JSONL_SIGNS = re.compile(r'^\{"step": ?\d+, ?"data": ?\{"(?:actor|critic|val-core|val-aux|training|timing_s|response_length)/', re.ASCII | re.M)


def _names(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []  # gone or unreadable: it holds no checkpoint runtop could read


def _subdirs(base: str, depth: int) -> list[str]:
    """Directories `depth` levels below `base` (`checkpoints/{project}/{experiment}`)."""
    level = [base]
    for _ in range(depth):
        level = [os.path.join(d, n) for d in level for n in _names(d) if os.path.isdir(os.path.join(d, n))]
    return level


def _file_logger_rows(path: str) -> bool:
    """A JSONL of verl's file logger: `{"step": N, "data": {"actor/…": …}}` rows."""
    from runtop.frameworks.layout import DiscoveryError, sniff

    try:
        return bool(JSONL_SIGNS.search(sniff(path, 4096)))
    except DiscoveryError:
        return False


class Verl(DriverLogFramework):
    name = "verl"
    evidence = EVIDENCE
    package = __name__  # its parse (header, Parser) and sim (SCENARIOS, Simulator) modules

    def step_batch(self, tracked: Tracked, parse: Parse) -> StepBatch | None:
        from runtop.frameworks.verl.parse import VerlParser
        from runtop.frameworks.verl.steps import VerlSteps

        parser = getattr(parse, "__self__", None)  # the log's own parser: the batch reads on its clock
        return VerlSteps(parser) if isinstance(parser, VerlParser) else None
    checkpoints_in_run_dir = False  # `trainer.default_local_dir` is relative to where it was launched, or anywhere
    process_titles = (
        ("ray::TaskRunner", "trainer"),
        ("ray::main_task", "trainer"),
        ("ray::WorkerDict", "trainer"),
        ("ray::vLLMHttpServer", "inference"),
        ("ray::", "ray"),
    )
    expects = "a verl driver log or a directory holding one"
    # `ppo_max_token_len_per_gpu` is the cap with `use_dynamic_bsz`; the micro-batch without it.
    trainer_memory_settings = ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu")
    inference_memory_settings = ("actor_rollout_ref.rollout.gpu_memory_utilization",)
    max_tokens_setting = "data.max_response_length"

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        """The driver log, and beside it the file logger's JSONL when it is in the run dir
        (`VERL_FILE_LOGGER_PATH`); either alone is a run too."""
        try:
            rows = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".jsonl"))
        except OSError:
            rows = []
        rows = [r for r in rows if _file_logger_rows(r)]
        lay = super().logs_in_dir(path, logs)
        if lay is None and rows:
            lay = RunLayout(path, self.name, "file logger")
        if lay is not None:
            lay.metrics = [Tracked(r, "trainer", "metrics") for r in rows[-1:]]
        return lay

    def structured_file(self, path: str, text: str) -> RunLayout | None:
        if JSONL_SIGNS.search(text):
            lay = RunLayout(os.path.dirname(os.path.abspath(path)), self.name, "file logger")
            lay.metrics = [Tracked(os.path.abspath(path), "trainer", "metrics")]
            lay.detection = "verl: its file logger's rows"
            return lay
        return None

    def metrics_line(self, line: str, source: str) -> list[Event]:
        from runtop.frameworks.verl.parse import metrics_line

        return metrics_line(line, source)

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """`--ckpt-dir`, else `trainer.default_local_dir` as the log says it (relative to the
        run dir), else `checkpoints/*/*` under the run dir when exactly one holds saves."""
        if layout.ckpt_dir:
            return layout.ckpt_dir, None
        named = state.checkpoint_dir
        if named:
            resolved = resolve(named, layout.root)
            if resolved is None:
                return None, f"checkpoint dir {named} ({state.checkpoint_dir_source}) is not on this machine; give --ckpt-dir"
            return resolved, None
        base = os.path.join(layout.root, "checkpoints")
        found = [d for d in _subdirs(base, 2) if any(n.startswith("global_step_") for n in _names(d))]
        if len(found) == 1:
            return found[0], None
        return None, ("several checkpoint dirs under checkpoints/: give --ckpt-dir" if found else None)

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        from runtop.frameworks.verl.ckpt import scan

        return scan(ckpt_dir) if ckpt_dir else {}

    def is_driver(self, cmd: str) -> bool:
        return "verl.trainer" in cmd

    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        words = [w for w in words if not w.startswith(("trainer.resume_mode=", "trainer.resume_from_path="))]
        return [*words, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={ckpt_path}"]

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        from runtop.frameworks.verl.ckpt import scan

        return scan(os.path.dirname(planned.path)) if planned else {}



VERL = Verl()
