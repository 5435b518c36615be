"""What a `RunState` is made of: the step rows, attempts, checkpoints, errors, counters
and file records it keeps, and the bounds that keep it small (`runtop/state/run.py`
holds the aggregate and its reducers, this module the parts)."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from runtop.parsers.checkpoints import Checkpoint as Checkpoint  # re-exported: a part of the state, judged from a listing
from runtop.parsers.columns import ROLLOUT_OWNED

# Which source of a step's number wins when two give it: structured rows (prime-rl's
# metrics.jsonl, SkyRL's full-precision status dict) over scraped log lines, and those
# over SkyRL's `Step N:` dump, rounded to 4 decimals (docs/formats.md), and a bar's postfix (rounded,
# often the last micro-batch's).
ORIGIN_RANK = {"metrics": 3, "status": 3, "log": 2, "dump": 1, "bar": 1}
MAX_ERRORS = 200
MAX_RECENT_ROLLOUTS = 200
MAX_DEATH_ERRORS = 64  # fatal errors kept per death to choose its cause from
MAX_LOG_LINES = 1000  # the Logs pane's tail: the only text RunState keeps, and bounded
MAX_LOST_STEPS = 500
MAX_DURATIONS = 4096
SLOW_CALL_THRESHOLD_S = 180.0  # the notes' "slow execution" threshold (docs/incidents.md#sigbus-save-core-dumps)


class _Unwritten(dict):  # type: ignore[type-arg]
    """The one empty mapping every row starts with: a week-long run holds 200k rows, and five
    empty dicts each were 300 bytes a row. The writer (`StepReducers._on_step`)
    puts a dict of the row's own in its place; a write to this one is a bug, and raises."""

    def _refuse(self, *_a: object, **_k: object) -> None:
        raise TypeError("a step row's unwritten mapping is shared: give the row a dict of its own")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]

    def __copy__(self) -> _Unwritten:
        return self  # still the shared one: a copied row's writer gives it its own dict

    def __deepcopy__(self, memo: object) -> _Unwritten:
        return self


UNWRITTEN: dict = _Unwritten()  # type: ignore[type-arg]


def _unwritten() -> dict:  # type: ignore[type-arg]
    return UNWRITTEN


def own(mapping: dict[str, float]) -> dict[str, float]:
    """A copy of a row's mapping that shares nothing written (the shared empty one stays)."""
    return mapping if mapping is UNWRITTEN else dict(mapping)


@dataclass(slots=True)
class StepRow:
    step: int
    attempt: int
    trainer: dict[str, float] = field(default_factory=_unwritten)
    rollout: dict[str, float] = field(default_factory=_unwritten)  # the rollout side's (orchestrator, generator)
    # Which source gave each number; rows with the same sources share one dict (never written
    # in place: the writer makes a new one and pools it).
    origin: dict[str, str] = field(default_factory=_unwritten)
    phases_s: dict[str, float] = field(default_factory=_unwritten)
    extra: dict[str, float] = field(default_factory=_unwritten)
    superseded: bool = False

    def value(self, name: str) -> float | None:
        """The merged value of a column: orchestrator's for rollout metrics, else the trainer's.

        `step_time_s` is the trainer's alone (the orchestrator's is reported apart), so
        one column never mixes two clocks.
        """
        if name in ROLLOUT_OWNED:
            return self.rollout.get(name)
        return self.trainer.get(name)


@dataclass
class Attempt:
    number: int
    reason: str
    resumed_from: int | None = None


@dataclass
class ErrorEntry:
    time: str | None
    source: str
    role: str
    kind: str
    message: str
    fatal: bool
    # Root-cause reading (`runtop.state.causes`): see `parsers.events.Notice`.
    wrapper: bool = False
    pid: int | None = None
    actor: str | None = None
    rank: int = 40
    certain: bool = False
    signature: str | None = None
    phase: str | None = None  # what the run was doing: `save_checkpoints`, `checkpoint save (step 14)`
    wrapped_by: str | None = None  # set on a chosen cause: the wrapper that reported it
    hint: str | None = None  # where to look next (`/dev/shm` for a SIGBUS during a save)
    after_finish: bool = False  # logged after a role said the run ended: teardown, not the run's death


