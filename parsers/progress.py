"""Progress in words any training script uses, whatever its framework (docs/reading.md,
"Progress without a framework"): tqdm bars, step headers (`Step 12/500`, `step=12`,
`global_step: 12`, `[Iteration 12]`), `key: value` / `key=value` / `Key value` metric pairs,
logged Python dicts and JSON lines, and the registry names their keys stand for.

Pure and total: text in, values out, never an exception.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from .numbers import strict_float

# ---- tqdm bars ---------------------------------------------------------------------------
# `Training Progress:  6%|▌   | 12/200 [17:38<4:36:12, 88.2s/it, loss=0.3]`; without a
# description (`  3%|▎ | 3/1562 [18:48<164:33:29, 379.99s/it]`); rate in s/it or it/s, or `?it/s`
# before the first tick. tqdm writes `n/total` as plain integers (or k/M with unit_scale).
# The frame from its percentage on; its description is the text before it in the same frame (a
# lazy description group in front cost 100 tries at every position of a long line).
BAR_RE = re.compile(
    r"(?P<pct>\d{1,3})%\|[^|\r\n]{0,200}\|[ \t]{0,8}(?P<n>\d{1,12})/(?P<total>\d{1,12})"
    r"[ \t]{0,8}\[(?P<elapsed>[\d:]{1,12})<(?P<eta>[\d:?]{1,12}),[ \t]{0,8}(?P<rate>[\d.]{1,12}|\?)[ \t]?(?P<unit>s/it|it/s|[\w.]{1,12}/s|s/[\w.]{1,12})?"
    r"(?P<post>[^\]\r\n]{0,400})\]",
    re.ASCII,
)
# A bar that counts something other than optimiser steps: model loading, data maps, vLLM's
# prompts, evaluation, generation, CUDA graphs.
NOT_TRAINING_RE = re.compile(
    r"load|shard|download|fetch|map\b|filter|token|process(?:ed|ing)? (?:prompts|requests)|prompts|request|generat|eval"
    r"|valid|test|sampl|captur|compil|warm|adding|render|preprocess|sav|convert|upload|writ|read|merg|infer|predict"
    r"|completion|rollout|batches of|examples|resolv|build",
    re.ASCII | re.I,
)
TRAINING_DESC_RE = re.compile(r"train|step|iter|episode|progress|update|optimi|batch|grpo|ppo|dpo|sft|\brl\b|global", re.ASCII | re.I)
INNER_UNIT_RE = re.compile(r"step|batch|iter", re.ASCII)
EPOCH_INDEX_RE = re.compile(r"epoch\s*\[?(\d{1,6})", re.ASCII)
POSTFIX_PAIR_RE = re.compile(r"([A-Za-z_][\w./-]{0,60})=([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.ASCII)


@dataclass(frozen=True, slots=True)
class Bar:
    desc: str
    n: int
    total: int
    eta_s: float | None
    seconds_per_it: float | None
    postfix: dict[str, float]

    @property
    def training(self) -> bool:
        """A bar of training steps: no description (the Trainer's), or one that says so."""
        d = self.desc.strip().strip("[]():").strip()
        if not d:
            return True
        if d.lower().startswith("epoch") or self.counts_epochs:
            return False  # batches within an epoch, or the epochs themselves, not the run's steps
        return bool(TRAINING_DESC_RE.search(d)) and not NOT_TRAINING_RE.search(d)

    @property
    def counts_epochs(self) -> bool:
        """The outer bar of a loop of epochs (`Train epoch: 100%|…| 1/1`): at N/N the run is done."""
        d = self.desc.lower()
        return "epoch" in d and not EPOCH_INDEX_RE.search(d) and not INNER_UNIT_RE.search(d)

    @property
    def epoch_index(self) -> int | None:
        """`Train step of epoch 2` → 2: the bar restarts each epoch."""
        m = EPOCH_INDEX_RE.search(self.desc.lower())
        return int(m.group(1)) if m else None


def clock_seconds(text: str) -> float | None:
    """tqdm's `4:36:12` / `17:38` → seconds (past a day it writes more hours, `164:33:29`); None
    for `?` or garbage."""
    parts = text.split(":")
    if len(parts) > 3 or not all(p.isdigit() for p in parts):
        return None
    secs = 0.0
    for p in parts:
        secs = secs * 60 + int(p)
    return secs


def last_bar(text: str) -> Bar | None:
    """The last tqdm frame in `text` (a line of `\\r`-separated frames), or None."""
    if "%|" not in text:
        return None
    found = None
    for m in BAR_RE.finditer(text):
        found = m
    if found is None:
        return None
    n, total = int(found["n"]), int(found["total"])
    if total <= 0 or n > total:
        return None
    rate = strict_float(found["rate"]) if found["rate"] != "?" else None
    unit = found["unit"] or ""
    spi: float | None = None
    if rate is not None and rate > 0:
        if unit.startswith("s/"):
            spi = rate
        elif unit.endswith("/s") and unit.startswith("it"):
            spi = 1.0 / rate
    post = {k: v for k, raw in POSTFIX_PAIR_RE.findall(found["post"] or "") if (v := strict_float(raw)) is not None}
    before = text[max(0, found.start() - 120): found.start()]
    desc = before.rsplit("\r", 1)[-1].rsplit("]", 1)[-1].rstrip().rstrip(":").strip()[-100:]
    return Bar(desc, n, total, clock_seconds(found["eta"]), spi, post)


# ---- step headers ------------------------------------------------------------------------
# `Step 12/500`, `step: 12`, `step=12`, `[Step 12]`, `global_step 12`, `Iteration 12/500`, `iter 12`.
STEP_RE = re.compile(
    r"(?<![\w/.-])(?:global[_ ]step|train/global_step|step|iteration|iter)(?:[ \t]{0,4}[:=#][ \t]{0,4}|[ \t]{1,4})\[?[ \t]{0,4}(\d{1,12})"
    r"(?:[ \t]{0,4}/[ \t]{0,4}(\d{1,12}))?\]?(?![\w.%/]|:\d)",
    re.ASCII | re.I,
)
# A line that only mentions a step (a save, a resume, a load) is no progress.
NOT_PROGRESS_RE = re.compile(r"checkpoint|sav(?:e|ing|ed)\b|resum|load|restor|skip|warm|from step|at step|until step|every", re.ASCII | re.I)
# `Step 12/500` opening a block of bullets (NeMo-RL's `==== Step 12/500 ====`), alone on its line.
BLOCK_RE = re.compile(r"^[\W_]{0,80}(?:step|iteration|iter)[ \t]{1,4}(\d{1,12})(?:[ \t]{0,4}/[ \t]{0,4}(\d{1,12}))?[\W_]{0,80}$", re.ASCII | re.I)


@dataclass(frozen=True, slots=True)
class StepHeader:
    step: int
    total: int | None
    block: bool  # alone on its line: the lines after it hold the step's numbers


def step_header(text: str, pairs: int) -> StepHeader | None:
    """The step a line announces: at its start, or anywhere on a line that also carries
    `pairs` metric pairs; never a line about saving, resuming or loading at a step."""
    t = text.strip()[:MAX_PAIRS_TEXT]
    b = BLOCK_RE.match(t)
    if b:
        return StepHeader(int(b.group(1)), int(b.group(2)) if b.group(2) else None, True)
    m = STEP_RE.search(t)
    if m is None:
        return None
    lead = t[: m.start()].strip(" [(|:-•*>=")
    if lead and not pairs:
        return None
    if NOT_PROGRESS_RE.search(t[: m.start()]) or (not pairs and NOT_PROGRESS_RE.search(t)):
        return None
    total = int(m.group(2)) if m.group(2) else None
    return StepHeader(int(m.group(1)), total if total and total >= int(m.group(1)) else None, False)


# ---- metric pairs ------------------------------------------------------------------------
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# `loss=0.12`, `loss: 0.12`, `'loss': 0.12`, `"loss": "0.12"`, `• Avg Reward: 0.61`, `| Loss 0.0031 |`.
PAIR_RE = re.compile(
    r"(?:^|(?<=[\s,{|(\[•*-]))['\"]?([A-Za-z][\w./@-]{0,60}(?: [A-Za-z][\w./()-]{0,20}){0,3})['\"]?"
    r"[ \t]{0,8}(=|:|[ \t](?=[-+.\d]))[ \t]{0,8}['\"]?(" + _NUM + r")['\"]?(%|[ \t]?s\b|[ \t]?ms\b)?(?=[\s,}|)\]]|$)",
    re.ASCII,
)
# Words that name what a line is about, not a metric (`step 12`, `epoch 1`, a time of day).
NOT_METRIC = frozenset({"step", "global step", "global_step", "iteration", "iter", "epoch", "rank", "pid", "line", "port",
                        "version", "seed", "worker", "node", "gpu", "device", "id", "attempt", "pg id", "at", "in", "of", "to"})


MAX_PAIRS_TEXT = 2000
LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "SUCCESS", "TRACE", "FATAL", "NOTICE"})


