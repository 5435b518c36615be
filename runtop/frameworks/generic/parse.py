"""Any text log → events, with no framework's help (docs/reading.md, "The generic reader").

Records: every line is one, except the lines of a traceback (its frames, the lines under them,
its chained headings and its exception line) and indented lines under a header (a step's
bullets), which continue the record before them. Ray's process prefix, torchrun's rank prefix
and Ray's `[repeated Nx]` are taken off first; a timestamp and a level at the start are read
when they are there.

What the parser reads in them:
- deaths: tracebacks (a log that ends in one is a process that died), the death vocabulary of
  `parsers.crashes` (CUDA OOM in every spelling, NCCL, signals, Ray, torchrun, slurmstepd,
  vLLM), through the shared root-cause selection;
- progress: explicit steps first (`Step 12/500`, `step=12`, `{"step": 12, …}`, a block header
  with bullets under it), else the training bar's count, else logged dicts counted; numbers from
  `key: value` pairs and dicts, named by the metric registry where a key means one of its names;
  the bar's `s/it` as the step time (so an ETA exists before any numbers);
- ends: `parsers.ends`, a training bar at N/N, the last step equal to its total.
"""

from __future__ import annotations

import re

from runtop.frameworks.driver_log import RecordParser
from runtop.parsers import ends, progress
from runtop.parsers.columns import BY_NAME, ROLLOUT
from runtop.parsers.crashes import error_notice, has_traceback, is_frame
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, Event, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import Record, match_header
from runtop.parsers.skyrl_records import LOGURU_RE, ray_line

# A timestamp and level at a line's start, in the shapes Python's and others' loggers write:
# `2025-05-01 10:00:00,123 - name - INFO - msg`, `[2025-05-01 10:00:00] [INFO] msg`,
# `[INFO|trainer.py:2048] 2025-05-01 10:00:00,123 >> msg`, `INFO:root:msg`, `I0501 10:00:00.1 …`.
STAMP_RE = re.compile(
    r"\[?(?:\d{4}[-/]\d{2}[-/]\d{2}[ T]|\d{2}-\d{2} )?(\d{2}:\d{2}:\d{2})(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*", re.ASCII)
LEVEL_RE = re.compile(r"[\[|(]?\s*(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|SUCCESS)\s*(?:\|[^\]]{0,60})?[\]|)]?\s*[:\-|>]*\s*",
                      re.ASCII)
LOGGER_RE = re.compile(r"[-|]?\s*[\w.<>\[\]]{1,80}\s+[-|]\s+", re.ASCII)
PY_LOGGING_RE = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,80}:", re.ASCII)
_TB_CONT = ("Traceback (most recent", "During handling of the above", "The above exception was")
EPOCH_RE = re.compile(r"(?:Epoch|epoch|EPOCH)\s*\[?(\d{1,6})(?:\s*/\s*(\d{1,6}))?\]?\b", re.ASCII)


def _stamped(body: str) -> Record:
    """A line as a record: its timestamp and level read where it starts with them."""
    time = level = None
    rest = body
    m = STAMP_RE.match(rest)
    if m and m.group(1):
        time, rest = m.group(1), rest[m.end():]
        rest = LOGGER_RE.sub("", rest, count=1) if " - " in rest[:90] else rest
    lv = LEVEL_RE.match(rest)
    if lv:
        level, rest = lv.group(1), rest[lv.end():]
        if time is None:
            m = STAMP_RE.match(rest)
            if m and m.group(1):
                time, rest = m.group(1), rest[m.end():]
    else:
        py = PY_LOGGING_RE.match(rest)
        if py:
            level, rest = py.group(1), rest[py.end():]
    if level == "WARN":
        level = "WARNING"
    elif level == "FATAL":
        level = "CRITICAL"
    return Record("line", time, level, rest)


def _in_traceback(rec: Record) -> bool:
    """`rec` holds a traceback not yet closed by its exception line."""
    lines = rec.lines()
    last = lines[-1] if lines else rec.message
    return last[:1].isspace() or last.startswith(_TB_CONT) or is_frame(last)


def _open_object(rec: Record) -> bool:
    """`rec` is a pretty-printed dict or JSON object not yet closed (`{` alone, then its keys)."""
    if not rec.message.rstrip().endswith("{") or rec.message.count("{") != 1:
        return False
    lines = rec.lines()
    return not lines or not lines[-1].lstrip().startswith("}")


