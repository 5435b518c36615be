"""Frozen, versioned views of a run: what the engine hands the screen.

The engine's `RunState` is written by one thread (the engine's) and must never be read
while it changes. After each bounded slice of reading, the engine publishes a `View`
whose state is a copy nobody writes again; the UI takes the newest one without a lock,
so a key never waits on the disk.

A state is cut into slices (`Slice`), each a fixed set of `RunState` fields. A slice is
copied only when it changed, and an unchanged slice is the previous view's own object
(a run of 100k steps is not copied at every poll: the step history's column blocks are
shared, and the engine copies only a block it writes to after a view was taken). Each slice carries a version that moves
exactly when its content does; a pane declares the slices it reads and repaints when
one of their versions moves (or its size does), with no signature of its own.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtop.rules.health import Verdict
from runtop.state.log_tail import LogTail
from runtop.state.parts import own
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView, View

# Every RunState field belongs to exactly one slice (tests/unit/view/test_publish.py keeps it so).
STATE_SLICES: dict[Slice, tuple[str, ...]] = {
    Slice.RUN: (
        "path", "framework", "layout", "detection", "run_name", "max_steps", "max_steps_source", "attempts", "phases", "pauses_said", "pause", "endpoints",
        "extra_logs", "finished", "processes", "process_denied", "slurm", "ray", "disk", "backfill_error", "first_time", "_plugin_new", "_plugin_reducers",
    ),
    Slice.FILES: ("files",),
    Slice.STEPS: ("steps", "_dirty_steps", "_track_rows", "lost_steps", "steps_version", "trainer_step", "rollout_step", "last_step_time"),
    Slice.ROLLOUTS: (
        "batch", "waiting", "rollouts", "env", "slow_calls", "context_overflows", "plugin", "batch_rollouts",
        "rollouts_since_step", "sample_filter",
    ),
    Slice.CHECKPOINTS: ("checkpoints", "last_save", "_saving", "checkpoint_dir", "checkpoint_dir_source", "ckpt_interval", "keep_last"),
    Slice.ERRORS: ("notes", "errors", "error_count", "warnings", "last_warning", "events", "unrecognised"),
    Slice.INFERENCE: ("vllm", "vllm_source"),
}


# Set once when a reader starts and never written after (the plug-in's factory and
# reducers): referenced, not copied (a copy of a bound method would copy its plug-in).
SHARED_FIELDS = frozenset({"_plugin_new", "_plugin_reducers"})


class Publisher:
    """Turns the engine's live state into frozen copies, sharing what did not change."""

    def __init__(self) -> None:
        self._parts: dict[Slice, dict[str, Any]] = {}
        self._versions: dict[Slice, int] = {s: 0 for s in Slice}
        self._marks: dict[Slice, object] = {}
        self._source: RunState | None = None  # the state last frozen (a backfilled one replaces it)

    def freeze(self, state: RunState) -> RunState:
        """A copy of `state` that the engine will never write (call on the engine's thread)."""
        for part, names in STATE_SLICES.items():
            if part is Slice.STEPS:
                self._steps(state)
            else:
                fresh = {n: getattr(state, n) if n in SHARED_FIELDS else copy.deepcopy(getattr(state, n)) for n in names}
                if self._parts.get(part) != fresh:
                    self._take(part, fresh, None)
        frozen = object.__new__(RunState)
        for fields in self._parts.values():
            for name, value in fields.items():
                object.__setattr__(frozen, name, value)
        return frozen

    def mark(self, part: Slice, content: object) -> None:
        """Move `part`'s version when `content` (anything comparable) differs from last time."""
        if part not in self._marks or self._marks[part] != content:
            self._marks[part] = content
            self._versions[part] += 1

    def view(
        self, state: RunState, system: SystemView, verdict: Verdict, now: float, tail: LogTail, backfill: float,
        *, interval: float, checkpoint_dir: str | None, fills: Mapping[str, Slice] | None = None,
    ) -> View:
        """Everything the screen draws, frozen, with a version per slice (the engine's thread).
        `fills`: the slice each probe on the seam fills, by the probe's name (`runtop.probes.seam`)."""
        frozen = self.freeze(state)
        readings = dict(system.readings)
        seam = [(part, readings.get(name)) for name, part in (fills or {}).items()]
        for part, content in (
            *seam,
            (Slice.PROCESS, readings.get("process")),
            (Slice.DISK, readings.get("disk")),
            (Slice.GPU, readings.get("gpu")),
            (Slice.VLLM, readings.get("vllm")),
            (Slice.SLURM, readings.get("slurm")),
            (Slice.TRAINER, readings.get("trainer")),
            (Slice.VERDICT, (verdict.verdict, tuple(verdict.reasons), tuple(verdict.alerts))),
            (Slice.CLOCK, int(now)),
            (Slice.LOGS, tail.seq),
            (Slice.READING, round(backfill, 2)),
        ):
            self.mark(part, content)
        return View(
            frozen, dataclasses.replace(system, errors=dict(system.errors), readings=readings), verdict, now, interval,
            checkpoint_dir, self.versions(), logs=tail.view(), backfill=backfill,
        )

    def versions(self) -> Mapping[Slice, int]:
        return MappingProxyType(dict(self._versions))

    def _take(self, part: Slice, fields: dict[str, Any], mark: object) -> None:
        self._parts[part] = fields
        self._marks[part] = mark
        self._versions[part] += 1

    def _steps(self, state: RunState) -> None:
        """Step rows: a frozen copy of the history's columns, sharing every block (the history
        copies a block before it next writes to it: `runtop.state.columns`)."""
        if state is self._source and Slice.STEPS in self._parts and self._marks.get(Slice.STEPS) == state.steps_version:
            return
        self._source = state  # another state (the backfilled history took over) is frozen whole, as any
        self._take(Slice.STEPS, {
            "steps": state.steps.frozen(),
            "_dirty_steps": set(),
            "_track_rows": False,
            "lost_steps": copy.copy(state.lost_steps),  # a lost row is never written again
            "steps_version": state.steps_version,
            "trainer_step": state.trainer_step,
            "rollout_step": state.rollout_step,
            "last_step_time": state.last_step_time,
        }, state.steps_version)


def row_copy(row: Any) -> Any:
    """A step row nobody else writes (its dicts copied; the pooled origin dict and the shared
    empty one are never written in place, so they are shared)."""
    return dataclasses.replace(
        row, trainer=own(row.trainer), rollout=own(row.rollout), phases_s=own(row.phases_s), extra=own(row.extra),
    )