def pairs(text: str) -> dict[str, float]:
    """The `key: number` pairs of one line, by the line's own key names (seconds for `12.3s`).
    `Key value` without `=` or `:` counts only on a `|`-separated line (prime-rl's, Megatron's):
    in prose it is any word before any number."""
    out: dict[str, float] = {}
    text = text[:MAX_PAIRS_TEXT]  # a metric line is short; a 64 KB transcript line is no metric line
    if not any(c.isdigit() for c in text):
        return out
    loose = " | " in text
    for key, sep, raw, unit in PAIR_RE.findall(text):
        k = key.strip()
        words = k.split()
        if words[0].upper() in LEVELS:
            k = " ".join(words[1:])  # `INFO step=5`: the level before the key is not part of it
        if not k or (sep not in "=:" and not loose) or k.lower() in NOT_METRIC or k.split()[-1].lower() in NOT_METRIC or k[-1:] in "/.-":
            continue
        v = strict_float(raw)
        if v is None:
            continue
        if unit.strip() == "ms":
            v /= 1000.0
        out.setdefault(k, v)
    return out


# ---- logged dicts and JSON lines -------------------------------------------------------
MAX_DICT = 20_000
# Python prints a non-finite float bare (`'grad_norm': nan`), which no literal parser takes: quoted,
# it is read as the string it is, and a string number is a number.
BARE_NONFINITE_RE = re.compile(r"(?<=[:\[,(]) ?(-?inf|nan)(?=\s*[,}\])])", re.ASCII)
# `np.float64(0.41)` in a dict numpy's scalars went into (NumPy 2's repr).
NUMPY_SCALAR_RE = re.compile(r"\bnp\.(?:float|int|uint)\d{1,3}\(([^()]{1,40})\)", re.ASCII)