def header(line: str, pending: Record | None) -> Record | None:
    """The record `line` starts, or None when it continues `pending`."""
    proc, body, repeat = ray_line(line, rank_always=True)
    same = pending is not None and pending.proc == proc
    if not body.strip():
        return None
    if same and pending is not None and _open_object(pending):
        return None  # a pretty-printed dict's next line, up to its closing brace
    if same and pending is not None and "%|" not in body:
        if body.startswith(_TB_CONT[1:]) or (body[:1].isspace() and (_in_traceback(pending) or pending.fmt != "orphan")):
            return None  # a traceback's next line, or an indented line under its header (a step's bullets)
        if _in_traceback(pending) and pending.fmt == "orphan" and not body[:1].isspace():
            return None  # the exception line that closes the traceback
    if body.startswith("Traceback (most recent call last)"):
        rec: Record = Record("orphan", None, None, body)
    else:
        known = match_header(body) if body[:1].isdigit() or body[:1] in "([IWEDC{" else None
        if known is None and body[:1].isdigit():
            lm = LOGURU_RE.match(body)
            if lm:
                known = Record("loguru", lm.group(1), lm.group(2), lm.group(4), where=lm.group(3))
        rec = known if known is not None and known.fmt != "json" else _stamped(body)
    rec.proc = proc
    rec.repeat = repeat
    return rec


