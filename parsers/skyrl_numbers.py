"""How a SkyRL step's numbers are read: the status dict (full precision, authoritative),
the `Step N:` dump (4-decimal strings, used only where nothing better exists) and the
`key: value` prints, mapped onto runtop's metric names (`runtop.parsers.columns`). Pure functions."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from .numbers import strict_float
from .progress import flat_dict

KV_NUM_RE = re.compile(r"(?<![\w/@])([\w/@]+)[:=]\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b", re.ASCII)

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

# A value runtop can read from a logged dict is a number, or a string holding one, right after
# a colon: `'policy_loss': -0.0031`, `'loss/avg_final_rewards': '0.4100'`, `'x': nan`. A dict
# with none (an agent's transcript: `{'role': 'assistant', 'content': …}`) gives no event, so
# it is not parsed at all: ast.literal_eval of every transcript line was most of a SkyRL
# backfill. A false match only costs the parse; a number can never be missed. One
# class of what may stand between the colon and the number (a superset of `\s*["'(]?\s*[-+]?`):
# 0.4 µs a 200-character transcript line against 1.2 for the exact form.
NUMERIC_VALUE_RE = re.compile(r":[\s\"'(+-]*(?:[0-9]|\.[0-9]|nan|inf)", re.ASCII | re.I)


def _literal_dict(text: str) -> dict[Any, Any] | None:
    text = text.strip()
    if not text.startswith("{") or len(text) > MAX_DICT_CHARS or not NUMERIC_VALUE_RE.search(text):
        return None
    flat = flat_dict(text, bare=False)
    if flat is not None:
        return flat
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




def global_step_of(d: dict[Any, Any]) -> int | None:
    """The step a status dict names (`trainer/global_step`, upstream SkyRL), if any."""
    for key in ("trainer/global_step", "global_step"):
        gs = d.get(key)
        if isinstance(gs, int) and not isinstance(gs, bool) and 0 <= gs < 1 << 40:
            return gs
    return None


def status_numbers(d: dict[Any, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(trainer values, everything else numeric) of the full-precision status dict; no
    values means it is some other dict (sampling params, a config)."""
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
    return values, extra


def dump_numbers(d: dict[Any, Any], phases_seen: set[str]) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, float]]:
    """(trainer values, generator values, phase times, everything else) of a `Step N:` dump.
    A phase already timed by its `Finished:` line keeps that time."""
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
            elif rest not in phases_seen:
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
    return trainer, orch, phases, extra


POLICY_TQDM_RE = re.compile(r"Policy Train epoch \[(\d{1,12})/(\d{1,12})\]:.{0,400}?\|\s*(\d{1,12})/(\d{1,12})(?:\s*\[([^\]]*)\])?", re.ASCII)
POSTFIX_RE = re.compile(r"(?<!\w)(\w+)=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b", re.ASCII)


def policy_progress(msg: str) -> tuple[tuple[int, int], dict[str, float]] | None:
    """The policy-training bar (`Policy Train epoch [1/1]: 100%|…| 8/8 [… loss=…]`): how far,
    and at its last frame the postfix, which is the last micro-batch's only: kept apart,
    under its own label."""
    m = POLICY_TQDM_RE.search(msg)
    if not m:
        return None
    done, total = int(m.group(3)), int(m.group(4))
    extra: dict[str, float] = {}
    if done == total and m.group(5):
        extra = {f"last_microbatch/{k}": float(v) for k, v in POSTFIX_RE.findall(m.group(5))}
    return (done, total), extra


def rollout_means(msg: str) -> tuple[dict[str, float], dict[str, float]]:
    """(the generator's values, everything else) of a `reward/…` or `avg_final_rewards` line."""
    values: dict[str, float] = {}
    extra: dict[str, float] = {}
    for k, v in _kv_numbers(msg).items():
        if k in ORCH_KEYS:
            values[ORCH_KEYS[k]] = v
        elif k == "reward/avg_raw_reward":
            values.setdefault("reward", v)
            extra["raw_reward"] = v
        elif k.startswith("reward/avg_pass_at_"):
            extra[k.split("/", 1)[1].replace("avg_", "")] = v
        else:
            extra[k] = v
    return values, extra