def literal_dict(text: str) -> dict[Any, Any] | None:
    """A logged dict's repr as data (never `eval`): JSON, or a Python literal, with its bare `nan`
    and `inf` and numpy's `np.float64(…)` read as the numbers they are. None when it is no dict."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")) or len(t) > MAX_DICT:
        return None
    if t.startswith('{"'):
        try:
            value = json.loads(t)
            return value if isinstance(value, dict) else None
        except ValueError:
            pass
    flat = flat_dict(t)
    return flat if flat is not None else _evaluated_dict(t)


def _evaluated_dict(t: str) -> dict[Any, Any] | None:
    for attempt in range(2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # `'\c'` in a logged string: never a warning over the TUI
                value = ast.literal_eval(t)
            return value if isinstance(value, dict) else None
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            if attempt or not ("nan" in t or "inf" in t or "np." in t):
                return None
            t = NUMPY_SCALAR_RE.sub(r"\1", t)
            t = BARE_NONFINITE_RE.sub(lambda m: f"'{m.group(1)}'", t)
    return None


# A flat dict of plain keys and plain values, as trainers log one at every step: read in one
# pattern pass to what `ast.literal_eval` makes of it (compiling a dict's source is most of the
# cost of a console with a dict a step). Anything else (escapes, nesting, `1_000`, `007`,
# numpy's reprs) is left to the literal parser. A bare `nan`/`inf` is the string it becomes there.
_FLAT_CHARS = r"[^'\\\x00-\x08\x0a-\x1f\ud800-\udfff]*"  # what a literal may hold unescaped
_FLAT_KEY = rf"'{_FLAT_CHARS}'"
_FLAT_VALUE = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|'" + _FLAT_CHARS + "'|-?inf|nan|True|False|None"
_FLAT_RE = re.compile(rf"\{{(?:{_FLAT_KEY}: (?:{_FLAT_VALUE})(?:, {_FLAT_KEY}: (?:{_FLAT_VALUE}))*)?\}}", re.ASCII)
_FLAT_PAIR_RE = re.compile(rf"'({_FLAT_CHARS})': ({_FLAT_VALUE})", re.ASCII)
_FLAT_CONST = {"True": True, "False": False, "None": None}
_LEADING_ZERO_RE = re.compile(r"-?0\d")


def flat_dict(t: str, bare: bool = True) -> dict[Any, Any] | None:
    """`t` read as a flat dict, or None where the literal parser must read it. `bare=False`: a bare
    `nan` or `inf` is no literal (None), as `ast.literal_eval` alone has it."""
    if _FLAT_RE.fullmatch(t) is None:
        return None
    out: dict[Any, Any] = {}
    quoted = False
    for key, raw in _FLAT_PAIR_RE.findall(t):
        c = raw[0]
        if c == "'":
            value: Any = raw[1:-1]
        elif raw in _FLAT_CONST:
            value = _FLAT_CONST[raw]
        elif raw in ("nan", "inf", "-inf"):
            if not bare:
                return None
            value, quoted = raw, True
        elif "." in raw or "e" in raw or "E" in raw:
            value = float(raw)
        elif _LEADING_ZERO_RE.match(raw) is not None and raw.strip("-0"):
            return None  # `007` is no Python literal
        else:
            value = int(raw)
        out[key] = value
    # Where a bare non-finite is quoted, the literal parser's substitution also reaches into the
    # strings; a string with such words in it is left to it.
    if quoted and any(isinstance(v, str) and ("nan" in v or "inf" in v) for v in (*out, *out.values()) if v not in ("nan", "inf", "-inf")):
        return None
    return out


def logged_dict(text: str) -> dict[str, float] | None:
    """`{'loss': 0.1, 'reward': '0.41', …}` (a Python dict repr, values plain or quoted as
    current TRL prints them) or `{"step": 3, "loss": 0.1}` (JSON): its numbers, flattened one
    level (`{"data": {"actor/x": 1}}` → `actor/x`). None when it is no dict of numbers."""
    value = literal_dict(text)
    if value is None:
        return None
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                f = number(v2)
                if f is not None:
                    out[f"{k2}"] = f
            continue
        f = number(v)
        if f is not None:
            out[str(k)] = f
    return out or None


def number(v: object) -> float | None:
    """A logged value as a float: a number, or a number quoted as a string (`'0.1146'`); `nan` and
    `inf` kept (a NaN grad norm is news, not noise); a bool, or an int past float range, is none."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:  # `10**400` is a literal too
            return None
    if isinstance(v, str) and len(v) < 40:
        return strict_float(v.strip())
    return None