@dataclass
class RolloutCounters:
    total: int = 0
    errored: int = 0
    truncated: int = 0
    empty: int = 0
    by_stop: Counter[str] = field(default_factory=Counter)
    by_error: Counter[str] = field(default_factory=Counter)
    reward_sum: float = 0.0
    reward_n: int = 0
    positive: int = 0
    steps: set[int] = field(default_factory=set)


@dataclass
class FunctionCalls:
    count: int = 0
    durations: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    max_s: float = 0.0
    last_time: str | None = None


@dataclass
class EnvCounters:
    started: int = 0
    done: int = 0
    by_stop: Counter[str] = field(default_factory=Counter)
    durations: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_DURATIONS))
    lag_ms: dict[str, float] = field(default_factory=dict)
    active_tasks: int | None = None
    # Start times of rollouts still open (bounded: a dead env never closes them).
    open_starts: dict[str, str] = field(default_factory=dict)


@dataclass
class AgentCounters:
    """skyrl-agent's per-trajectory numbers, since the attempt began."""

    rewards: dict[str, list[float]] = field(default_factory=dict)  # kind → [n, passed (>0), sum]
    trajectories: int = 0
    format_failures: Counter[int] = field(default_factory=Counter)  # rule number → count
    code_errors: Counter[str] = field(default_factory=Counter)  # the model's own exceptions, by type
    last_code_error: dict[str, str] = field(default_factory=dict)

    def pass_rate(self, kind: str) -> float | None:
        r = self.rewards.get(kind)
        return r[1] / r[0] if r and r[0] else None


# A pause between steps a run announces, by the phase that says it (SkyRL's timers, and the
# words of parsers/pauses.py): the run is alive in it though no step comes.
EVALUATING, SAVING = "evaluation", "checkpoint save"
PAUSE_PHASES = {"eval": EVALUATING, "save_checkpoints": SAVING}


@dataclass
class PhaseInfo:
    name: str
    since: str | None
    progress: tuple[int, int] | None = None


@dataclass
class SlowCalls:
    threshold_s: float = SLOW_CALL_THRESHOLD_S
    count: int = 0
    timeouts: int = 0
    by_function: dict[str, FunctionCalls] = field(default_factory=dict)


@dataclass
class FileInfo:
    path: str
    role: str
    kind: str  # "log", "metrics", "rollouts", "config"
    bytes_read: int = 0
    size: int = 0
    last_time: str | None = None
    mtime: float | None = None
    restarts: int = 0
    lines_capped: int = 0
    error: str | None = None
    not_regular: bool = False  # `error` says what the path is instead of a regular file (a FIFO, …)
    # The first fatal error of this file's latest death, every fatal error of that death
    # (the cause is chosen from them: `runtop.state.causes`), and whether the role kept working after.
    fatal: ErrorEntry | None = None
    fatals: list[ErrorEntry] = field(default_factory=list)
    active_after_fatal: bool = False
    # Records that made a parser fail: how many, and the last one's line and reason.
    unparsed: int = 0
    unparsed_line: int = 0
    unparsed_reason: str = ""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record whole, for the Logs pane's Enter (a traceback is read whole, not
    its head and tail). Shared by every pane line the record gave; bounded by the parser's
    own caps (head and tail of a long continuation, `dropped` between them)."""

    origin: str  # `trainer.log line 1234`: where to look with less
    lines: tuple[str, ...]  # the message, then each continuation line kept
    dropped: int = 0  # continuation lines the parser did not keep (the middle)
    head: int = 0  # how many of `lines` come before the dropped ones


@dataclass(frozen=True, slots=True)
class LogLine:
    source: str  # the file's role (trainer, orchestrator, inference, …) or name
    level: str | None
    time: str | None
    text: str
    record: LogRecord | None = None  # the whole record this line is part of


def clock_diff(start: str, end: str) -> float:
    """Seconds from `HH:MM:SS` to `HH:MM:SS`; prime-rl logs carry no date, so wrap at midnight."""
    def secs(t: str) -> int:
        h, m, s = t.split(":")
        return int(h) * 3600 + int(m) * 60 + int(s)

    try:
        d = secs(end) - secs(start)
    except ValueError:
        return 0.0
    return float(d + 86400 if d < 0 else d)
