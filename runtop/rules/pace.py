"""The run's own pace: how long it goes between two signs of progress, learned as it runs, and
what "no progress for too long" means for it (docs/reading.md, "Stalls, at the run's own pace").

Progress is a step further than any role had reached, a checkpoint completed, or a new
attempt. Each gap between two of them is measured when runtop saw it (a log written in bursts
shows its bursts, a save its length); a run first seen part-way is measured by the step times it
reported itself. The limit is twice the 99th percentile of the recent gaps, never under a minute;
a save in progress or due, a pause that recurs at this step of a cadence (an evaluation every 50
steps), an attempt's first steps (compilation, warm-up) and a log written in 8 KB blocks each get
the allowance their own history earned.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from runtop.config import Thresholds
from runtop.state.parts import SAVING
from runtop.state.run import RunState
from runtop.units import duration

# Gaps kept: hours of a fast run, days of a slow one. Their p99 is their sixth longest: a tail of
# 3 % slow steps is in it unless fewer than six came in 500 (three in a thousand windows); of 200,
# the third longest, fewer than three slow steps came in one window in sixteen, and a slow step
# was then a false alarm.
WINDOW = 500
MIN_GAPS = 5  # gaps of this attempt before its pace is trusted (the first steps compile and warm up)
P99_FACTOR = 2.0
FLOOR_S = 60.0  # never "stalled" sooner: one slow request, one GC pause
LONG = 2.0  # a gap this many times the median is a pause of the run's (a save, an evaluation)
# Fewer gaps than this and their p99 is one of their few longest: it says little yet of the run's
# tail, so the limit is at least TAIL median gaps (a heavy tail's slow step is 2-4 times the median).
TAIL_GAPS = 300
TAIL = 5.0
CADENCES = 16  # recurring pauses remembered
CADENCE_HITS = 4  # a cadence is four pauses at most of its due steps (three: a heavy tail's slow steps and an evaluation line up)


@dataclass(frozen=True)
class Limit:
    seconds: float  # in the run's own seconds
    why: str  # `3.1× its p99 gap (42s)`-style basis, said beside the stall
    p99: float | None  # the p99 gap the limit came from, None while the pace is not known yet


@dataclass(frozen=True)
class PaceView:
    """What the stall rule reads: when the run last progressed and what its gaps have been."""

    last_progress: float | None  # wall time runtop saw the newest progress (at first look: its line's write)
    step: int | None  # the step then
    gaps: tuple[float, ...]  # wall seconds between progress marks, this attempt's warm-up left out
    attempt_gaps: int  # gaps seen in the current attempt
    saves: tuple[float, ...]  # gaps during which a checkpoint completed
    pauses: tuple[tuple[int, int, float], ...]  # (period in steps, residue, longest gap) of recurring pauses
    reported: tuple[float, ...]  # the step times the run reported itself (a run first seen part-way)
    block_wait: float | None = None  # wall seconds a block-buffered log takes to fill its next block
    last_alive: float | None = None  # the newest progress or announced pause (an evaluation's tick, a save's bytes)
    pause: str | None = None  # what that pause was, while it is newer than the last progress

    def _sample(self, scale: float) -> list[float]:
        """The gaps in the run's own seconds: those seen, else the step times it reported."""
        return sorted(g * scale for g in self.gaps) if len(self.gaps) >= MIN_GAPS else sorted(self.reported)

    def p99(self, scale: float = 1.0) -> float | None:
        """The 99th percentile gap, in the run's seconds; None with fewer than MIN_GAPS."""
        ordered = self._sample(scale)
        if len(ordered) < MIN_GAPS:
            return None
        return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]

    def median(self, scale: float = 1.0) -> float | None:
        ordered = self._sample(scale) or sorted(g * scale for g in self.gaps)  # its first steps: the few seen
        return ordered[len(ordered) // 2] if ordered else None

    def known(self) -> int:
        """How many gaps the pace stands on."""
        return len(self.gaps) if len(self.gaps) >= MIN_GAPS else len(self.reported)

    def limit(self, state: RunState, cfg: Thresholds) -> Limit:
        """How long, in the run's seconds, no progress is still the run's own pace."""
        scale = cfg.time_scale
        p99 = self.p99(scale)
        med = self.median(scale)
        if p99 is None or (self.attempt_gaps < MIN_GAPS and not self.reported):
            # Its first steps: compilation, warm-up, the first rollouts. The fixed limit holds, or
            # twice the longest step seen yet where steps are longer (a 12-minute step is no stall).
            longest = max(self.gaps, default=0.0) * scale
            fixed = max(cfg.stall_min_s, max(cfg.stall_k, TAIL) * med if med else 0.0, P99_FACTOR * longest)
            return Limit(fixed, "its first steps", None)
        seconds, why = max(P99_FACTOR * p99, FLOOR_S), f"{P99_FACTOR:g}× its p99 step gap ({duration(p99)})"
        if seconds == FLOOR_S:
            why = f"the {duration(FLOOR_S)} floor (p99 step gap {duration(p99)})"
        if med and self.known() < TAIL_GAPS and TAIL * med > seconds:
            seconds, why = TAIL * med, f"{TAIL:g}× its median step gap ({duration(med)}) until {TAIL_GAPS} steps show its tail"
        if self.attempt_gaps < MIN_GAPS:
            seconds, why = max(seconds, cfg.stall_min_s), "a restart's first steps"
        if saving(state):
            allowance = P99_FACTOR * max(self.saves) * scale if self.saves else cfg.stall_min_s
            if allowance > seconds:
                seconds, why = allowance, "a checkpoint save is due" + (f", saves took up to {duration(max(self.saves) * scale)}" if self.saves else "")
        step = state.current_step()
        for period, residue, gap in self.pauses:
            if step is not None and step % period == residue and P99_FACTOR * gap * scale > seconds:
                seconds, why = P99_FACTOR * gap * scale, f"it pauses every {period} steps, up to {duration(gap * scale)}"
        return Limit(seconds, why, p99)


def saving(state: RunState) -> bool:
    """A save said to be under way, or due at this step by the run's cadence (its config's, else
    the spacing of its last saves) and not done yet."""
    for said in state._saving.values():
        announced = state.checkpoints.get(said)
        if announced is None or not announced.complete:
            return True  # said to be saving, and that save is not whole yet
    top = state.trainer_step or 0
    if any(not c.complete and c.step >= top for c in state.checkpoints.values()):
        return True  # a save at this step is being written (a crashed save leaves one: its allowance is bounded)
    step, every = state.trainer_step, state.ckpt_interval or save_spacing(state)
    if not step or not every or step % every:
        return False
    done = state.checkpoints.get(step)
    return done is None or not done.complete


def save_spacing(state: RunState) -> int | None:
    """The steps between the last three complete saves, when they agree."""
    done = sorted(k for k, c in state.checkpoints.items() if c.complete)[-3:]
    steps = {b - a for a, b in zip(done, done[1:])}
    return steps.pop() if len(done) == 3 and len(steps) == 1 and min(done) > 0 else None


def progress_key(state: RunState) -> tuple[object, ...]:
    """What moves when the run progresses: its attempt, the furthest step any role reached (an
    async run's two roles step in turn: one gap a step, not two half ones), its whole saves."""
    complete = sum(1 for c in state.checkpoints.values() if c.complete)
    return (state.attempt, state.current_step(), complete)


def pause_key(state: RunState) -> tuple[int, int]:
    """What moves while the run pauses between two steps: the pauses it said (an evaluation's
    start, ticks and end; a save's start), and the bytes of its saves not whole yet (a save's
    files grow as it writes them)."""
    writing = sum(c.bytes for c in state.checkpoints.values() if not c.complete)
    return (state.pauses_said, writing)


BLOCK = 4096  # a block-buffered writer's file grows in multiples of this (Python's are 8192)
BUFFER = 8192


@dataclass
class Growth:
    """How a log's file grows: from when runtop first saw it, and whether its growths were whole
    blocks (a `python train.py > log` without `-u` writes 8 KB at a time)."""

    since: float
    first: int
    size: int
    last: float
    blocks: deque[bool]
    steps: int = 0  # the run's steps when runtop first saw it

    def buffered(self) -> bool:
        """Seen at a whole block each time it was looked at: at first sight (a line-written log ends
        on a block one time in 4096, and its next growth says so) and after each growth since."""
        return bool(self.blocks) and all(self.blocks)

    def fill_s(self, step_s: float | None) -> float | None:
        """Seconds to fill the next block: at its byte rate once it grew while watched; before, at
        first sight, from the run's steps it holds and the run's step time (the bytes of a step)."""
        if not self.buffered():
            return None
        if self.last > self.since and self.size > self.first:
            return BUFFER / ((self.size - self.first) / (self.last - self.since))
        return BUFFER / self.first * self.steps * step_s if self.steps and step_s and self.first else None


class Pace:
    """Kept by the engine: told after every read, it notes each progress and the gap before it."""

    def __init__(self) -> None:
        self._growth: dict[str, Growth] = {}
        self._key: tuple[object, ...] | None = None
        self._at: float | None = None
        self._step: int | None = None
        self._gaps: deque[float] = deque(maxlen=WINDOW)
        self._saves: deque[float] = deque(maxlen=32)
        self._attempt_gaps = 0
        self._long: deque[tuple[int, float]] = deque(maxlen=64)  # (step the run sat on through it, gap)
        self._reported: tuple[float, ...] = ()
        self._cadences: tuple[tuple[int, int, float], ...] = ()
        self._mark: tuple[int, int] | None = None
        self._alive: float | None = None
        self._paused = False  # a pause said since the last progress
        self._pause: str | None = None

    def observe(self, state: RunState, now: float) -> None:
        self._watch_writes(state, now)
        mark = pause_key(state)
        paused = self._paused  # said before this read: the gap that ends now is the pause's
        if mark != self._mark:
            if self._mark is not None and self._key is not None:
                # Alive between two steps: an evaluation's tick, a save said or its files growing.
                self._alive, self._paused = now, True
                self._pause = state.pause or (SAVING if mark[1] != self._mark[1] else self._pause)
            self._mark = mark
        key = progress_key(state)
        if key == self._key:
            return
        newest = max(state.write_times(), default=None)
        if newest is None:
            return
        at = now  # when runtop saw it: a save's end writes no log, a block-buffered log arrives late
        first = self._key is None
        if first:
            at = min(now, newest)
            # Seen part-way: the last step came when its line was written, not when runtop looked.
            at = min(at, _last_step_wall(state, newest))
            self._reported = _reported_step_times(state)
            # Seen part-way, its attempt is as far along as the steps it logged since it began.
            resumed = state.attempts[-1].resumed_from or 0
            self._attempt_gaps = max(0, (state.current_step() or 0) - resumed - 1)
        elif self._at is not None:
            gap = max(0.0, at - self._at)
            new_attempt = key[0] != self._key[0] if self._key else False
            if new_attempt:
                self._attempt_gaps = 0
            elif self._attempt_gaps == 0:
                self._attempt_gaps = 1  # the attempt's first step (compilation, warm-up): not its pace
            else:
                self._attempt_gaps += 1
                saved = self._key is not None and key[2] != self._key[2]
                sat = self._step  # the step the run sat on through the gap
                if saved:
                    self._saves.append(gap)
                elif paused:
                    pass  # it said it paused (an evaluation): the gap is the pause's, not a step's
                elif not self._recurring(sat):
                    self._gaps.append(gap)  # a step's own time; a pause it keeps having is its cadence's
                    # Steps that arrived together (a log written in blocks) waited nothing after the first.
                    burst = min(WINDOW, max(0, (state.current_step() or 0) - (sat or 0) - 1))
                    self._gaps.extend([0.0] * burst)
                    self._attempt_gaps += burst
                self._note_long(sat, gap)
        self._key, self._at, self._step = key, at, state.current_step()
        self._alive, self._paused, self._pause = at, False, None

    def _recurring(self, step: int | None) -> bool:
        return step is not None and any(step % period == residue for period, residue, _ in self._cadences)

    def _note_long(self, step: int | None, gap: float) -> None:
        if step is None or len(self._gaps) < MIN_GAPS:
            return
        med = sorted(self._gaps)[len(self._gaps) // 2]
        if med > 0 and gap >= LONG * med:
            self._long.append((step, gap))
            self._cadences = _cadences(list(self._long), step)  # only when a pause is added: pairs cost

    def _watch_writes(self, state: RunState, now: float) -> None:
        for f in state.files.values():
            if f.kind != "log":
                continue
            g = self._growth.get(f.path)
            if g is None or f.size < g.size:  # new, or truncated/replaced: measured afresh
                self._growth[f.path] = Growth(now, f.size, f.size, now, deque([f.size % BLOCK == 0] if f.size else [], maxlen=3),
                                              state.current_step() or 0)
            elif f.size > g.size:
                g.blocks.append((f.size - g.size) % BLOCK == 0)
                g.size, g.last = f.size, now

    def block_wait(self) -> float | None:
        """The longest a block-buffered log of the run takes to write its next block: the silence
        its steps may keep."""
        gaps = list(self._reported) or [g for g in self._gaps if g > 0]  # a step's own time, else a burst's
        step_s = sorted(gaps)[len(gaps) // 2] if gaps else None
        fills = [w for g in self._growth.values() if (w := g.fill_s(step_s)) is not None]
        return max(fills) if fills else None

    @staticmethod
    def once(state: RunState, now: float) -> PaceView:
        """The pace of a run looked at once (a headless check): from the step times it logged."""
        pace = Pace()
        pace.observe(state, now)
        return pace.view()

    def view(self) -> PaceView:
        return PaceView(self._at, self._step, tuple(self._gaps), self._attempt_gaps, tuple(self._saves),
                        self._cadences, self._reported, self.block_wait(), self._alive, self._pause if self._paused else None)


def _cadences(long: list[tuple[int, float]], last: int) -> tuple[tuple[int, int, float], ...]:
    """Pauses that keep coming back at the same step of a period (an evaluation every 50 steps,
    a save every 100): the period, the step residue the run sits on through the pause, the
    longest such pause. A cadence needs four pauses and three quarters of its due steps to have
    paused, so a heavy tail's random slow steps do not make one."""
    at = {s: g for s, g in long}
    out: list[tuple[int, int, float]] = []
    steps = sorted(at)
    for i, a in enumerate(steps):
        for b in steps[i + 1:]:
            period = b - a
            if period < 4 or any(period % p == 0 and a % p == r for p, r, _ in out):
                continue
            due = range(a, last + 1, period)
            hits = [at[s] for s in due if s in at]
            if len(hits) >= CADENCE_HITS and len(hits) * 4 >= len(due) * 3:
                out.append((period, a % period, max(hits)))
    return tuple(sorted(out)[:CADENCES])


def _last_step_wall(state: RunState, newest: float) -> float:
    """The newest step's wall time: the newest write less how far the logs' clock went on after it."""
    from runtop.state.parts import clock_diff

    newest_log = max((f.last_time for f in state.files.values() if f.kind == "log" and f.last_time), default=None)
    if state.last_step_time and newest_log:
        return newest - max(0.0, clock_diff(state.last_step_time, newest_log))
    return newest


def _reported_step_times(state: RunState) -> tuple[float, ...]:
    rows = [state.steps[k] for k in state.step_keys()[-WINDOW:]]
    return tuple(v for r in rows if (v := r.trainer.get("step_time_s") or r.rollout.get("step_time_s")) and v > 0)
