"""The pauses a healthy run makes between two steps, as the detection replay plays them
(`runtop.playback.replay`): a checkpoint save that says it began where its framework says so,
whose files grow while it writes, and an evaluation that prints what its framework prints as it
goes (docs/reading.md, "Stalls, at the run's own pace")."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import random

    from runtop.engine.engine import Engine

@dataclass(frozen=True)
class Habits:
    """The natural pauses of a healthy run."""

    warm_up: tuple[float, float] = (120.0, 600.0)  # seconds the first step takes on top (compilation, weights, warm-up)
    tail_p: float = 0.03  # a step this often takes 2–4× longer (a long generation, a GC pause)
    save_steps: tuple[float, float] = (3.0, 6.0)  # a save lasts this many median steps
    eval_every: int = 40  # an evaluation every this many steps …
    eval_steps: tuple[float, float] = (4.0, 8.0)  # … lasting this many median steps, a bar line every fifth of it
    buffered: bool = False  # the logs arrive in 8 KB blocks


SLICES = 5  # a save's files grow, an evaluation ticks, this many times over its length
SHARD = "shard.writing"  # the file a save grows while it writes (taken away when the save is whole)


class Pauses:
    """Mixed into `Replay`, whose clock, judging and writing these use."""

    if TYPE_CHECKING:
        habits: Habits
        rng: random.Random
        t: float
        _main_log: str | None

        def _wait(self, engine: Engine | None, until: float, tick: float | None, stop_at_down: bool = False) -> None: ...
        def _judge(self, engine: Engine) -> None: ...
        def _touch(self, root: str, dirs: frozenset[str] = frozenset()) -> None: ...
        def _median_gap(self, span: tuple[float, float]) -> float: ...

    def _save(self, engine: Engine, sim: Any, root: str, dirs: frozenset[str], step: int, at: float) -> None:
        """A save of 3-6 median steps: its start said in the framework's words, its directory
        there (or the one it renames into place when whole), a file in it growing a fifth of the
        save at a time; then the action writes the save whole."""
        tops = self._save_begins(sim, root, dirs)
        said = getattr(sim, "saving", None)
        if said is not None:
            said(at, step)
            self._touch(root)
        self._judge(engine)
        length = self._median_gap(self.habits.save_steps)
        top = sorted(d for d in dirs if not any(d != o and d.startswith(o + os.sep) for o in dirs))[0]
        shard = os.path.join(root, sim.saving_dir(top), SHARD)
        for k in range(1, SLICES + 1):
            self._wait(engine, self.t + length / SLICES, None)
            with open(shard, "ab") as f:
                f.truncate(k << 24)  # sparse: its size grows, the disk does not fill
            self._touch(root, frozenset({sim.saving_dir(top)}))
            if k < SLICES:
                self._judge(engine)
        os.remove(shard)
        for d in tops:
            shutil.rmtree(os.path.join(root, d), ignore_errors=True)  # renamed into place: the action writes it whole

    def _save_begins(self, sim: Any, root: str, dirs: frozenset[str]) -> list[str]:
        """The save's directories, made where the framework writes them while not whole (empty:
        what a plug-in reads as a save not yet whole); the tops made elsewhere (renamed into place
        when whole) are returned, to be taken away."""
        tops = sorted(d for d in dirs if not any(d != o and d.startswith(o + os.sep) for o in dirs))
        made = set()
        for d in sorted(dirs):
            top = next(t for t in tops if d == t or d.startswith(t + os.sep))
            made.add(sim.saving_dir(top) + d[len(top):])
        for d in sorted(made):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self._touch(root, frozenset(sim.saving_dir(t) for t in tops))
        return [sim.saving_dir(t) for t in tops if sim.saving_dir(t) != t]

    def _evaluate(self, engine: Engine | None, sim: Any, step: int, at: float) -> None:
        """An evaluation of 4-8 median steps, no step: what the framework prints as it goes (its
        `evaluating`), else a bar redrawn in the main log, a fifth of it at a time."""
        length = self._median_gap(self.habits.eval_steps)
        own = getattr(sim, "evaluating", None)
        for k in range(1, SLICES + 1):
            self._wait(engine, self.t + length / SLICES, None)
            if own is not None:
                own(at + k * length / SLICES, k, SLICES, step)
            elif self._main_log:
                sim._append(self._main_log, f"Evaluating: {k * 20}%|{'█' * (2 * k):<10}| {k * 20}/100 [00:{k:02d}<00:{5 - k:02d}]\n")
            self._touch(sim.root)
            if engine is not None:
                self._judge(engine)
