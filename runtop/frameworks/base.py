"""What a framework plug-in provides.

Everything that differs between RL frameworks lives in one `Framework` object: how its
run directories and logs are recognised, which parser reads its logs, where its
checkpoints are and how they are judged, which processes it runs, how a resume is
typed, the words its panes use, and its simulator. The engine, the rules, the report,
the actions and the widgets ask the run's plug-in (`runtop.frameworks.get(state.framework)`)
and never compare a framework's name: a test keeps it so (tests/unit/frameworks/test_frameworks.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtop.frameworks.evidence import Score, Sign
    from runtop.frameworks.layout import RunLayout, Tracked
    from runtop.parsers.events import Event
    from runtop.parsers.records import HeaderFn, Record
    from runtop.parsers.skim import BulkNoise
    from runtop.parsers.step_batches import StepBatch
    from runtop.state.parts import Checkpoint
    from runtop.state.run import RunState

Parse = Callable[[list["Record"], str], list["Event"]]


class Framework:
    """The defaults are a run runtop knows nothing special about."""

    name = "unknown"
    # Roles whose process must be up while the run trains (the others may come and go).
    expected_roles: tuple[str, ...] = ()
    # Its name for the side that produces rollouts (prime-rl's orchestrator, SkyRL's
    # generator): the role its parsers give rollout-side numbers, and the word runtop uses.
    rollout_role = "rollouts"
    # The framework launches its own inference server (vLLM): its death stops the run.
    launches_inference = False
    # `--ckpt-dir` applies: the checkpoint dir is not found from the run dir.
    takes_ckpt_dir = False
    # A checkpoint outside the run dir is not this run's (prime-rl keeps them inside).
    checkpoints_in_run_dir = True
    # What a batch's progress counts, in the check-in's words and the gauge's label.
    batch_words = "current batch"
    gauge_label = "batch"
    # The batch is the agent's finished trajectories (shown with the agent's numbers).
    batch_is_agent_layer = False
    scenarios: tuple[str, ...] = ()
    simulates = True  # it has a simulator (`runtop demo --framework`): asked without importing it
    # (title or command prefix, role) of the processes it runs (`setproctitle` titles).
    process_titles: tuple[tuple[str, str], ...] = ()
    # The role of an untitled process that drives its run (`is_driver`, or a Python writing the
    # run's log): what its death means (docs/reading.md, "Which processes are the run's").
    driver_role = "launcher"
    # The run dir holds this run alone (prime-rl's output dir): any process working or writing
    # its output inside it is the run's. A dir runs share (the checkout a driver log was written
    # into) proves only a titled process.
    owns_run_dir = False
    # What runtop accepts of it, for the one-line "expected …" of a path it cannot read.
    expects = ""
    # Its parser reads a vLLM server's log itself (prime-rl's inference.log); else a server log
    # found beside the run is read by the shared vLLM reader.
    reads_inference_logs = False
    # Said beside every verdict on a run it reads (the generic reader: "framework not recognised").
    read_note = ""
    # Its trainer logs a step when the step is done (a Trainer's dict after the optimizer step):
    # a death after step N's line came in step N+1, and a crash says so.
    logs_steps_when_done = False
    # The signs of its logs, weighed (`runtop.frameworks.evidence`): what names it as a log's writer.
    evidence: tuple[Sign, ...] = ()

    def claims(self, text: str) -> Score:
        """How strongly a log's head and tail say this framework wrote it."""
        from runtop.frameworks.evidence import score

        return score(self.name, self.evidence, text)

    # ---- discovery ------------------------------------------------------------
    def looks_like_run(self, path: str) -> bool:
        """`path` is a run directory of this framework."""
        return False

    def run_layout(self, path: str) -> RunLayout:
        raise NotImplementedError

    def newest_run(self, path: str, entries: list[str]) -> RunLayout | None:
        """An output dir holding several runs of this framework: the newest (and say so)."""
        return None

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        """A run given by the directory holding its log files (SkyRL's `logs/`): `logs` are
        the ones whose evidence names this framework, the one to follow last (maybe none)."""
        return None

    def file_layout(self, path: str, text: str) -> RunLayout:
        """The layout of a single file (head and tail in `text`) its evidence names this
        framework's (or `--framework` says is)."""
        raise NotImplementedError(f"runtop does not read single {self.name} files")

    def structured_file(self, path: str, text: str) -> RunLayout | None:
        """A file known by its name or its rows' shape, not by a log's words (prime-rl's
        `metrics.jsonl`, verl's file-logger JSONL), or None."""
        return None

    def rescan(self, layout: RunLayout) -> RunLayout:
        """The same run listed again (new attempts, rollout steps)."""
        return layout

    # ---- reading ------------------------------------------------------------------
    def header(self, tracked: Tracked) -> HeaderFn | None:
        """Which lines of this log start a record (None: the shared default)."""
        return None

    def parser(self, tracked: Tracked, batch_rollouts: int | None) -> Parse:
        """The parser of one followed log (a fresh one when the file starts over)."""
        from runtop.parsers.logs import parse_records

        return parse_records

    def split_lines(self, lines: list[str]) -> list[str]:
        return lines

    def step_batch(self, tracked: Tracked, parse: Parse) -> StepBatch | None:
        """A reader of this log's step lines in batches, beside `parse` (this log's own parser,
        whose clock it may share): docs/reading.md, "Step lines in batches". None: every record
        is read by `parse`."""
        return None

    def bulk_noise(self, tracked: Tracked) -> BulkNoise | None:
        """What a grep child may drop from a long stretch of this log before the Python filter;
        None: read it all in Python. The default is vLLM's stat and access lines,
        which any framework that runs vLLM may log; a plug-in that knows its logs names the
        kinds each one carries (a marker that never comes costs a backwards read of each chunk)."""
        from runtop.parsers.skim import VLLM_NOISE

        return VLLM_NOISE

    def metrics_line(self, line: str, source: str) -> list[Event]:
        """One row of a structured metrics file: `{"step": N, …}` or `{"step": N, "data": {…}}`
        with the registry's names (a plug-in maps its own keys)."""
        from runtop.parsers.metrics_generic import parse_line

        return parse_line(line, source)

    def default_run_name(self, layout: RunLayout) -> str:
        return os.path.basename(layout.root.rstrip(os.sep))

    def checkpoint_dir(self, layout: RunLayout, state: RunState) -> tuple[str | None, str | None]:
        """(the dir to list, a note when it cannot be found here)."""
        roots = layout.checkpoint_roots
        return (roots[0][0] if roots and os.path.isdir(roots[0][0]) else None), None

    def scan_checkpoints(self, layout: RunLayout, ckpt_dir: str | None) -> dict[int, Checkpoint]:
        return {}

    def named_logs(self, state: RunState) -> dict[str, str]:
        """Other logs the run's own logs name (path → role), to follow once they exist."""
        return {}

    # ---- processes and disks ------------------------------------------------------
    def is_driver(self, cmd: str) -> bool:
        """A process whose command line says it drives this framework's run."""
        return False

    def launch_dir(self, root: str) -> str | None:
        """Where its runs are launched from, when the layout says so and it is not the run dir:
        a titled process working there is the run's."""
        return None

    def core_roots(self, root: str) -> list[str]:
        """Where the run's core dumps land."""
        return [root]

    # ---- advice -------------------------------------------------------------------
    # The settings that lower a role's GPU memory, as this framework's config spells them
    # (docs/reading.md, "Known fixes"): the trainer's micro-batch, vLLM's share of the GPU.
    trainer_memory_settings: tuple[str, ...] = ("the micro-batch size", "the sequence length")
    inference_memory_settings: tuple[str, ...] = ("vLLM's gpu_memory_utilization",)
    # The rollouts' output-token cap, which vLLM refuses beyond its context.
    max_tokens_setting = "max_tokens"

    def oom_settings(self, role: str) -> tuple[str, ...]:
        """What to lower when `role` ran out of GPU memory (vLLM's own settings for the inference side)."""
        return self.inference_memory_settings if role == "inference" else self.trainer_memory_settings

    # ---- actions ------------------------------------------------------------------
    def resume_words(self, state: RunState, words: list[str], step: int, ckpt_path: str) -> list[str]:
        raise NotImplementedError(f"runtop does not know how to resume a {self.name} run")

    def relist_checkpoints(self, run_root: str, planned: Checkpoint | None) -> dict[int, Checkpoint]:
        """The checkpoints listed again from disk, just before a resume is typed."""
        return {}

    # ---- the demo -------------------------------------------------------------------
    # Its own counters, beside the common state (`RunState.plugin`): a fresh one per run and
    # per attempt, and the reducers of the events only its parsers emit.
    def new_state(self) -> object | None:
        return None

    reducers: dict[type, Callable[[RunState, Any, str], None]] = {}  # read only: shared by every run

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        raise NotImplementedError(f"no simulator for {self.name}")


def drop_flags(words: list[str], flags: tuple[str, ...], with_value: bool) -> list[str]:
    """`words` without `--flag value` / `--flag=value` for each of `flags`."""
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        name = w.split("=", 1)[0]
        if name in flags:
            skip = with_value and "=" not in w
            continue
        out.append(w)
    return out
