"""Typed events: what the parsers recognise in a run's files.

Parsers turn text into these and nothing else; `runtop.state.run` folds them into a
`RunState`. Every event is small and holds parsed values, never the raw line, so
memory stays bounded however long the run (docs/design.md, "keep parsed events").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

# Roles a log line can come from. The trainer and the inference server are everyone's;
# the rollout side is named by its framework: prime-rl's orchestrator, SkyRL's generator.
ORCHESTRATOR = "orchestrator"
GENERATOR = "generator"
# Whatever produced a rollout report (not a role): `RunState.rollouts_since_step`'s source.
ROLLOUT_SIDE = "rollout"
TRAINER = "trainer"
INFERENCE = "inference"
ENV = "env"
LAUNCHER = "launcher"

class Kind(str, Enum):
    """The notice kinds runtop recognises by name (one list, not strings matched
    across files). A notice's kind may also be an exception type (`torch.OutOfMemoryError`)
    or a crash signature (`SIGBUS`); those stay plain strings."""

    INFERENCE_UNREACHABLE = "inference_unreachable"
    ULIMIT = "ulimit"
    MAX_TOKENS_TOO_LARGE = "max_tokens_too_large"
    CONTEXT_OVERFLOW = "context_overflow"
    TOOL_TIMEOUT = "tool_timeout"
    TOO_MANY_OPEN_FILES = "TooManyOpenFiles"
    EMPTY_BATCH = "empty_batch"
    DROPPED_TRACES = "dropped_traces"
    ENV_WORKER_DIED = "env_worker_died"
    INFERENCE_NOT_READY = "inference_not_ready"
    INFERENCE_SHUTDOWN = "inference_shutdown"

    TRACE_FAILED = "trace_failed"  # `trace_failed:<ErrorType>` carries the type after the colon

    # A kind is shown and serialised as its value, on every Python version.
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)



@dataclass(frozen=True, slots=True)
class StepMetrics:
    """One step's numbers from one role.

    `values` uses runtop's canonical metric names (see `runtop.state.run.STEP_FIELDS`);
    `origin` is "metrics" for metrics.jsonl rows and "log" for scraped step lines,
    because structured rows win when both exist (docs/formats.md).
    """

    role: str
    step: int
    values: dict[str, float]
    phases_s: dict[str, float] = field(default_factory=dict)
    origin: str = "log"
    time: str | None = None
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """`Train batch 80/128 (62.5%) (+16 buffered); 112 inflight episodes` (prime-rl), or
    SkyRL's finished trajectories in the batch being generated (`total` None when the
    launch command did not say how many to expect)."""

    done: int
    total: int | None
    buffered: int | None
    inflight: int | None
    time: str | None = None


@dataclass(frozen=True, slots=True)
class MaxSteps:
    value: int
    source: str


@dataclass(frozen=True, slots=True)
class Resumed:
    """A process said it resumes from checkpoint step N (a new attempt)."""

    role: str
    step: int
    time: str | None = None


@dataclass(frozen=True, slots=True)
class CheckpointSave:
    role: str
    step: int
    time: str | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """A recognised WARNING/ERROR or a crash signature.

    `kind` names what it is (an exception type such as `torch.OutOfMemoryError`,
    or a signature such as `inference_unreachable`); `fatal` marks messages after
    which the role is expected to die.
    """

    role: str
    level: str
    kind: str
    message: str
    time: str | None = None
    fatal: bool = False
    count: int = 1  # Ray folds repeated lines into one (`[repeated 7x across cluster]`)
    # Root-cause reading: a wrapper reports a death whose cause is printed
    # elsewhere; pid/actor name the process it speaks of; rank orders ways to die (lower
    # is more specific); certain: dead whatever the process table says.
    wrapper: bool = False
    pid: int | None = None
    actor: str | None = None
    rank: int = 40
    certain: bool = False
    signature: str | None = None  # the way to die its text names (SIGBUS, NoSpaceLeft, …), if any
    in_save: bool = False  # its traceback runs through checkpoint-saving code


@dataclass(frozen=True, slots=True)
class RoleFinished:
    """`RL trainer finished!` / `Orchestrator finished.`: a clean end."""

    role: str
    time: str | None = None


@dataclass(frozen=True, slots=True)
class Waiting:
    """What a role says it is waiting for (policy, inference server, batch)."""

    role: str
    on: str
    time: str | None = None


@dataclass(frozen=True, slots=True)
class SampleFilter:
    """prime-rl's filter line `Detected 97/128 rollouts (gibberish=2, zero_advantage=95),
    enforcing 95`: how much of a batch carries no learning signal."""

    flagged: int
    total: int
    reasons: dict[str, int]
    enforced: int | None = None
    time: str | None = None


@dataclass(frozen=True, slots=True)
class RolloutFailed:
    """One rollout that failed and will be retried: `Trace failed in group … — HarnessError: …`,
    `Rollout failed … ProviderError: …` (prime-rl), or an env server's `rollout done … stop=X`."""

    error_type: str
    message: str
    time: str | None = None


@dataclass(frozen=True, slots=True)
class LogTime:
    """The clock time of the newest record of a role (for "last write" and staleness)."""

    role: str
    time: str


@dataclass(frozen=True, slots=True)
class RolloutStart:
    rollout_id: str
    time: str | None = None


@dataclass(frozen=True, slots=True)
class RolloutDone:
    """Env-server `rollout done: …` (main layout)."""

    rollout_id: str
    reward: float | None
    turns: int | None
    stop: str | None
    error_type: str | None
    time: str | None = None


@dataclass(frozen=True, slots=True)
class EnvLag:
    """v0.6 env router `Active tasks …` + `Lag: …` block."""

    active_tasks: int | None
    lag_ms: dict[str, float]
    time: str | None = None


@dataclass(frozen=True, slots=True)
class VllmStats:
    running: int | None
    waiting: int | None
    kv_cache_pct: float | None
    prompt_tok_s: float | None
    gen_tok_s: float | None
    preemptions: int | None = None
    prefix_hit_pct: float | None = None
    time: str | None = None


@dataclass(frozen=True, slots=True)
class Rollout:
    """One episode from a rollout record file (traces.jsonl or train_rollouts.jsonl)."""

    step: int | None
    reward: float | None
    ok: bool
    truncated: bool
    stop_condition: str | None
    error_type: str | None
    turns: int | None
    env: str | None
    empty: bool = False
    duration_s: float | None = None


@dataclass(frozen=True, slots=True)
class Unrecognised:
    """A structured line (JSON) that parsed but matched no known schema."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class Unparsed:
    """A record or line that made a parser fail: counted and named, never an exception
    (one malformed line used to kill every command on every restart).

    `line` is the number the reader gave the record's first line (0: not known).
    """

    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class Phase:
    """SkyRL's timer lines: `Started: 'generate'` / `Finished: 'generate', time cost: 5941.60s`.

    `progress` is (done, total) within the phase when known (tqdm frames, rewards).
    """

    name: str
    started: bool
    time: str | None = None
    duration_s: float | None = None
    progress: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class AgentReward:
    """One trajectory's reward line (`ft_reward: 1.0`): `kind` is ft, gt, rubric or total."""

    kind: str
    value: float


@dataclass(frozen=True, slots=True)
class Trajectory:
    """`Rubric evaluation complete for instance 1234: total=6.5, gt=1.0, rubric=4.5, ft=1.0`."""

    instance: str
    rewards: dict[str, float]
    time: str | None = None


@dataclass(frozen=True, slots=True)
class FormatFailure:
    """One of skyrl-agent's eight format-rule warnings (only the first per trajectory is logged)."""

    rule: int
    time: str | None = None
    count: int = 1


@dataclass(frozen=True, slots=True)
class SlowCall:
    """`Code execution took 278.41 seconds. Code:` with the functions the code called."""

    duration_s: float
    functions: tuple[str, ...]
    time: str | None = None


@dataclass(frozen=True, slots=True)
class AgentError:
    """A traceback inside an agent's observation: the model's own code failed
    (`TypeError: f() got an unexpected keyword argument`), not the infrastructure."""

    kind: str
    message: str
    time: str | None = None
    count: int = 1


@dataclass(frozen=True, slots=True)
class AttemptStart:
    """A relaunch seen in the log itself: an autoretry wrapper's `Attempt #N`, or a
    resume in a log that already holds steps (`number` None: the next one)."""

    number: int | None
    reason: str
    time: str | None = None


@dataclass(frozen=True, slots=True)
class LaunchConfig:
    """Values from the launch command's `key=value` overrides (a shell trace line)."""

    run_name: str | None = None
    ckpt_dir: str | None = None
    ckpt_interval: int | None = None
    keep_last: int | None = None
    max_steps: int | None = None
    batch_rollouts: int | None = None


@dataclass(frozen=True, slots=True)
class CheckpointDir:
    """Where the run says it saves checkpoints (`Successfully saved checkpoint … to: DIR`)."""

    path: str
    source: str


@dataclass(frozen=True, slots=True)
class ExtraLog:
    """Another log the run names (`Infrastructure logs will be written to: …`)."""

    path: str
    role: str


Event = (
    StepMetrics
    | BatchProgress
    | MaxSteps
    | Resumed
    | CheckpointSave
    | Notice
    | RoleFinished
    | Waiting
    | LogTime
    | SampleFilter
    | RolloutFailed
    | RolloutStart
    | RolloutDone
    | EnvLag
    | VllmStats
    | Rollout
    | Unrecognised
    | Unparsed
    | Phase
    | AgentReward
    | Trajectory
    | FormatFailure
    | SlowCall
    | AgentError
    | AttemptStart
    | LaunchConfig
    | CheckpointDir
    | ExtraLog
)
