"""The reducers of what rollouts, env servers and the agent layer say: rollout records,
env-server `rollout start/done`, failed rollouts since the last step, prime-rl's sample
filter, SkyRL's timer phases, trajectories, format failures, the model's own errors and
slow tool calls (`RunState` split by concern; each reducer writes its own fields).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from runtop.parsers.events import (
    ROLLOUT_SIDE,
    Phase,
    Rollout,
    RolloutDone,
    RolloutFailed,
    RolloutStart,
    SampleFilter,
    SlowCall,
)
from runtop.state.parts import (
    PAUSE_PHASES,
    EnvCounters,
    FunctionCalls,
    PhaseInfo,
    RolloutCounters,
    SlowCalls,
    clock_diff,
)

if TYPE_CHECKING:
    from runtop.parsers.events import BatchProgress


class RolloutReducers:
    """Mixed into `RunState`, whose dataclass fields these are."""

    if TYPE_CHECKING:
        rollouts: RolloutCounters
        env: EnvCounters
        slow_calls: SlowCalls
        phases: list[PhaseInfo]
        pauses_said: int
        pause: str | None
        batch: BatchProgress | None
        rollouts_since_step: deque[tuple[str | None, str | None, str, str]]
        sample_filter: SampleFilter | None

        def _activity(self, source: str) -> None: ...

    def _on_rollout_failed(self, ev: RolloutFailed, source: str) -> None:
        self.rollouts_since_step.append((ev.error_type, ev.time, ev.message, ROLLOUT_SIDE))

    def _on_sample_filter(self, ev: SampleFilter, source: str) -> None:
        self.sample_filter = ev

    def _on_phase(self, ev: Phase, source: str) -> None:
        self._activity(source)
        said = PAUSE_PHASES.get(ev.name)
        if said is not None:  # an evaluation or a save between steps, said as it goes
            self.pauses_said += 1
            self.pause = said if ev.started else None
        stack = self.phases
        if ev.started:
            for p in stack:
                if p.name == ev.name:  # a progress frame of a phase already open
                    p.progress = ev.progress or p.progress
                    return
            if len(stack) < 8:
                stack.append(PhaseInfo(ev.name, ev.time, ev.progress))
            return
        for i in range(len(stack) - 1, -1, -1):
            if stack[i].name == ev.name:
                del stack[i:]
                return

    def current_phase(self) -> str | None:
        """`generate 34/80`: the innermost open phase and its progress."""
        if not self.phases:
            return None
        p = self.phases[-1]
        prog = p.progress
        if p.name == "generate" and self.batch is not None:
            prog = (self.batch.done, self.batch.total or 0)
        if prog is None:
            return p.name
        return f"{p.name} {prog[0]}/{prog[1] if prog[1] else '?'}"

    def _on_slow_call(self, ev: SlowCall, source: str) -> None:
        sc = self.slow_calls
        sc.count += 1
        # A code block that calls several tools counts for each: the log cannot say which was slow.
        for name in ev.functions or ("(no call found)",):
            calls = sc.by_function.get(name)
            if calls is None:
                if len(sc.by_function) >= 200:
                    continue
                calls = sc.by_function[name] = FunctionCalls()
            calls.count += 1
            calls.durations.append(ev.duration_s)
            calls.max_s = max(calls.max_s, ev.duration_s)
            calls.last_time = ev.time

    def _on_env(self, ev: RolloutStart | RolloutDone, source: str) -> None:
        self._activity(source)
        env = self.env
        if isinstance(ev, RolloutStart):
            env.started += 1
            if ev.time is not None:
                if len(env.open_starts) > 10_000:
                    env.open_starts.pop(next(iter(env.open_starts)))
                env.open_starts[ev.rollout_id] = ev.time
            return
        env.done += 1
        env.by_stop[ev.stop or "unknown"] += 1
        self.rollouts_since_step.append((ev.error_type, ev.time, ev.stop or "", "env"))
        start = env.open_starts.pop(ev.rollout_id, None)
        if start is None or ev.time is None:
            return
        dur = clock_diff(start, ev.time)
        env.durations.append(dur)
        if dur >= self.slow_calls.threshold_s:
            self.slow_calls.count += 1
            calls = self.slow_calls.by_function.setdefault("rollout", FunctionCalls())
            calls.count += 1
            calls.durations.append(dur)
            calls.max_s = max(calls.max_s, dur)
            calls.last_time = ev.time

    def _on_rollout(self, ev: Rollout, source: str) -> None:
        r = self.rollouts
        r.total += 1
        if not ev.ok:
            r.errored += 1
            r.by_error[ev.error_type or "unknown"] += 1
        if ev.truncated:
            r.truncated += 1
        if ev.empty:
            r.empty += 1
        if ev.stop_condition:
            r.by_stop[ev.stop_condition] += 1
        if ev.reward is not None:
            r.reward_sum += ev.reward
            r.reward_n += 1
            if ev.reward > 0:
                r.positive += 1
        if ev.step is not None:
            r.steps.add(ev.step)
