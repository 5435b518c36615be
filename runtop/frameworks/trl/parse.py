"""TRL's GRPOTrainer console → events (FORMATS.md, "Other frameworks"; shapes from genuine logs
users posted: huggingface/trl#3452 and #4086, bingreeky/MemGen#33):

      0%|          | 3/1562 [18:48<164:33:29, 379.99s/it]
    {'loss': -0.2874, 'grad_norm': 6.23, 'learning_rate': 1.9e-06, 'num_tokens': 280752.0,
     'completions/mean_length': 163.0, 'completions/clipped_ratio': 0.0, 'reward': 0.375, …, 'epoch': 0.02}
    {'train_runtime': 5520.1, 'train_samples_per_second': 0.9, 'train_loss': 0.0123, 'epoch': 1.0}

A dict carries no step number: its step is the bar's count when it was printed (the bar is
redrawn over it), else the dicts counted. Older releases say `completion_length`. The last
dict (`train_runtime`) is the end. Crashes: plain tracebacks, through the shared selection.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from runtop.frameworks.driver_log import RecordParser
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, Event, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import Record, match_header

# The training bar has no description (`Loading checkpoint shards: 100%|…| 2/2` is not it).
BAR_RE = re.compile(r"^\s*\d{1,3}%\|[^|]{0,80}\| ?(\d{1,9})/(\d{1,9}) \[", re.ASCII)
RANK_RE = re.compile(r"^\[rank\d+\]: ?", re.ASCII)
ROLLOUT_KEYS = {"reward": "reward", "completions/mean_length": "seq_len", "completion_length": "seq_len",
                "completions/clipped_ratio": "truncated"}
TRAINER_KEYS = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr", "kl": "kl", "entropy": "entropy",
                "clip_ratio/region_mean": "clip_ratio", "clip_ratio": "clip_ratio", "step_time": "step_time_s"}
MAX_DICT = 20_000  # a dict line longer than this is no log dict


def header(line: str, pending: Record | None) -> Record | None:
    body = RANK_RE.sub("", line, count=1) if line.startswith("[rank") else line
    s = body.lstrip()
    if s.startswith(("{'", '{"')) and s.rstrip().endswith("}"):
        return Record("trl-dict", None, None, s.strip())
    if "%|" in body:
        frame = [f for f in body.split("\r") if f.strip()][-1:]  # the bar as last drawn
        if frame and BAR_RE.match(frame[0]):
            return Record("trl-bar", None, None, frame[0])
    if s.startswith("Traceback (most recent call last)"):
        return Record("orphan", None, None, s)
    return match_header(line)


def _dict(text: str) -> dict[str, Any] | None:
    if len(text) > MAX_DICT:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            value = json.loads(text)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


class TrlParser(RecordParser):
    def __init__(self) -> None:
        self.bar_step: int | None = None
        self.dicts = 0
        self.max_steps: int | None = None

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        if rec.fmt == "trl-bar":
            m = BAR_RE.match(rec.message)
            if m:
                self.bar_step = int(m.group(1))
                total = int(m.group(2))
                if total != self.max_steps:
                    self.max_steps = total
                    out.append(MaxSteps(total, "the progress bar"))
            return
        if rec.fmt == "trl-dict":
            d = _dict(rec.message)
            if d is not None:
                self._logged(d, rec.time, out)
            return
        self.crash(rec, role, out, fatal_traceback=True)

    def _logged(self, d: dict[str, Any], time: str | None, out: list[Event]) -> None:
        if "train_runtime" in d:
            out.append(RoleFinished(TRAINER, time))  # the Trainer's summary after its last step
            return
        if any(k.startswith("eval_") for k in d):
            return  # an evaluation, not a training step
        self.dicts += 1
        step = self.bar_step if self.bar_step is not None else self.dicts
        rollout: dict[str, float] = {}
        trainer: dict[str, float] = {}
        extra: dict[str, float] = {}
        for key, value in d.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            v = float(value)
            if key in ROLLOUT_KEYS:
                rollout[ROLLOUT_KEYS[key]] = v
            elif key in TRAINER_KEYS:
                trainer.setdefault(TRAINER_KEYS[key], v)
            else:
                extra[key] = v
        if rollout:
            out.append(StepMetrics(ROLLOUT_SIDE, step, rollout, {}, "log", time))
        out.append(StepMetrics(TRAINER, step, trainer, {}, "log", time, extra))


Parser = TrlParser  # what the plug-in base asks for