STEP_KEYS = ("step", "global_step", "train/global_step", "trainer/global_step", "iteration", "iter", "_step", "global_steps")


def dict_step(d: dict[str, float]) -> int | None:
    for k in STEP_KEYS:
        v = d.get(k)
        if v is not None and v >= 0 and v == int(v) and v < 10**12:
            return int(v)
    return None


# ---- key names → the registry's ---------------------------------------------------------
_PREFIXES = ("train/", "train_", "training/", "actor/", "policy/", "critic/", "rollout/", "trainer/", "metrics/", "loss/", "objective/")
NAMES = {
    "reward": "reward", "rewards": "reward", "reward_mean": "reward", "reward/mean": "reward", "rewards/mean": "reward",
    "score/mean": "reward", "avg_reward": "reward", "mean_reward": "reward", "avg reward": "reward", "average reward": "reward",
    "mean reward": "reward", "avg_final_rewards": "reward", "score": "reward",
    "loss": "loss", "pg_loss": "loss", "policy_loss": "loss", "actor_loss": "loss",
    "entropy": "entropy", "policy_entropy": "entropy", "entropy/mean": "entropy",
    "kl": "kl", "ppo_kl": "kl", "kl_div": "kl", "approx_kl": "kl", "kl/mean": "kl", "mean_kl": "kl",
    "grad_norm": "grad_norm", "grad norm": "grad_norm", "gradient_norm": "grad_norm", "raw_grad_norm": "grad_norm", "grad_norm/mean": "grad_norm",
    "lr": "lr", "learning_rate": "lr", "learning rate": "lr", "actor_lr": "lr",
    "response_length/mean": "seq_len", "response_length": "seq_len", "completion_length": "seq_len",
    "completions/mean_length": "seq_len", "mean generation length": "seq_len", "avg_response_length": "seq_len",
    "seq_len": "seq_len", "generation_length": "seq_len", "mean_generation_length": "seq_len", "response_len": "seq_len",
    "step_time": "step_time_s", "time/step": "step_time_s", "timing_s/step": "step_time_s", "total step time": "step_time_s",
    "step time": "step_time_s", "time_per_step": "step_time_s", "timing/step": "step_time_s", "step_time_s": "step_time_s",
    "clip_ratio": "clip_ratio", "clipfrac": "clip_ratio", "pg_clipfrac": "clip_ratio", "clip_ratio/region_mean": "clip_ratio",
    "completions/clipped_ratio": "truncated", "truncated": "truncated", "truncation": "truncated", "response_length/clip_ratio": "truncated",
    "throughput": "throughput_tok_s", "tokens_per_second": "throughput_tok_s", "perf/throughput": "throughput_tok_s",
    "total_loss": "loss", "gpt_loss": "loss", "gradnorm": "grad_norm", "actor_grad_norm": "grad_norm", "policy_grad_norm": "grad_norm", "resp_len": "seq_len", "average sequence length": "seq_len",
    "avg_response_len": "seq_len", "mean_response_length": "seq_len", "response_length_mean": "seq_len",
}
# Keys of a printed config that give the run's length: its steps, or its epochs.
TOTAL_KEYS = frozenset({"total_timesteps", "max_steps", "total_steps", "max_iters", "max_iterations", "num_iterations", "train_steps", "num_training_steps",
                        "total_training_steps", "num_train_steps", "max_num_steps", "total_num_steps", "trainer.total_training_steps"})
# The same given as a flag on a command line the log echoes (`--total-timesteps 10000000`).
FLAG_TOTAL_RE = re.compile(r"--(total[-_]timesteps|total[-_]steps|max[-_]steps|max[-_]iters|num[-_]iterations|train[-_]steps"
                           r"|num[-_]training[-_]steps|total[-_]training[-_]steps|max[-_]num[-_]steps)[= ](\d{1,12})\b", re.ASCII)
EPOCH_KEYS = frozenset({"num_epochs", "num_train_epochs", "epochs", "max_epochs", "total_epochs", "trainer.total_epochs"})


def registry_name(key: str) -> str | None:
    """The registry's name for a log's key (`train/loss` → `loss`, `Avg Reward` → `reward`)."""
    k = key.strip().lower()
    if k in NAMES:
        return NAMES[k]
    for p in _PREFIXES:
        if k.startswith(p) and k[len(p):] in NAMES:
            return NAMES[k[len(p):]]
    k2 = k.replace(" ", "_")
    return NAMES.get(k2)
