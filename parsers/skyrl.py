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
(`ORCHESTRATOR`, whose step counter means "rollouts done"); `Finished: 'step'` and
the status dict move the trainer's counter.
"""

from __future__ import annotations

import ast
import builtins
import posixpath
import re
import shlex
import warnings
from collections import Counter
from dataclasses import replace
from typing import Any

from . import vllm
from .crashes import crash_signature, error_notice, exception_of, has_traceback
from .events import (
    ENV,
    INFERENCE,
    LAUNCHER,
    ORCHESTRATOR,
    TRAINER,
    AgentError,
    AgentReward,
    AttemptStart,
    BatchProgress,
    CheckpointDir,
    CheckpointSave,
    Event,
    ExtraLog,
    FormatFailure,
    Kind,
    LaunchConfig,
    MaxSteps,
    Notice,
    Phase,
    Resumed,
    RoleFinished,
    SlowCall,
    StepMetrics,
    Trajectory,
    Unparsed,
)
from .numbers import strict_float, strict_int
from .records import Record
from .records import match_header as generic_header

# `(skyrl_entrypoint pid=66570)`, `(MegatronPolicyWorkerBase pid=12, ip=10.0.0.2)`, `(pid=9)`, `(raylet)`.
RAY_PREFIX_RE = re.compile(r"\(((?:[\w.:\- ]+? )?pid=\d+|raylet)(?:, ip=[\d.]+)?\)\s?", re.ASCII)
RANK_PREFIX_RE = re.compile(r"(?:\[(?:rank|[A-Za-z_]*)\d{1,6}\]: ?)+", re.ASCII)
REPEATED_RE = re.compile(r"(?<!\s)\s*\[repeated (\d+)x across cluster\]", re.ASCII)
# loguru: `2026-02-19 11:00:58.123 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'`
LOGURU_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\s*\|\s*"
    r"(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\|\s*(\S+)\s+-\s?(.*)",
    re.S | re.ASCII,
)
# An autoretry wrapper: `[2026-02-19 16:44:02] Attempt #2 (Total restarts: 1)`.
WRAPPER_RE = re.compile(r"\[\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})\]\s?(.*)", re.S | re.ASCII)
# Bare `print`s and tqdm frames that carry something: each is a record of its own.
STATEMENT_RE = re.compile(
    r"(?:global_step: \d|(?:ft|gt|rubric|total)_reward: |reward/|avg_final_rewards|\{'|Step \d+:|"
    r"Policy Train epoch|Training Batches Processed|Training exited with code|Attempt #\d|"
    r"Started: '|Finished: '|Total steps: |Rubric evaluation complete|\*\*\* SIG)", re.ASCII
)
# Inside a code-execution record (code, then its output) only these strict forms
# start a record: the output is the model's text and can look like anything.
AGENT_SAFE_RE = re.compile(r"(?:(?:ft|gt|rubric|total)_reward: [-+\d.eE]+\b|Rubric evaluation complete|global_step: \d+\s*$)", re.ASCII)

TIMER_RE = re.compile(r"(Started|Finished): '([\w.\-/ ]+)'(?:, time cost: ([\d.]+)s)?", re.ASCII)
GLOBAL_STEP_RE = re.compile(r"global_step: (\d+)\s*$", re.ASCII)
REWARD_LINE_RE = re.compile(r"(ft|gt|rubric|total)_reward: ([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan)", re.ASCII)
RUBRIC_RE = re.compile(r"Rubric evaluation complete for instance (\S+?):?\s+(.*)", re.ASCII)
KV_NUM_RE = re.compile(r"(?<![\w/@])([\w/@]+)[:=]\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b", re.ASCII)
STEP_DUMP_RE = re.compile(r"Step (\d+):\s*(\{.*)?$", re.S | re.ASCII)
POLICY_TQDM_RE = re.compile(r"Policy Train epoch \[(\d{1,12})/(\d{1,12})\]:.{0,400}?\|\s*(\d{1,12})/(\d{1,12})(?:\s*\[([^\]]*)\])?", re.ASCII)
POSTFIX_RE = re.compile(r"(?<!\w)(\w+)=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b", re.ASCII)
BATCHES_RE = re.compile(r"Training Batches Processed:.{0,200}?(?<!\d)(\d{1,12})/(\d{1,12})", re.ASCII)
TOTAL_STEPS_RE = re.compile(r"Total steps: (\d+)", re.ASCII)
SAVED_RE = re.compile(r"Successfully saved checkpoint for global_step_(\d+) to: (\S+)", re.ASCII)
LOADING_RE = re.compile(r"Loading checkpoint from:? (\S+)", re.ASCII)
RESUMING_RE = re.compile(r"Resuming from global_step:? (\d+)", re.ASCII)
INFRA_RE = re.compile(r"Infrastructure logs will be written to:? (\S+)", re.ASCII)
SLOW_RE = re.compile(r"Code execution took ([\d.]+) seconds", re.ASCII)
TIMEOUT_RE = re.compile(r"Timeout error during execute on attempt (\d+)/(\d+)", re.ASCII)
OVERFLOW_RE = re.compile(r"Context \((\d+) tokens\) exceeded max_prompt_len \((\d+)\)", re.ASCII)
ATTEMPT_RE = re.compile(r"Attempt #(\d+)", re.ASCII)
EXITED_RE = re.compile(r"Training exited with code (-?\d+)(?: after (\d+)s)?", re.ASCII)
RULE_NUMBER_RE = re.compile(r"\bRule (\d)\b", re.ASCII)

# skyrl-agent's eight format rules, by the text of their warning (FORMATS.md).
FORMAT_RULES: list[tuple[int, str]] = [
    (7, "is_last but outer is <"),  # before 5: both speak of the outer tag
    (5, "but doesn't end with </"),
    (6, "multiple outer <execute> blocks"),
    (8, "<think> or </think> in after_think"),
    (2, "not exactly one <think> and one </think>"),
    (1, "not start with <think>"),
    (3, "not end with </execute> or </solution>"),
    (4, "no action tag after </think>"),
]

# The per-step status dict (full precision, authoritative) → canonical names.
STATUS_KEYS = {
    "policy_loss": "loss",
    "ppo_clip_ratio": "clip_ratio",
    "loss_metrics/clip_ratio": "clip_ratio",
    "clip_ratio": "clip_ratio",
    "policy_entropy": "entropy",
    "raw_grad_norm": "grad_norm",
    "grad_norm": "grad_norm",
    "policy_lr": "lr",
    "policy_kl": "kl",
}
# Rollout-side keys (the generator's numbers).
ORCH_KEYS = {"avg_final_rewards": "reward", "avg_response_length": "seq_len"}
MAX_DICT_CHARS = 64 * 1024

# Names in agent code that are not the tool being called.
_NOT_TOOLS = set(dir(builtins)) | {"print", "def", "if", "for", "while", "return", "with", "elif", "and", "or", "not", "in", "lambda", "assert", "except"}
_METHODS = {
    "append", "extend", "join", "split", "strip", "rstrip", "lstrip", "format", "get", "items", "keys", "values",
    "head", "tail", "lower", "upper", "replace", "startswith", "endswith", "read", "write", "loads", "dumps",
    "copy", "update", "pop", "sort", "sort_values", "to_string", "to_dict", "iterrows", "apply", "find", "count",
    "index", "add", "encode", "decode", "mean", "sum", "groupby", "merge", "unique", "tolist", "describe", "json",
    "close", "isin", "dropna", "fillna", "reset_index", "set_index", "astype", "DataFrame", "Series", "compile",
    "search", "match", "findall", "sub", "exists", "makedirs", "sleep", "now",
}
_MODULES = {"pd", "np", "json", "re", "os", "sys", "math", "time", "random", "collections", "itertools", "datetime", "pandas", "numpy", "str", "self"}
CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(", re.ASCII)
# An unclosed string runs to the end of its line (or text): a match that cannot fail is
# one that never rescans (a line of `"\\"\\…` was quadratic).
STRING_RE = re.compile(r"'''.*?(?:'''|\Z)|\"\"\".*?(?:\"\"\"|\Z)|'(?:\\.|[^'\\\n])*(?:'|\\?$)|\"(?:\\.|[^\"\\\n])*(?:\"|\\?$)", re.S | re.M | re.ASCII)
DEF_RE = re.compile(r"\bdef\s+\w+\s*\(", re.ASCII)


# The end of a tqdm frame: `| 80/80 [02:57<00:00,  2.22s/it, pg=-0.402]`. A frame ends in
# `\r`, not a newline, so the next record can follow it on the same line.
TQDM_END_RE = re.compile(r"\|\s*\d+/\d+ \[[^\]]*\]", re.ASCII)


def split_glued(lines: list[str]) -> list[str]:
    """Cut a record glued behind a tqdm frame onto its own line."""
    out: list[str] | None = None
    for i, line in enumerate(lines):
        if "%|" not in line:
            if out is not None:
                out.append(line)
            continue
        m = TQDM_END_RE.search(line)
        if m is None or m.end() >= len(line.rstrip()):
            if out is not None:
                out.append(line)
            continue
        if out is None:
            out = lines[:i]
        out.append(line[: m.end()])
        out.append(line[m.end() :])
    return lines if out is None else out


def _proc_role(proc: str | None) -> str:
    if proc and any(k in proc for k in ("VLLM", "vLLM", "vllm", "Inference", "RayWorkerWrapper")):
        return INFERENCE
    return TRAINER


def _body_header(body: str, agent_block: bool) -> Record | None:
    if agent_block:
        # Inside code/output, only a real log record or a strict agent print starts a record.
        if body[:1].isdigit():
            m = LOGURU_RE.match(body)
            if m:
                return Record("loguru", m.group(1), m.group(2), m.group(4), where=m.group(3))
        if AGENT_SAFE_RE.match(body):
            return Record("print", None, None, body)
        return None
    c = body[:1]
    if c.isdigit():
        m = LOGURU_RE.match(body)
        if m:
            return Record("loguru", m.group(1), m.group(2), m.group(4), where=m.group(3))
    elif c == "[":
        m = WRAPPER_RE.match(body)
        if m:
            return Record("wrapper", m.group(1), "INFO", m.group(2))
    elif c == "+":
        stripped = body.lstrip("+")
        if stripped.startswith(" "):
            return Record("shell", None, None, stripped[1:])
    if STATEMENT_RE.match(body):
        return Record("print", None, None, body)
    return generic_header(body)


def _in_agent_block(rec: Record | None) -> bool:
    return rec is not None and rec.message.startswith(("Code execution took", "Timeout error during execute"))


def header(line: str, pending: Record | None) -> Record | None:
    """The record `line` starts, or None when it continues `pending`."""
    proc = None
    body = line
    if line.startswith("("):
        m = RAY_PREFIX_RE.match(line)
        if m:
            proc = m.group(1)
            body = line[m.end() :]
    repeat = 1
    if "[repeated " in body:
        m = REPEATED_RE.search(body)
        if m:
            repeat = 1 + int(m.group(1))  # the line shown plus the N Ray folded into it
            body = body[: m.start()] + body[m.end() :]
    if proc is not None and body.startswith("[") and "]:" in body[:16]:
        body = RANK_PREFIX_RE.sub("", body, count=1)  # `(Worker pid=9) [rank0]:[E302 …`: three layers of prefix
    same_proc = pending is not None and pending.proc == proc
    rec = _body_header(body, _in_agent_block(pending) and same_proc)
    if rec is None and proc is None and pending is not None and pending.proc is not None:
        # The driver's own stderr (its traceback) after a Ray worker's line: Ray prefixes every
        # line it forwards, so an unprefixed line is another process's record.
        rec = Record("orphan", None, None, body)
    if rec is None and proc is not None:
        if proc == "raylet":
            rec = Record("raylet", None, None, body)
        elif pending is not None and not same_proc:
            # Continuation lines carry their header's prefix; another process's line is its own record.
            rec = Record("print", None, None, body)
    if rec is not None:
        rec.proc = proc
        rec.repeat = repeat
    return rec


def called_functions(code: str, limit: int = 6) -> tuple[str, ...]:
    """The tools a code block calls (`advanced_web_search`, `gget.info`), in order, without builtins."""
    code = STRING_RE.sub("''", DEF_RE.sub("", code))
    code = "\n".join(line.split("#", 1)[0] for line in code.splitlines())
    out: list[str] = []
    for name in CALL_RE.findall(code):
        parts = name.split(".")
        if len(parts) == 1 and name in _NOT_TOOLS:
            continue
        if len(parts) > 1 and (parts[-1] in _METHODS or parts[0] in _MODULES):
            continue
        if name not in out:
            out.append(name)
            if len(out) >= limit:
                break
    return tuple(out)


def format_rule(msg: str) -> int | None:
    m = RULE_NUMBER_RE.search(msg[:200])
    if m and 1 <= int(m.group(1)) <= 8:
        return int(m.group(1))
    # The model's message follows the rule's text after `: `: look only before it.
    for rule, phrase in FORMAT_RULES:
        i = msg.find(phrase)
        if 0 <= i < 300:
            return rule
    return None


def _literal_dict(text: str) -> dict[Any, Any] | None:
    text = text.strip()
    if not text.startswith("{") or len(text) > MAX_DICT_CHARS:
        return None
    try:
        with warnings.catch_warnings():
            # `'\c'` in a logged dict is an invalid escape: Python would print a warning on
            # stderr, over the TUI's screen. The value is still read.
            warnings.simplefilter("ignore")
            obj = ast.literal_eval(text)  # never eval: the log is data
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _num(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:  # an int past float range (ast.literal_eval reads 10**400)
            return None
    if isinstance(v, str):
        return strict_float(v)
    return None


def _kv_numbers(text: str) -> dict[str, float]:
    out = {}
    for k, v in KV_NUM_RE.findall(text):
        num = strict_float(v)
        if num is not None:
            out[k] = num
    return out


def _is_agent_traceback(rec: Record, lines: list[str]) -> bool:
    """A traceback the model's code raised (inside an observation), not the trainer's."""
    if rec.level in ("ERROR", "CRITICAL"):
        return False
    if any(w in rec.message for w in ("Code execution", "Observation", "Output", "[runtime-error]", "execute")):
        return True
    if rec.where and rec.where.startswith("skyrl_agent"):
        return True
    return any('File "<string>"' in line or 'File "<stdin>"' in line for line in lines)


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
        self._emit(out, ORCHESTRATOR, {}, phases={name: dur}, time=t)

    def _rollouts_done(self, step: int, t: str | None, out: list[Event]) -> None:
        b = self._batch
        extra: dict[str, float] = {}
        if b["trajectories"]:
            extra["trajectories"] = float(b["trajectories"])
        for kind in ("ft", "gt"):
            if b[f"{kind}_n"]:
                extra[f"{kind}_pass_rate"] = b[f"{kind}_pass"] / b[f"{kind}_n"]
        self._set_step(out, step, t)
        out.append(StepMetrics(ORCHESTRATOR, step, {}, {}, "log", t, extra))

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
        for key in ("trainer/global_step", "global_step"):
            gs = d.get(key)
            if isinstance(gs, int) and not isinstance(gs, bool) and 0 <= gs < 1 << 40:
                self._late_step(gs, t, out)
                break
        if dump_step is not None or any(isinstance(v, str) for v in d.values()):
            self._dump(d, t, out, dump_step)
            return
        values: dict[str, float] = {}
        extra: dict[str, float] = {}
        for k, v in d.items():
            num = _num(v)
            if num is None or not isinstance(k, str):
                continue
            name = STATUS_KEYS.get(k)
            if name is not None:
                values[name] = num
            else:
                extra[k] = num
        if not values:
            return  # some other dict (sampling params, a config): not the status line
        self._emit(out, TRAINER, values, extra=extra, origin="status", time=t)

    def _dump(self, d: dict[Any, Any], t: str | None, out: list[Event], step: int | None) -> None:
        """The `Step N:` dump: 4-decimal strings, used only where nothing better exists."""
        trainer: dict[str, float] = {}
        orch: dict[str, float] = {}
        phases: dict[str, float] = {}
        extra: dict[str, float] = {}
        for k, v in d.items():
            num = _num(v)
            if num is None or not isinstance(k, str):
                continue
            head, _, rest = k.partition("/")
            if head == "timing" and rest:
                if rest == "step":
                    trainer["step_time_s"] = num
                elif rest not in self._phases_seen:
                    phases[rest] = num
                continue
            for key in (k, rest, k.rsplit("/", 1)[-1]):
                if key in STATUS_KEYS:
                    trainer[STATUS_KEYS[key]] = num
                    break
                if key in ORCH_KEYS:
                    orch[ORCH_KEYS[key]] = num
                    break
            else:
                extra[k] = num
        self._emit(out, ORCHESTRATOR, orch, phases=phases, origin="dump", time=t, step=step)
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
        self._emit(out, ORCHESTRATOR, values, extra=extra, time=t)

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
        if msg.startswith("Code execution took"):
            m = SLOW_RE.match(msg)
            if m and strict_float(m.group(1)) is not None:
                code: list[str] = []
                for line in lines:
                    if line.strip().startswith("Output:"):
                        break
                    code.append(line)
                out.append(SlowCall(strict_float(m.group(1)) or 0.0, called_functions("\n".join(code)), t))
            self._agent_traceback(rec, lines, t, out)
            return
        if msg.startswith("Timeout error during execute"):
            out.append(Notice(ENV, "WARNING", Kind.TOOL_TIMEOUT, msg[:300], t, count=n))
            return
        if "exceeded max_prompt_len" in msg:
            if OVERFLOW_RE.search(msg):
                out.append(Notice(ENV, "WARNING", Kind.CONTEXT_OVERFLOW, msg[:300], t, count=n))
            return
        if level == "WARNING":
            rule = format_rule(msg)
            if rule is not None:
                out.append(FormatFailure(rule, t, count=n))
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
            self._agent_traceback(rec, lines, t, out)
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

    def _agent_traceback(self, rec: Record, lines: list[str], t: str | None, out: list[Event]) -> None:
        if not has_traceback(lines):
            return
        exc = exception_of(lines)
        if exc:
            out.append(AgentError(exc[0], exc[1][:200], t, count=rec.repeat))


def launch_config(cmd: str) -> LaunchConfig | None:
    """The `key=value` overrides of a launch command from a shell trace (`+ python -m skyrl_train…`)."""
    if "=" not in cmd or ("trainer." not in cmd and "generator." not in cmd):
        return None
    try:
        tokens = shlex.split(cmd, posix=True)
    except ValueError:
        tokens = cmd.split()
    kv = {}
    for tok in tokens:
        k, sep, v = tok.partition("=")
        if sep and "." in k:
            kv[k.lstrip("+")] = v

    def i(key: str) -> int | None:
        return strict_int(kv.get(key))

    batch, n = i("trainer.train_batch_size"), i("generator.n_samples_per_prompt")
    return LaunchConfig(
        run_name=kv.get("trainer.run_name"),
        ckpt_dir=kv.get("trainer.ckpt_path"),
        ckpt_interval=i("trainer.ckpt_interval"),
        keep_last=i("trainer.max_ckpts_to_keep"),
        max_steps=None,
        batch_rollouts=batch * n if batch and n else None,
    )
