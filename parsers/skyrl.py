"""SkyRL driver logs (skyrl-train, skyrl-agent, on Ray) → events.

One driver log interleaves the output of many Ray processes (FORMATS.md, SkyRL):
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

import posixpath
import re
from collections import Counter
from dataclasses import replace
from typing import Any

from . import vllm
from .crashes import crash_signature, error_notice, has_traceback
from .events import (
    GENERATOR,
    INFERENCE,
    LAUNCHER,
    TRAINER,
    AgentReward,
    AttemptStart,
    BatchProgress,
    CheckpointDir,
    CheckpointSave,
    Event,
    ExtraLog,
    Kind,
    MaxSteps,
    Notice,
    Phase,
    Resumed,
    RoleFinished,
    StepMetrics,
    Trajectory,
    Unparsed,
)
from .numbers import strict_float
from .records import Record
from .skyrl_agent import _is_agent_traceback, agent_events, agent_traceback, launch_config
from .skyrl_numbers import ORCH_KEYS, _kv_numbers, _literal_dict, dump_numbers, global_step_of, status_numbers
from .skyrl_records import _proc_role

TIMER_RE = re.compile(r"(Started|Finished): '([\w.\-/ ]+)'(?:, time cost: ([\d.]+)s)?", re.ASCII)
GLOBAL_STEP_RE = re.compile(r"global_step: (\d+)\s*$", re.ASCII)
REWARD_LINE_RE = re.compile(r"(ft|gt|rubric|total)_reward: ([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan)", re.ASCII)
RUBRIC_RE = re.compile(r"Rubric evaluation complete for instance (\S+?):?\s+(.*)", re.ASCII)
STEP_DUMP_RE = re.compile(r"Step (\d+):\s*(\{.*)?$", re.S | re.ASCII)
POLICY_TQDM_RE = re.compile(r"Policy Train epoch \[(\d{1,12})/(\d{1,12})\]:.{0,400}?\|\s*(\d{1,12})/(\d{1,12})(?:\s*\[([^\]]*)\])?", re.ASCII)
POSTFIX_RE = re.compile(r"(?<!\w)(\w+)=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b", re.ASCII)
BATCHES_RE = re.compile(r"Training Batches Processed:.{0,200}?(?<!\d)(\d{1,12})/(\d{1,12})", re.ASCII)
TOTAL_STEPS_RE = re.compile(r"Total steps: (\d+)", re.ASCII)
SAVED_RE = re.compile(r"Successfully saved checkpoint for global_step_(\d+) to: (\S+)", re.ASCII)
LOADING_RE = re.compile(r"Loading checkpoint from:? (\S+)", re.ASCII)
RESUMING_RE = re.compile(r"Resuming from global_step:? (\d+)", re.ASCII)
INFRA_RE = re.compile(r"Infrastructure logs will be written to:? (\S+)", re.ASCII)
ATTEMPT_RE = re.compile(r"Attempt #(\d+)", re.ASCII)
EXITED_RE = re.compile(r"Training exited with code (-?\d+)(?: after (\d+)s)?", re.ASCII)

class SkyrlParser:
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
        if step is None:
            if len(self._pending) < self.MAX_PENDING:
                self._pending.append((role, values, phases or {}, extra or {}, origin))
            return
        if values or phases or extra:
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

    def _crash_in_lines(self, rec: Record, lines: list[str], t: str | None, out: list[Event]) -> bool:
        if not crash_signature("\n".join(lines[:20] + lines[-20:])):
            return False
        orphan = Record("orphan", t, None, lines[0], rec.proc, lines[1:])
        notice = error_notice(orphan, _proc_role(rec.proc), traceback_is_fatal=True)
        if notice is not None:
            out.append(notice)
        return notice is not None

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
        m = POLICY_TQDM_RE.search(msg)
        if not m:
            return
        done, total = int(m.group(3)), int(m.group(4))
        out.append(Phase("policy_train", True, t, progress=(done, total)))
        if done == total and m.group(5):
            # The postfix is the last micro-batch only: kept apart, under its own label.
            post = {k: float(v) for k, v in POSTFIX_RE.findall(m.group(5))}
            extra = {f"last_microbatch/{k}": v for k, v in post.items()}
            if extra:
                self._emit(out, TRAINER, {}, extra=extra, time=t)

    def _rollout_means(self, msg: str, t: str | None, out: list[Event]) -> None:
        nums = _kv_numbers(msg)
        values: dict[str, float] = {}
        extra: dict[str, float] = {}
        for k, v in nums.items():
            if k in ORCH_KEYS:
                values[ORCH_KEYS[k]] = v
            elif k == "reward/avg_raw_reward":
                values.setdefault("reward", v)
                extra["raw_reward"] = v
            elif k.startswith("reward/avg_pass_at_"):
                extra[k.split("/", 1)[1].replace("avg_", "")] = v
            else:
                extra[k] = v
        self._emit(out, GENERATOR, values, extra=extra, time=t)

    def _wrapper(self, msg: str, t: str | None, out: list[Event]) -> None:
        m = ATTEMPT_RE.search(msg)
        if m:
            out.append(AttemptStart(int(m.group(1)), f"autoretry Attempt #{m.group(1)}", t))
            return
        m = EXITED_RE.search(msg)
        if m:
            code = int(m.group(1))
            level = "ERROR" if code != 0 else "INFO"
            out.append(Notice(LAUNCHER, level, f"exit code {code}", msg, t, fatal=code != 0))
            if code == 0:
                out.append(RoleFinished(TRAINER, t))

    def _message(self, rec: Record, msg: str, lines: list[str], t: str | None, out: list[Event]) -> None:
        role = _proc_role(rec.proc)
        level = rec.level or ""
        n = rec.repeat
        agent = agent_events(rec, msg, lines, t)
        if agent is not None:  # the agent's own lines: slow tools, timeouts, overflows, format rules
            out.extend(agent)
            return
        if (m := SAVED_RE.search(msg)) is not None:
            step, path = int(m.group(1)), m.group(2)
            out.append(CheckpointSave(TRAINER, step, t))
            out.append(CheckpointDir(posixpath.dirname(path.rstrip("/")) or ".", "log: Successfully saved checkpoint"))
            return
        if (m := RESUMING_RE.search(msg)) is not None:
            step = int(m.group(1))
            out.append(AttemptStart(None, f"resumed from global_step {step}", t))
            out.append(Resumed(TRAINER, step, t))
            self.next_step = step + 1
            return
        if "No checkpoint found" in msg and "scratch" in msg:
            out.append(AttemptStart(None, "started from scratch (no checkpoint found)", t))
            out.append(Resumed(TRAINER, 0, t))
            self.next_step = 1
            return
        if (m := LOADING_RE.search(msg)) is not None and msg.startswith("Loading checkpoint"):
            parent = posixpath.dirname(m.group(1).rstrip("/"))
            if parent:
                out.append(CheckpointDir(parent, "log: Loading checkpoint"))
            return
        if msg.startswith(("Training finished", "Training complete")):
            out.append(RoleFinished(TRAINER, t))
            return
        if (m := TOTAL_STEPS_RE.match(msg)) is not None:
            out.append(MaxSteps(int(m.group(1)), "log"))
            return
        if (m := INFRA_RE.search(msg)) is not None:
            out.append(ExtraLog(m.group(1), INFERENCE))
            return
        if has_traceback(lines) and _is_agent_traceback(rec, lines):
            out.extend(agent_traceback(rec, lines, t))
            return
        if level in ("ERROR", "CRITICAL") or rec.fmt in ("orphan", "raylet", "print") or has_traceback(lines):
            fatal_tb = rec.proc is None or rec.proc.startswith("skyrl_entrypoint")
            if rec.time is None and t is not None:
                rec.time = t
            notice = error_notice(rec, role, traceback_is_fatal=fatal_tb)
            if notice is not None and notice.actor and _proc_role(notice.actor) != role:
                notice = replace(notice, role=_proc_role(notice.actor))  # the dead actor's role, not the driver's
            if notice is not None and (notice.kind != "error" or level in ("ERROR", "CRITICAL")):
                out.append(notice)
            return
        if lines and self._crash_in_lines(rec, lines, t, out):
            return
        if level == "WARNING":
            sig = crash_signature(msg)
            kind = sig[0] if sig else (Kind.ULIMIT if "ulimit" in msg else "warning")
            out.append(Notice(role, "WARNING", kind, msg[:300], t, count=n))
