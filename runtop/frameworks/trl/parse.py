"""TRL's GRPOTrainer console → events (docs/formats.md, "Other frameworks"; shapes from genuine logs
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

import re
from typing import Any

from runtop.frameworks.driver_log import RecordParser
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, Event, Kind, MaxSteps, Notice, RoleFinished, StepMetrics
from runtop.parsers.progress import last_bar, literal_dict, number
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
    return literal_dict(text)


COUNTER_RE = re.compile(r"^\s*(\d{1,9})\s*/\s*(\d{1,9})\s*$", re.ASCII)


def _counter(d: dict[str, Any]) -> tuple[int, int] | None:
    """A dict's own `'global_step/max_steps': 'n/N'` (ms-swift), as (step, total)."""
    for key, value in d.items():
        if isinstance(key, str) and "step" in key and isinstance(value, str):
            m = COUNTER_RE.match(value)
            if m and 0 < int(m.group(1)) <= int(m.group(2)):
                return int(m.group(1)), int(m.group(2))
    return None


class TrlParser(RecordParser):
    """A logged dict has no step: it is the count of the bar frame drawn before it, when the bar
    moved since the last dict (trl#4086: `3/1562 [18:48<…]`, a line of spaces, the dict). A step
    faster than tqdm's `mininterval` logs its dict before its tick is drawn: that dict waits for
    the next frame, which `tqdm.write` redraws right after it. With no bar at all
    (`disable_tqdm`), the dicts are counted."""

    def __init__(self) -> None:
        self.bar_step: int | None = None
        self.seen_bar = False
        self.dicts = 0
        self.last_step = 0  # the step the last dict was given
        self.max_steps: int | None = None
        self.pending: tuple[dict[str, Any], str | None] | None = None  # a dict waiting for its tick

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        if rec.fmt == "trl-bar":
            m = BAR_RE.match(rec.message)
            if m:
                self.seen_bar = True
                before, self.bar_step = self.bar_step, int(m.group(1))
                total = int(m.group(2))
                if total != self.max_steps:
                    self.max_steps = total
                    out.append(MaxSteps(total, "the progress bar"))
                # The bar is progress before any dict is logged (`3/1562 [18:48<164:33:29, 379.99s/it]`):
                # its step, and its s/it as the step time, so an ETA exists from the first tick.
                # Only a count that moved is progress: tqdm draws the bar once more as the
                # process exits, after the traceback that killed it, and that frame is no sign of life.
                bar = last_bar(rec.message)
                if self.bar_step > 0 and bar is not None and (before is None or self.bar_step > before):
                    out.append(StepMetrics(TRAINER, self.bar_step, {"step_time_s": bar.seconds_per_it} if bar.seconds_per_it else {}, {}, "bar"))
                if self.pending is not None and self.bar_step > self.last_step:
                    self._flush(self.bar_step, out)
            return
        if rec.fmt == "trl-dict":
            d = _dict(rec.message)
            if d is not None:
                self._logged(d, rec.time, out)
            return
        if "Server is not up yet" in rec.message:
            # TRL's vLLM client retries the server until `vllm_server_timeout`: the run waits on it.
            out.append(Notice(role, "WARNING", Kind.INFERENCE_UNREACHABLE, "the vLLM server is not up yet: " + rec.message.strip(), rec.time))
            return
        self.crash(rec, role, out, fatal_traceback=True)

    def _flush(self, step: int | None, out: list[Event]) -> None:
        """Emit the waiting dict at `step` (None: after the last one, by the dicts counted)."""
        if self.pending is None:
            return
        (d, t), self.pending = self.pending, None
        self._give(d, t, step if step is not None else max(self.last_step + 1, self.dicts + 1), out)

    def _give(self, d: dict[str, Any], time: str | None, step: int, out: list[Event]) -> None:
        self.dicts += 1
        self.last_step = step
        self._emit(d, time, step, out)

    def _logged(self, d: dict[str, Any], time: str | None, out: list[Event]) -> None:
        if "train_runtime" in d:
            self._flush(self.bar_step if self.bar_step and self.bar_step > self.last_step else None, out)
            out.append(RoleFinished(TRAINER, time))  # the Trainer's summary after its last step
            return
        if any(k.startswith("eval_") for k in d):
            return  # an evaluation, not a training step
        self._flush(None, out)  # two dicts with no new tick between
        counted = _counter(d)
        if counted is not None:
            # ms-swift writes the step into the dict: `'global_step/max_steps': '10/3766'`.
            step, total = counted
            if total != self.max_steps:
                self.max_steps = total
                out.append(MaxSteps(total, "the logged dict's global_step/max_steps"))
            self._give(d, time, step, out)
            return
        if self.bar_step and self.bar_step > self.last_step:
            self._give(d, time, self.bar_step, out)
        elif self.seen_bar or self.dicts == 0:
            self.pending = (d, time)  # its tick is not drawn yet
        else:
            self._give(d, time, self.last_step + 1, out)

    def _emit(self, d: dict[str, Any], time: str | None, step: int, out: list[Event]) -> None:
        rollout: dict[str, float] = {}
        trainer: dict[str, float] = {}
        extra: dict[str, float] = {}
        for key, value in d.items():
            # Current TRL prints every value as a quoted string (`'reward': '0.1146'`).
            v = number(value)
            if v is None:
                continue
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
