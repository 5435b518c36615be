"""SkyRL driver logs (skyrl-train, skyrl-agent, on Ray) → events.

One driver log interleaves the output of many Ray processes (docs/formats.md, SkyRL):
loguru records from the entrypoint, bare `print`s from the agent (`ft_reward: 1.0`),
tqdm frames, Ray's own lines, shell-trace lines and crash dumps. Two pieces:

- `header(line, pending)` decides which physical lines start a record (the shared
  `RecordAssembler` calls it). Continuation lines carry their header's Ray prefix,
  so a line from another process starts a record of its own.
- `SkyrlParser` turns records into the same events prime-rl's parser emits. It is
  the one stateful parser: a SkyRL step's numbers arrive over many records before
  and after the line that names the step (`global_step: N`), so it remembers the
  step in progress. It does no I/O and never raises.

Until a step finishes, its numbers travel with the generator's role
(`GENERATOR`, whose step counter means "rollouts done"); `Finished: 'step'` and
the status dict move the trainer's counter.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from . import vllm
from .events import (
    GENERATOR,
    TRAINER,
    AgentReward,
    BatchProgress,
    Event,
    MaxSteps,
    Phase,
    RoleFinished,
    StepMetrics,
    Trajectory,
    Unparsed,
)
from .numbers import strict_float
from .records import Record
from .skyrl_agent import launch_config
from .skyrl_lifecycle import SkyrlLifecycle
from .skyrl_numbers import _kv_numbers, _literal_dict, dump_numbers, global_step_of, policy_progress, rollout_means, status_numbers

TIMER_RE = re.compile(r"(Started|Finished): '([\w.\-/ ]+)'(?:, time cost: ([\d.]+)s)?", re.ASCII)
GLOBAL_STEP_RE = re.compile(r"global_step: (\d+)\s*$", re.ASCII)
REWARD_LINE_RE = re.compile(r"(ft|gt|rubric|total)_reward: ([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan)", re.ASCII)
RUBRIC_RE = re.compile(r"Rubric evaluation complete for instance (\S+?):?\s+(.*)", re.ASCII)
STEP_DUMP_RE = re.compile(r"Step (\d+):\s*(\{.*)?$", re.S | re.ASCII)
BATCHES_RE = re.compile(r"Training Batches Processed:.{0,200}?(?<!\d)(\d{1,12})/(\d{1,12})", re.ASCII)

class SkyrlParser(SkyrlLifecycle):
    """Records of one SkyRL driver log → events. One per file; reset it when the file restarts."""

    MAX_PENDING = 64

    def __init__(self, batch_rollouts: int | None = None) -> None:
        self.step: int | None = None  # the step whose rollouts are done (`global_step: N`)
        self.next_step: int | None = None
        self.batch_rollouts = batch_rollouts
        self._pending: list[tuple[str, dict[str, float], dict[str, float], dict[str, float], str]] = []  # numbers waiting for a step number
        self._phases_seen: set[str] = set()
        self._dump_step: int | None = None
        self._batch: Counter[str] = Counter()  # this batch's trajectories and passes
        self.last_time: str | None = None

    # ---- step bookkeeping -------------------------------------------------
    def _emit(self, out: list[Event], role: str, values: dict[str, float], *, phases: dict[str, float] | None = None,
              extra: dict[str, float] | None = None,
              origin: str = "log", time: str | None = None, step: int | None = None) -> None:
        step = step if step is not None else self.step
        if not (values or phases or extra):
            return  # nothing to say (an empty entry held back would only take a pending slot)
        if step is None:
            if len(self._pending) < self.MAX_PENDING:
                self._pending.append((role, values, phases or {}, extra or {}, origin))
            return
        out.append(StepMetrics(role, step, values, phases or {}, origin, time, extra or {}))

    def _set_step(self, out: list[Event], step: int, time: str | None) -> None:
        self.step = step
        pending, self._pending = self._pending, []
        for role, values, phases, extra, origin in pending:
            self._emit(out, role, values, phases=phases, extra=extra, origin=origin, time=time)

    # ---- records ----------------------------------------------------------
    def parse(self, records: list[Record], role: str = TRAINER) -> list[Event]:
        out: list[Event] = []
        for rec in records:
            try:
                if rec.fmt in ("vllm", "uvicorn"):
                    out.extend(vllm.parse_record(rec))
                    continue
                self._record(rec, out)
            except Exception as e:  # noqa: BLE001 - a garbled record is counted and named, the rest is read
                out.append(Unparsed(rec.line, f"{type(e).__name__}: {str(e)[:120]}"))
        return out

    def _record(self, rec: Record, out: list[Event]) -> None:
        msg = rec.message.strip()
        # Bare prints and crash dumps carry no time: they get the last one the log gave.
        if rec.time:
            self.last_time = rec.time
        t = rec.time or self.last_time
        fmt = rec.fmt
        if fmt == "shell":
            ev = launch_config(msg)
            if ev is not None:
                out.append(ev)
                if ev.batch_rollouts:
                    self.batch_rollouts = ev.batch_rollouts
            return
        lines = rec.lines()
        if msg.startswith(("Started: '", "Finished: '")):
            self._timer(msg, t, out)
        elif msg.startswith("global_step: "):
            m = GLOBAL_STEP_RE.match(msg)
            if m:
                self._rollouts_done(int(m.group(1)), t, out)
        elif msg.startswith(("ft_reward", "gt_reward", "rubric_reward", "total_reward")):
            m = REWARD_LINE_RE.match(msg)
            if m:
                out.append(AgentReward(m.group(1), float(m.group(2))))
        elif msg.startswith("Rubric evaluation complete"):
            self._trajectory(msg, t, out)
        elif msg.startswith("{"):
            self._dict(msg, t, out, self._dump_step)
            self._dump_step = None
        elif msg.startswith("Step ") and (dump := STEP_DUMP_RE.match(msg)) is not None:
            m = dump
            step = int(m.group(1))
            self._late_step(step, t, out)
            if m.group(2):
                self._dict(m.group(2), t, out, step)
            elif lines and lines[0].lstrip().startswith("{"):
                self._dict(lines[0], t, out, step)
            else:
                self._dump_step = step
        elif msg.startswith("Policy Train epoch"):
            self._policy_tqdm(msg, t, out)
        elif msg.startswith("Training Batches Processed"):
            m = BATCHES_RE.search(msg)
            if m:
                out.append(MaxSteps(int(m.group(2)), "log"))
                done = int(m.group(1))
                if done:  # read from a log's tail, this may be the first step number seen
                    self._late_step(done, t, out)
                    out.append(StepMetrics(TRAINER, done, {}, {}, "log", t))
                if done and done == int(m.group(2)):
                    out.append(RoleFinished(TRAINER, t))  # the last batch: the run ended normally
        elif msg.startswith(("reward/", "avg_final_rewards")):
            self._rollout_means(msg, t, out)
        elif fmt == "wrapper" or msg.startswith(("Attempt #", "Training exited with code")):
            self._wrapper(msg, t, out)
        else:
            self._message(rec, msg, lines, t, out)
            return
        if lines:
            # A process that dies mid-phase prints its dump under the last record it wrote.
            self._crash_in_lines(rec, lines, t, out)

    def _timer(self, msg: str, t: str | None, out: list[Event]) -> None:
        m = TIMER_RE.match(msg)
        if not m:
            return
        name = m.group(2)
        if m.group(1) == "Started":
            if name == "step":
                if self.step is not None:
                    self.next_step = self.step + 1
                self.step = None
                self._pending.clear()
                self._phases_seen.clear()
            elif name == "generate":
                self._batch.clear()
                if self.batch_rollouts:
                    out.append(BatchProgress(0, self.batch_rollouts, None, None, t))
            out.append(Phase(name, True, t))
            return
        dur = strict_float(m.group(3))
        out.append(Phase(name, False, t, dur))
        if dur is None:
            return
        if name == "step":
            # The step is done: its time and phases are the trainer's from here on.
            step = self.step if self.step is not None else self.next_step
            if step is not None:
                self._set_step(out, step, t)
                out.append(StepMetrics(TRAINER, step, {"step_time_s": dur}, {}, "log", t))
            else:
                # Upstream SkyRL need not print `global_step: N`: the status dict, the `Step N:`
                # dump or the batch bar that follow name the step; keep the time until then.
                self._emit(out, TRAINER, {"step_time_s": dur}, time=t)
            return
        self._phases_seen.add(name)
        self._emit(out, GENERATOR, {}, phases={name: dur}, time=t)

    def _rollouts_done(self, step: int, t: str | None, out: list[Event]) -> None:
        b = self._batch
        extra: dict[str, float] = {}
        if b["trajectories"]:
            extra["trajectories"] = float(b["trajectories"])
        for kind in ("ft", "gt"):
            if b[f"{kind}_n"]:
                extra[f"{kind}_pass_rate"] = b[f"{kind}_pass"] / b[f"{kind}_n"]
        self._set_step(out, step, t)
        out.append(StepMetrics(GENERATOR, step, {}, {}, "log", t, extra))

    def _trajectory(self, msg: str, t: str | None, out: list[Event]) -> None:
        m = RUBRIC_RE.match(msg)
        if not m:
            return
        rewards = {k: v for k, v in _kv_numbers(m.group(2)).items() if k in ("total", "gt", "rubric", "ft")}
        out.append(Trajectory(m.group(1).rstrip(":"), rewards, t))
        b = self._batch
        b["trajectories"] += 1
        for kind in ("ft", "gt"):
            if kind in rewards:
                b[f"{kind}_n"] += 1
                b[f"{kind}_pass"] += rewards[kind] > 0
        out.append(BatchProgress(b["trajectories"], self.batch_rollouts, None, None, t))

    def _late_step(self, step: int, t: str | None, out: list[Event]) -> None:
        """A step number learnt after the step's numbers (no `global_step: N` line)."""
        if self.step is None:
            self._set_step(out, step, t)

    def _dict(self, text: str, t: str | None, out: list[Event], dump_step: int | None) -> None:
        d = _literal_dict(text)
        if not d:
            return
        gs = global_step_of(d)
        if gs is not None:
            self._late_step(gs, t, out)
        if dump_step is not None or any(isinstance(v, str) for v in d.values()):
            self._dump(d, t, out, dump_step)
            return
        values, extra = status_numbers(d)
        if not values:
            return  # some other dict (sampling params, a config): not the status line
        self._emit(out, TRAINER, values, extra=extra, origin="status", time=t)

    def _dump(self, d: dict[Any, Any], t: str | None, out: list[Event], step: int | None) -> None:
        """The `Step N:` dump: 4-decimal strings, used only where nothing better exists."""
        trainer, orch, phases, extra = dump_numbers(d, self._phases_seen)
        self._emit(out, GENERATOR, orch, phases=phases, origin="dump", time=t, step=step)
        self._emit(out, TRAINER, trainer, extra=extra, origin="dump", time=t, step=step)

    def _policy_tqdm(self, msg: str, t: str | None, out: list[Event]) -> None:
        progress = policy_progress(msg)
        if progress is None:
            return
        (done, total), extra = progress
        out.append(Phase("policy_train", True, t, progress=(done, total)))
        if extra:
            self._emit(out, TRAINER, {}, extra=extra, time=t)

    def _rollout_means(self, msg: str, t: str | None, out: list[Event]) -> None:
        values, extra = rollout_means(msg)
        self._emit(out, GENERATOR, values, extra=extra, time=t)
