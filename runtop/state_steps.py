"""The reducers of the step rows: one row per step, each side's numbers in it, which source
wins, the rows an earlier attempt lost, and what is derived from them (the step now, the
median step time, the ETA). `RunState` split by concern.
"""

from __future__ import annotations

import bisect
import statistics
import sys
from collections import deque
from typing import TYPE_CHECKING, Any

from runtop.parsers.events import TRAINER, Resumed, StepMetrics
from runtop.state_parts import ORIGIN_RANK, UNWRITTEN, Attempt, StepRow

# Distinct origin and extra dicts pooled (a run has a handful; past this each row keeps its own).
MAX_SHARED_DICTS = 256


_KEYS: dict[tuple[str, str], str] = {}


def _key(role: str, name: str) -> str:
    """`role.name`, one string per pair: a run of 100k steps shares one copy of each key."""
    key = _KEYS.get((role, name))
    if key is None:
        key = sys.intern(f"{role}.{name}")
        if len(_KEYS) < 4096:
            _KEYS[(role, name)] = key
    return key


class StepReducers:
    """Mixed into `RunState`, whose dataclass fields these are."""

    if TYPE_CHECKING:
        attempts: list[Attempt]
        steps: dict[int, StepRow]
        _step_keys: list[int]
        _dirty_steps: set[int]
        _track_rows: bool
        lost_steps: deque[StepRow]
        steps_version: int
        trainer_step: int | None
        rollout_step: int | None
        last_step_time: str | None
        max_steps: int | None
        _saving: dict[str, int]
        _shared_dicts: dict[tuple[tuple[str, Any], ...], dict[str, Any]]
        waiting: dict[str, str]
        rollouts_since_step: deque[tuple[str | None, str | None, str, str]]

        @property
        def attempt(self) -> int: ...

        def _activity(self, source: str) -> None: ...

    def _fresh_origin(self, ev: StepMetrics) -> dict[str, str]:
        """The pooled origin dict of a row whose only numbers are `ev`'s."""
        return self._pooled({_key(ev.role, name): ev.origin for name in ev.values})

    def _pooled(self, mapping: dict[str, Any]) -> dict[str, Any]:
        """One shared dict per content (almost every row of a run has the same sources, and
        often the same extras): a row's own were 350 bytes each of a week-long run's 200k rows.
        Shared dicts are never written in place: the writer copies first."""
        pool = self._shared_dicts
        if 0.0 in mapping.values():
            return mapping  # 0.0 == -0.0: a row's -0.0 must not read 0.0 from another's dict
        key = tuple(mapping.items())
        shared = pool.get(key)
        if shared is not None:
            return shared
        if len(pool) < MAX_SHARED_DICTS:
            pool[key] = mapping
        return mapping

    def _supersede_after(self, step: int) -> None:
        for s in [k for k in self._step_keys if k > step]:
            row = self.steps[s]
            if row.attempt < self.attempt:
                row.superseded = True
                self.lost_steps.append(self.steps.pop(s))
                self._step_keys.remove(s)
                if self._track_rows:
                    self._dirty_steps.add(s)
                self.steps_version += 1

    def _row(self, step: int) -> StepRow:
        """The row of `step`, to be written (so it is marked for the next published view)."""
        if self._track_rows:
            self._dirty_steps.add(step)
        row = self.steps.get(step)
        if row is not None and row.attempt < self.attempt:
            # A step of an earlier attempt that this attempt redoes: keep the old one visible as lost.
            row.superseded = True
            self.lost_steps.append(row)
            row = None
        if row is None:
            row = StepRow(step, self.attempt)
            if step not in self.steps:
                bisect.insort(self._step_keys, step)
            self.steps[step] = row
        return row

    def merge_history(self, rows: list[StepRow]) -> bool:
        """Rows of the run's history read by the backfill while the live tail shows the present:
        placed where their steps go; True when any was new."""
        if not rows:
            return False
        for row in rows:
            if row.step not in self.steps:
                bisect.insort(self._step_keys, row.step)
            self.steps[row.step] = row
            if self._track_rows:
                self._dirty_steps.add(row.step)
        self.steps_version += 1
        return True

    def _on_resumed(self, ev: Resumed, source: str) -> None:
        # Attempts are opened by what marks a relaunch (a new attempt dir, a replaced
        # log, metrics.jsonl going back), never by this line alone: metrics.jsonl is
        # read first and may already have opened the attempt this line belongs to.
        self.attempts[-1].resumed_from = ev.step
        self._supersede_after(ev.step)

    def _on_step(self, ev: StepMetrics, source: str) -> None:
        self._activity(source)
        self.steps_version += 1
        row = self._row(ev.step)
        if ev.values:
            target = row.trainer if ev.role == TRAINER else row.rollout
            if target is UNWRITTEN:
                target = {}
                if ev.role == TRAINER:
                    row.trainer = target
                else:
                    row.rollout = target
            if not target and row.origin is UNWRITTEN:
                # A step's first numbers (most of a backfill): nothing to rank them against.
                target.update(ev.values)
                row.origin = self._fresh_origin(ev)
            else:
                origin = dict(row.origin)
                for name, value in ev.values.items():
                    key = _key(ev.role, name)
                    old = origin.get(key)
                    if old is not None and ORIGIN_RANK.get(ev.origin, 2) < ORIGIN_RANK.get(old, 2):
                        continue
                    target[name] = value
                    origin[key] = ev.origin
                row.origin = self._pooled(origin)
        if ev.phases_s:
            phases = dict(row.phases_s)
            for name, value in ev.phases_s.items():
                if ev.origin == "dump" and name in phases:
                    continue
                phases[name] = value
            row.phases_s = phases
        if ev.extra:
            row.extra = self._pooled({**row.extra, **ev.extra})
        if ev.time and ev.values and ev.step >= (self.current_step() or 0):
            self.last_step_time = ev.time
        saving = self._saving.get(ev.role)
        if saving is not None and ev.step > saving and ev.values:
            del self._saving[ev.role]  # the save is behind it: a step came after
        if ev.role == TRAINER:
            self.trainer_step = max(self.trainer_step or 0, ev.step)
        else:
            self.rollout_step = max(self.rollout_step or 0, ev.step)
            if ev.values:
                self.rollouts_since_step.clear()  # the batch moved
                self.waiting.pop(ev.role, None)  # the rollout side is not waiting any more

    # ---- derived --------------------------------------------------------
    def step_keys(self) -> list[int]:
        """Step numbers in order (do not mutate)."""
        return self._step_keys

    def rows(self, last: int | None = None) -> list[StepRow]:
        """The step rows in order; the newest `last` of them when given."""
        keys = self._step_keys if last is None else self._step_keys[-last:]
        return [self.steps[k] for k in keys]

    def last_row(self) -> StepRow | None:
        return self.steps[self._step_keys[-1]] if self._step_keys else None

    def current_step(self) -> int | None:
        """The furthest step any role reached (whether the run has stepped at all); faces say `step`."""
        steps = [s for s in (self.trainer_step, self.rollout_step) if s is not None]
        return max(steps) if steps else None

    @property
    def step(self) -> int | None:
        """The run's step as every face says it: the trainer's (its steps are what finish a run),
        else the rollouts' (docs/reading.md, "One step, one clock")."""
        return self.trainer_step if self.trainer_step is not None else self.rollout_step

    def step_text(self) -> str:
        """`step 5/20`, or `trainer 5/20 · rollouts 6` where the rollouts run ahead of (or behind)
        the trainer, as an async run's do: which step is meant is said, never guessed."""
        of = f"/{self.max_steps}" if self.max_steps else ""
        t, r = self.trainer_step, self.rollout_step
        if t is not None and r is not None and r != t:
            return f"trainer {t}{of} · rollouts {r}"
        step = self.step
        return f"step {step if step is not None else '-'}{of}"

    def median_step_time(self, window: int = 20) -> float | None:
        rows = [self.steps[s] for s in self.step_keys()[-window:]]
        times = [v for r in rows if (v := r.trainer.get("step_time_s")) is not None and v > 0]
        if not times:  # no trainer numbers yet (orchestrator log alone): its clock is the next best
            times = [v for r in rows if (v := r.rollout.get("step_time_s")) is not None and v > 0]
        return statistics.median(times) if times else None

    def eta_s(self) -> float | None:
        """Median step time × steps left (trainer steps: those are what finish a run)."""
        if self.max_steps is None:
            return None
        done = self.step
        med = self.median_step_time()
        if done is None or med is None:
            return None
        return max(0, self.max_steps - done) * med

