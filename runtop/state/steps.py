"""The reducers of the step rows: one row per step, each side's numbers in it, which source
wins, the rows an earlier attempt lost, and what is derived from them (the step now, the
median step time, the ETA). `RunState` split by concern; the rows themselves are kept in
columns (`runtop.state.columns`).
"""

from __future__ import annotations

import bisect
import statistics
import sys
from collections import deque
from typing import TYPE_CHECKING

from runtop.parsers.columns import ROLLOUT_OWNED
from runtop.parsers.events import TRAINER, Resumed, StepMetrics
from runtop.parsers.step_batches import StepColumns, events_of_columns
from runtop.state.columns import PHASES, ROLLOUT, Block, StepHistory, set_value, value_at
from runtop.state.columns import TRAINER as TRAINER_SIDE
from runtop.state.parts import ORIGIN_RANK, Attempt, StepRow

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
        steps: StepHistory
        _dirty_steps: set[int]
        _track_rows: bool
        lost_steps: deque[StepRow]
        steps_version: int
        trainer_step: int | None
        rollout_step: int | None
        last_step_time: str | None
        max_steps: int | None
        _saving: dict[str, int]
        waiting: dict[str, str]
        rollouts_since_step: deque[tuple[str | None, str | None, str, str]]

        @property
        def attempt(self) -> int: ...

        def _activity(self, source: str) -> None: ...

    def _supersede_after(self, step: int) -> None:
        keys = self.steps.keys_list()
        for s in keys[bisect.bisect_right(keys, step):]:
            attempt = self.steps.attempt_of(s)
            if attempt is not None and attempt < self.attempt:
                row = self.steps.remove(s)
                if row is not None:
                    row.superseded = True
                    self.lost_steps.append(row)
                if self._track_rows:
                    self._dirty_steps.add(s)
                self.steps_version += 1

    def merge_history(self, rows: list[StepRow]) -> bool:
        """Rows of the run's history read by the backfill while the live tail shows the present:
        placed where their steps go; True when any was new."""
        if not rows:
            return False
        self.steps.place(rows)
        if self._track_rows:
            self._dirty_steps.update(row.step for row in rows)
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
        h = self.steps
        attempt = self.attempt
        blk, i, new = h.slot(ev.step, attempt)
        if self._track_rows:
            self._dirty_steps.add(ev.step)
        if not new and blk.attempts[i] < attempt:
            # A step of an earlier attempt that this attempt redoes: keep the old one visible as lost.
            old = h.row_at(blk, i)
            old.superseded = True
            self.lost_steps.append(old)
            h.restart_row(blk, i, attempt)
        if ev.values:
            side = blk.sides[TRAINER_SIDE if ev.role == TRAINER else ROLLOUT]
            oid = blk.origins[i]
            if oid < 0:
                # A step's first numbers (most of a backfill): nothing to rank them against.
                for name, value in ev.values.items():
                    col = side.get(name)
                    if col is None:
                        col = side[name] = h.new_column()
                    set_value(col, i, value)
                blk.origins[i] = h.origin_id({_key(ev.role, name): ev.origin for name in ev.values})
            else:
                origin = dict(h.origin_dicts[oid])
                for name, value in ev.values.items():
                    key = _key(ev.role, name)
                    old_origin = origin.get(key)
                    if old_origin is not None and ORIGIN_RANK.get(ev.origin, 2) < ORIGIN_RANK.get(old_origin, 2):
                        continue
                    col = side.get(name)
                    if col is None:
                        col = side[name] = h.new_column()
                    set_value(col, i, value)
                    origin[key] = ev.origin
                blk.origins[i] = h.origin_id(origin)
        if ev.phases_s:
            phases = blk.sides[PHASES]
            for name, value in ev.phases_s.items():
                col = phases.get(name)
                if ev.origin == "dump" and value_at(col, i) is not None:
                    continue
                if col is None:
                    col = phases[name] = h.new_column()
                set_value(col, i, value)
        if ev.extra:
            for name, value in ev.extra.items():
                h.put_extra(blk, i, name, value)
        self._after_step(ev.role, ev.step, ev.time if ev.values else None, bool(ev.values))

    def fold_steps(self, cols: StepColumns, source: str) -> None:
        """A batch of one role's steps (`parsers.step_batches`), as its `StepMetrics` one by one
        would fold: new rows after the last are appended column by column, and the last rows
        (the other side's event of the same lines) written column by column where no number of
        this role is there to rank against; any other batch goes through `_on_step`, a step at
        a time."""
        steps = cols.steps
        if not steps:
            return
        h = self.steps
        where = None
        if not h.room_for_extras(cols.extra) or (not h.appends(steps) and (where := self._fillable(cols)) is None):
            for ev in events_of_columns(cols):
                self._on_step(ev, source)
            return
        self._activity(source)
        self.steps_version += len(steps)
        if self._track_rows:
            self._dirty_steps.update(steps)
        side = TRAINER_SIDE if cols.role == TRAINER else ROLLOUT
        if where is not None:
            h.fill(where[0], side, cols.values, cols.phases, cols.extra, where[1])
        else:
            oid = -1
            if cols.values:
                shape = (cols.role, cols.origin, *cols.values)
                oid = h.shapes.get(shape, -1)
                if oid < 0:
                    oid = h.shapes[shape] = h.origin_id({_key(cols.role, name): cols.origin for name in cols.values})
            h.append_rows(steps, self.attempt, side, cols.values, cols.phases, cols.extra, oid)
        values = bool(cols.values)
        time = None
        if values:
            floor = self.current_step() or 0  # steps rise through the batch: each one is the furthest so far
            for step, t in zip(reversed(steps), reversed(cols.times)):
                if step < floor:
                    break
                if t:
                    time = t
                    break
        self._after_step(cols.role, steps[-1], time, values)

    def _fillable(self, cols: StepColumns) -> tuple[list[tuple[Block, int, int]], dict[int, int]] | None:
        """The rows of `cols`' steps, when they are the last rows, of this attempt, and hold no
        number of this role (nothing to rank), with each origin id they have mapped to the one
        it becomes; else None."""
        if cols.origin == "dump" or not all(a < b for a, b in zip(cols.steps, cols.steps[1:])):
            return None
        where = self.steps.tail(cols.steps, self.attempt)
        if where is None:
            return None
        keys = {_key(cols.role, name): cols.origin for name in cols.values}
        origins: dict[int, int] = {}
        if keys:
            h = self.steps
            for blk, start, take in where:
                for oid in set(blk.origins[start : start + take]):
                    if oid in origins:
                        continue
                    old = h.origin_dicts[oid] if oid >= 0 else {}
                    if any(k in old for k in keys):
                        return None
                    origins[oid] = h.origin_id({**old, **keys})
        return where, origins

    def _after_step(self, role: str, step: int, time: str | None, values: bool) -> None:
        """What a step's numbers move beside its row: the step now, its clock, a save behind it."""
        if time and step >= (self.current_step() or 0):
            self.last_step_time = time
        saving = self._saving.get(role)
        if saving is not None and step > saving and values:
            del self._saving[role]  # the save is behind it: a step came after
        if role == TRAINER:
            self.trainer_step = max(self.trainer_step or 0, step)
        else:
            self.rollout_step = max(self.rollout_step or 0, step)
            if values:
                self.rollouts_since_step.clear()  # the batch moved
                self.waiting.pop(role, None)  # the rollout side is not waiting any more

    # ---- derived --------------------------------------------------------
    def step_keys(self) -> list[int]:
        """Step numbers in order (do not mutate)."""
        return self.steps.keys_list()

    def rows(self, last: int | None = None) -> list[StepRow]:
        """The step rows in order; the newest `last` of them when given."""
        return self.steps.rows(last)

    def last_row(self) -> StepRow | None:
        return self.steps.last()

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
        times = [v for _s, v in self.steps.series(TRAINER_SIDE, "step_time_s", window) if v > 0]
        if not times:  # no trainer numbers yet (orchestrator log alone): its clock is the next best
            times = [v for _s, v in self.steps.series(ROLLOUT, "step_time_s", window) if v > 0]
        return statistics.median(times) if times else None

    def value_series(self, name: str, window: int) -> list[tuple[int, float]]:
        """(step, merged value) of a metric over the newest `window` rows of this attempt, as each
        row's `StepRow.value` gives it (the rollout side's for what the rollouts own)."""
        return self.steps.series(ROLLOUT if name in ROLLOUT_OWNED else TRAINER_SIDE, name, window, self.attempt)

    def eta_s(self) -> float | None:
        """Median step time × steps left (trainer steps: those are what finish a run)."""
        if self.max_steps is None:
            return None
        done = self.step
        med = self.median_step_time()
        if done is None or med is None:
            return None
        return max(0, self.max_steps - done) * med

