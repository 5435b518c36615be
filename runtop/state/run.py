"""`RunState`: everything runtop knows about one run, folded from parser events.

One writer (the app loop, or the headless reader) calls `apply`; widgets, health
rules, `runtop status` and the JSON export only read. Everything kept is bounded:
parsed numbers and counters, never log lines.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtop.parsers.events import (
    AttemptStart,
    BatchProgress,
    CheckpointDir,
    CheckpointSave,
    EnvLag,
    Event,
    ExtraLog,
    LaunchConfig,
    MaxSteps,
    Notice,
    Phase,
    Resumed,
    RoleFinished,
    Rollout,
    RolloutDone,
    RolloutFailed,
    RolloutStart,
    SampleFilter,
    SlowCall,
    StepMetrics,
    Unparsed,
    Unrecognised,
    VllmStats,
    Waiting,
)
from runtop.parsers.hygiene import shown
from runtop.state.columns import StepHistory
from runtop.state.errors import ErrorReducers
from runtop.state.meta import MetaReducers
from runtop.state.parts import (
    MAX_ERRORS,
    MAX_LOST_STEPS,
    MAX_RECENT_ROLLOUTS,
    SAVING,
    AgentCounters,
    Attempt,
    Checkpoint,
    EnvCounters,
    ErrorEntry,
    FileInfo,
    PhaseInfo,
    RolloutCounters,
    SlowCalls,
    StepRow,
    clock_diff,
)
from runtop.state.rollouts import RolloutReducers
from runtop.state.steps import StepReducers


@dataclass
class RunState(StepReducers, RolloutReducers, MetaReducers, ErrorReducers):
    path: str = ""
    framework: str = "unknown"
    layout: str = "unknown"
    detection: str = ""  # why runtop reads it as this framework (the signs it saw)
    run_name: str | None = None
    notes: list[str] = field(default_factory=list)
    files: dict[str, FileInfo] = field(default_factory=dict)
    max_steps: int | None = None
    max_steps_source: str | None = None
    ckpt_interval: int | None = None
    endpoints: dict[str, int] = field(default_factory=dict)  # role → the local port it serves /metrics on (its config)
    keep_last: int | None = None
    attempts: list[Attempt] = field(default_factory=lambda: [Attempt(1, "first launch")])
    # The step rows, in columns (`runtop.state.columns`): read as a mapping of step → `StepRow`.
    steps: StepHistory = field(default_factory=StepHistory)
    # Rows written (or dropped) since the history behind a live tail last handed its rows over
    # (`runtop.engine.live`); marked only while `_track_rows` (a headless read keeps no marks).
    _dirty_steps: set[int] = field(default_factory=set, repr=False)
    _track_rows: bool = field(default=False, repr=False)
    lost_steps: deque[StepRow] = field(default_factory=lambda: deque(maxlen=MAX_LOST_STEPS))
    # Bumped whenever any step row changes, whichever row: a pane that shows steps repaints
    # on it (with the orchestrator a step ahead, the trainer's numbers land in the
    # row before the last, and a signature of the last row alone missed them).
    steps_version: int = 0
    trainer_step: int | None = None
    rollout_step: int | None = None
    last_step_time: str | None = None  # log time (HH:MM:SS) of the newest step line: "no step for …"
    batch: BatchProgress | None = None
    waiting: dict[str, str] = field(default_factory=dict)
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    last_save: dict[str, int] = field(default_factory=dict)
    rollouts: RolloutCounters = field(default_factory=RolloutCounters)
    env: EnvCounters = field(default_factory=EnvCounters)
    slow_calls: SlowCalls = field(default_factory=SlowCalls)
    context_overflows: int = 0
    # The framework's own counters (`Framework.new_state`: SkyRL-agent's trajectories and
    # rewards), folded by its own reducers; None for a framework that keeps none.
    plugin: object | None = None
    _plugin_new: Callable[[], object | None] | None = field(default=None, repr=False)
    _plugin_reducers: dict[type, Callable[[RunState, Any, str], None]] = field(default_factory=dict, repr=False)
    phases: list[PhaseInfo] = field(default_factory=list)  # open timer phases, outermost first
    checkpoint_dir: str | None = None
    checkpoint_dir_source: str | None = None
    extra_logs: dict[str, str] = field(default_factory=dict)  # path → role, named by the run's own logs
    batch_rollouts: int | None = None
    errors: deque[ErrorEntry] = field(default_factory=lambda: deque(maxlen=MAX_ERRORS))
    error_count: int = 0
    warnings: Counter[str] = field(default_factory=Counter)
    last_warning: dict[str, str] = field(default_factory=dict)
    events: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # notable INFO lines, by kind
    vllm: VllmStats | None = None
    vllm_source: str | None = None
    finished: set[str] = field(default_factory=set)
    unrecognised: dict[str, str] = field(default_factory=dict)
    processes: dict[str, list[int]] | None = None  # role → pids; None = not looked
    slurm: Any = None  # `sources.slurm.SlurmSnapshot`: the run's SLURM job as last read; None = no job named
    ray: Any = None  # `sources.ray_state.RaySnapshot`: the run's Ray cluster as last read; None = none tied to it
    # `sources.disk.DiskSnapshot`: the disks the run writes to and its core dumps, as last sampled;
    # None = not looked. The next step is checked against it (docs/design.md, "Advice that would work").
    disk: Any = None
    process_denied: dict[str, list[str]] = field(default_factory=dict)  # user → roles runtop may not inspect
    backfill_error: str | None = None  # the history behind the live tail could not be read
    first_time: str | None = None  # log clock of the first record read (for the run's duration)
    # Rollouts that ended since the orchestrator's last step: error type (None: ok), time,
    # message, and who said so (the orchestrator and the env server each report the same
    # rollout). 90 % failing with one type while no step comes is a stuck run.
    rollouts_since_step: deque[tuple[str | None, str | None, str, str]] = field(default_factory=lambda: deque(maxlen=MAX_RECENT_ROLLOUTS))
    sample_filter: SampleFilter | None = None
    _saving: dict[str, int] = field(default_factory=dict, repr=False)  # role → checkpoint step being saved
    # Pauses between steps the run announced (an evaluation's start, tick or end; a save's start):
    # how many, and the one said last while it lasts (docs/reading.md, "Stalls, at the run's own pace").
    pauses_said: int = 0
    pause: str | None = None

    # ---- attempts -------------------------------------------------------
    @property
    def attempt(self) -> int:
        return self.attempts[-1].number

    def new_attempt(self, reason: str, number: int | None = None) -> bool:
        """Start a new attempt unless the current one has not produced a step yet.

        Several logs are replaced at once on a relaunch; only the first of them
        opens an attempt (the rest find it still empty).
        """
        cur = self.attempts[-1]
        if number is not None and number <= cur.number:
            return False
        has_steps = self.steps.any_of_attempt(cur.number)
        if number is None and not has_steps:
            return False
        self.attempts.append(Attempt(number or cur.number + 1, reason))
        self.trainer_step = None
        self.rollout_step = None
        self.batch = None
        self.waiting.clear()
        self.finished.clear()
        self.phases.clear()
        self._saving.clear()
        self.pause = None
        self.rollouts_since_step.clear()
        self.plugin = self._plugin_new() if self._plugin_new else None
        # The old attempt's death is history now: what speaks for health is the new one.
        for info in self.files.values():
            if info.fatal is not None:
                info.active_after_fatal = True
        return True

    # ---- folding --------------------------------------------------------
    def apply(self, ev: Event, source: str = "") -> None:
        handler = _HANDLERS.get(type(ev)) or self._plugin_reducers.get(type(ev))
        if handler is not None:
            handler(self, ev, source)

    def use_plugin(self, new_state: Callable[[], object | None], reducers: dict[type, Callable[[RunState, Any, str], None]]) -> None:
        """Keep the framework's own counters beside this state, folded by its reducers."""
        self._plugin_new, self._plugin_reducers = new_state, dict(reducers)
        self.plugin = new_state()

    @property
    def agent(self) -> AgentCounters:
        """The agent layer's numbers where the framework keeps them (SkyRL-agent); empty elsewhere."""
        return self.plugin if isinstance(self.plugin, AgentCounters) else AgentCounters()

    def _on_batch(self, ev: BatchProgress, source: str) -> None:
        self.batch = ev
        self._activity(source)

    def _on_vllm(self, ev: VllmStats, source: str) -> None:
        self.vllm, self.vllm_source = ev, "log"
        self._activity(source)

    def _on_save(self, ev: CheckpointSave, source: str) -> None:
        self.last_save[ev.role] = ev.step
        self._saving[ev.role] = ev.step
        self.pauses_said += 1
        self.pause = SAVING

    def _on_waiting(self, ev: Waiting, source: str) -> None:
        if ev.on:
            self.waiting[ev.role] = ev.on
        else:
            self.waiting.pop(ev.role, None)

    def _on_finished(self, ev: RoleFinished, source: str) -> None:
        self.finished.add(ev.role)

    def _on_lag(self, ev: EnvLag, source: str) -> None:
        self.env.lag_ms = dict(ev.lag_ms)
        self.env.active_tasks = ev.active_tasks

    def _activity(self, source: str) -> None:
        info = self.files.get(source)
        if info is not None and info.fatal is not None:
            info.active_after_fatal = True

    # ---- SkyRL: phases, the agent layer, relaunches ----------------------
    def _on_attempt_start(self, ev: AttemptStart, source: str) -> None:
        self.new_attempt(ev.reason, number=ev.number)

    # ---- derived --------------------------------------------------------
    def write_times(self) -> list[float]:
        """Modification times of the run's logs and metrics files."""
        return [f.mtime for f in self.files.values() if f.mtime is not None and f.kind in ("log", "metrics")]

    def log_clock(self, ts: float) -> str | None:
        """The wall time `ts` on the logs' own clock (`HH:MM:SS`), read against the newest log
        whose last timestamped line and modification time are both known; None without one.
        The alerts speak one clock, the one the Logs pane shows (a crash's log time
        stood above a stall's wall-clock time in one column, hours apart on a UTC pod)."""
        ref = max((f for f in self.files.values() if f.kind == "log" and f.last_time and f.mtime is not None),
                  key=lambda f: f.mtime or 0.0, default=None)
        if ref is None or ref.last_time is None or ref.mtime is None:
            return None
        try:
            h, m, sec = (int(x) for x in ref.last_time.split(":"))
        except ValueError:
            return None
        t = int(h * 3600 + m * 60 + sec + round(ts - ref.mtime)) % 86400
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"

    def relpath(self, path: str) -> str:
        """`path` relative to the run dir, as runtop shows file names: on one line (a newline in
        a log's name is `\\n`, never a second line of STATUS.md)."""
        try:
            return shown(os.path.relpath(path, self.path) if self.path else path)
        except ValueError:
            return shown(path)

    def run_finished(self) -> bool:
        """A role said it ended normally (`RL trainer finished!`, `Orchestrator finished.`,
        SkyRL's `Training finished` or its last batch bar at N/N), and no death ends a log but
        those of the teardown after it (vLLM's engine dying as the run shuts it down, a SIGSEGV
        at interpreter exit): a finished run stays Finished (docs/reading.md, "Ends")."""
        return bool(self.finished) and all(e.after_finish for e in self.open_fatals())

    def duration_s(self) -> float | None:
        """Log-clock time from the first record to the newest (prime-rl logs carry no date:
        a run longer than a day under-counts whole days)."""
        newest = max((f.last_time for f in self.files.values() if f.kind == "log" and f.last_time), default=None)
        if self.first_time is None or newest is None:
            return None
        return clock_diff(self.first_time, newest)

    def last_complete_checkpoint(self) -> Checkpoint | None:
        done = [c for c in self.checkpoints.values() if c.complete]
        return max(done, key=lambda c: c.step) if done else None


# Each event type folds through one reducer (the event is the reducer's own type).
_HANDLERS: dict[type, Callable[[RunState, Any, str], None]] = {
    StepMetrics: RunState._on_step,
    BatchProgress: RunState._on_batch,
    RolloutStart: RunState._on_env,
    RolloutDone: RunState._on_env,
    Rollout: RunState._on_rollout,
    Notice: RunState._on_notice,
    VllmStats: RunState._on_vllm,
    MaxSteps: RunState._on_max_steps,
    CheckpointSave: RunState._on_save,
    Resumed: RunState._on_resumed,
    Waiting: RunState._on_waiting,
    RoleFinished: RunState._on_finished,
    EnvLag: RunState._on_lag,
    Unrecognised: RunState._on_unrecognised,
    Unparsed: RunState._on_unparsed,
    Phase: RunState._on_phase,
    SlowCall: RunState._on_slow_call,
    AttemptStart: RunState._on_attempt_start,
    LaunchConfig: RunState._on_launch_config,
    CheckpointDir: RunState._on_ckpt_dir,
    ExtraLog: RunState._on_extra_log,
    RolloutFailed: RunState._on_rollout_failed,
    SampleFilter: RunState._on_sample_filter,
}