def _split(values: dict[str, float]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """A line's numbers → (rollout-side, trainer-side, extras), by the registry's names."""
    rollout: dict[str, float] = {}
    trainer: dict[str, float] = {}
    extra: dict[str, float] = {}
    for key, v in values.items():
        name = progress.registry_name(key)
        if name is None:
            extra[key] = v
        elif BY_NAME[name].owner == ROLLOUT:
            rollout.setdefault(name, v)
        else:
            trainer.setdefault(name, v)
    return rollout, trainer, extra


class GenericParser(RecordParser):
    """Records of one log of any framework → events. Remembers the step it is in, the total,
    which kind of progress the log uses, and the last time seen."""

    def __init__(self, *, progress: bool = True, tracebacks_fatal: bool = True) -> None:
        # A SLURM job's output beside a framework's log repeats the run's own lines: read for its
        # deaths and end only, and a traceback there is no death without a way to die in it.
        self.reads_progress = progress
        self.tracebacks_fatal = tracebacks_fatal
        self.step: int | None = None
        self.block = False  # the current step was opened by a header alone on its line
        self.explicit = False  # the log numbers its steps itself: bars and dicts then give no step
        self.bar_step: int | None = None
        self.dicts = 0
        self.total: int | None = None
        self.ended = False
        self.last_time: str | None = None
        self.epochs: int | None = None  # from a printed config (`num_epochs: 2`)
        self.zero_based_epochs = False  # an `Epoch 0` was seen

    # ---- records ---------------------------------------------------------------------------
    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        if self.vllm_or_clock(rec, out):
            return
        if rec.time is None:
            rec.time = self.last_time
        n = len(out)
        if rec.level in ("ERROR", "CRITICAL") or (rec.level is None and rec.fmt in ("line", "orphan")) or has_traceback([rec.message, *rec.lines()]):
            # A print with no level is read like an ERROR record: it has no other way to say one.
            notice = error_notice(rec, role, traceback_is_fatal=self.tracebacks_fatal)
            if notice is not None and (notice.kind != "error" or rec.level in ("ERROR", "CRITICAL")):
                out.append(notice)
        if len(out) > n:
            return
        msg = rec.message
        if ends.QUICK_RE.search(msg) and ends.says_ended(msg):
            self._end(out, rec.time)
            return
        if not self.reads_progress:
            return
        if self.total is None and "--" in msg:
            flag = progress.FLAG_TOTAL_RE.search(msg)
            if flag is not None and int(flag.group(2)) > 0:
                self.total = int(flag.group(2))
                out.append(MaxSteps(self.total, f"--{flag.group(1)} on the command line"))
        if _open_object(rec) or (msg.rstrip().endswith("{") and rec.lines() and rec.lines()[-1].lstrip().startswith("}")):
            self.read_progress(rec, "{" + " ".join(ln.strip() for ln in rec.lines()), out)  # a pretty-printed dict, whole
            return
        self.read_progress(rec, msg, out)
        for line in rec.lines()[:40]:
            self.read_progress(rec, line, out, continuation=True)

    def read_progress(self, rec: Record, text: str, out: list[Event], continuation: bool = False) -> None:
        """The progress one line of `rec` says (a bar, a dict, a step header, metric pairs); a
        plug-in with no progress of its own for a line hands it here (OpenRLHF's SFT bars)."""
        t = text.strip()
        if not t or not any(c.isdigit() for c in t):
            return
        if "%|" in t:
            bar = progress.last_bar(t)
            if bar is not None:
                self._bar(bar, rec.time, out)
                return
        if t[0] == "{":
            d = progress.logged_dict(t)
            if d is not None:
                self._dict(d, rec.time, out)
                return
        kv = progress.pairs(t)
        if kv and self.step is None:
            self._config(kv, out)
        head = progress.step_header(t, len(kv))
        if head is not None:
            self._open(head.step, head.total, out)
            self.block = head.block
            if kv:
                self._values(self.step, kv, rec.time, out)
            elif not head.block:
                out.append(StepMetrics(TRAINER, head.step, {}, {}, "log", rec.time))
            if not head.block:
                self._maybe_last(out, rec.time)  # a block's step is done when its numbers come
            return
        if kv and self.block and self.step is not None and (continuation or len(kv) == 1 or t[:1] in "•*-"):
            self._values(self.step, kv, rec.time, out)
            self._maybe_last(out, rec.time)

    def _config(self, kv: dict[str, float], out: list[Event]) -> None:
        """Before the first step: a printed config's length of the run (`max_steps: 500`, `max_iters
        = 600000`, `num_epochs: 2`)."""
        for key, v in kv.items():
            k = key.strip().lower()
            if v <= 0 or v != int(v):
                continue
            if k in progress.TOTAL_KEYS and self.total is None:
                self.total = int(v)
                out.append(MaxSteps(int(v), f"the printed config's {key.strip()}"))
            elif k in progress.EPOCH_KEYS and self.epochs is None:
                self.epochs = int(v)

    def _open(self, step: int, total: int | None, out: list[Event]) -> None:
        self.explicit = True
        self.step = step
        if total is not None and total != self.total and total > 0:
            self.total = total
            out.append(MaxSteps(total, "the log's step counter"))

    def _values(self, step: int | None, kv: dict[str, float], time: str | None, out: list[Event]) -> None:
        if step is None:
            return
        rollout, trainer, extra = _split(kv)
        if rollout:
            out.append(StepMetrics(ROLLOUT_SIDE, step, rollout, {}, "log", time))
        out.append(StepMetrics(TRAINER, step, trainer, {}, "log", time, extra))

    def _dict(self, d: dict[str, float], time: str | None, out: list[Event]) -> None:
        if "train_runtime" in d:
            self._end(out, time)  # transformers' Trainer summary after its last step
            return
        if any(k.startswith(("eval_", "val_", "val/", "val-", "test_", "eval/")) for k in d):
            return  # an evaluation, not a training step
        step = progress.dict_step(d)
        if step is not None:
            self._open(step, None, out)
            self.block = False
        else:
            self.dicts += 1
            step = self.step if self.explicit else (self.bar_step if self.bar_step is not None else self.dicts)
        self._values(step, {k: v for k, v in d.items() if k not in progress.STEP_KEYS}, time, out)
        self._maybe_last(out, time)

    def _bar(self, bar: progress.Bar, time: str | None, out: list[Event]) -> None:
        if bar.counts_epochs:
            if bar.n == bar.total and bar.n > 0:
                self._end(out, time)  # the last epoch done
            return
        if not bar.training:
            self._epoch_bar(bar, time, out)
            return
        epoch = bar.epoch_index or 0  # `Train step of epoch 2: 5/180`: the bar restarts each epoch
        total = bar.total * (self.epochs or 1) if bar.epoch_index is not None else bar.total
        if total != self.total and (self.total is None or not self.explicit):
            self.total = total
            out.append(MaxSteps(total, "the progress bar"))
        if self.explicit:
            return  # the log numbers its steps: the bar only gives the total
        step = epoch * bar.total + bar.n
        before, self.bar_step = self.bar_step, step
        rollout, trainer, extra = _split(bar.postfix)
        # A frame whose count did not move and that carries no values is a redraw, no progress:
        # tqdm draws the bar once more as the process exits, after the traceback that killed it.
        if bar.n > 0 and (before is None or step != before or rollout or trainer or extra):
            if bar.seconds_per_it:
                trainer.setdefault("step_time_s", bar.seconds_per_it)
            if rollout:
                out.append(StepMetrics(ROLLOUT_SIDE, step, rollout, {}, "bar", time))
            out.append(StepMetrics(TRAINER, step, trainer, {}, "bar", time, extra))
        if step == total and bar.n > 0:
            self._end(out, time)

    def _epoch_bar(self, bar: progress.Bar, time: str | None, out: list[Event]) -> None:
        """`Epoch 1: 100%|…| 18/18` of a run of 2 epochs (counted from 0): the last epoch's
        last batch is the run's end."""
        m = EPOCH_RE.match(bar.desc.strip())
        if m is None:
            return
        epoch = int(m.group(1))
        self.zero_based_epochs |= epoch == 0
        epochs = int(m.group(2)) if m.group(2) else self.epochs
        if epochs is None or bar.n != bar.total or bar.n == 0:
            return
        if epoch == (epochs - 1 if self.zero_based_epochs else epochs):
            self._end(out, time)

    def _maybe_last(self, out: list[Event], time: str | None) -> None:
        """The last step of a known total is the run's end (NeMo-RL's `Step 2/2`)."""
        if self.total is not None and self.step is not None and self.step >= self.total:
            self._end(out, time)

    def _end(self, out: list[Event], time: str | None) -> None:
        if not self.ended:
            self.ended = True
            out.append(RoleFinished(TRAINER, time or self.last_time))


Parser = GenericParser  # what the plug-in base asks for
