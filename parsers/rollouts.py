"""Rollout record files → `Rollout` events, one line at a time (they can be GBs).

main / v0.7+: `traces.jsonl` (one episode per line, with `traces[]`).
v0.6: `train_rollouts.jsonl` (flat: `reward`, `is_truncated`, `error`, …).
"""

from __future__ import annotations

from typing import Any

from .events import Event, Rollout, Unrecognised
from .numbers import loads
from .primerl import TRUNCATING_STOPS


def _f(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _list(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _trace_episode(obj: dict[str, Any], step: int | None) -> Rollout:
    traces = _list(obj.get("traces"))
    reward: float | None = None
    turns = 0
    stop = None
    truncated = False
    duration = None
    for tr in traces:
        if not isinstance(tr, dict):
            continue
        rewards = tr.get("rewards")
        if isinstance(rewards, dict) and rewards:
            total = 0.0
            for r in rewards.values():
                if isinstance(r, dict):
                    score, weight = _f(r.get("score")), _f(r.get("weight"))
                    if score is not None:
                        total += score * (1.0 if weight is None else weight)
            reward = total if reward is None else reward + total
        nodes = tr.get("nodes")
        if isinstance(nodes, list):
            turns += sum(1 for n in nodes if isinstance(n, dict) and n.get("sampled"))
        sc = tr.get("stop_condition")
        if isinstance(sc, str):
            stop = sc
            truncated = truncated or sc in TRUNCATING_STOPS
        timing = tr.get("timing")
        if isinstance(timing, dict):
            start = _f(timing.get("start"))
            end = None
            scoring = timing.get("scoring")
            if isinstance(scoring, dict):
                end = _f(scoring.get("end"))
            if start is not None and end is not None and end >= start:
                duration = (duration or 0.0) + (end - start)
    errors = _list(obj.get("errors"))
    err_type = None
    for e in errors:
        if isinstance(e, dict) and isinstance(e.get("type"), str):
            err_type = e["type"]
    ok = bool(obj.get("ok", err_type is None))
    env = obj.get("env")
    env_name = env.get("name") or env.get("id") if isinstance(env, dict) else None
    return Rollout(
        step=step,
        reward=reward,
        ok=ok and err_type is None,
        truncated=truncated,
        stop_condition=stop,
        error_type=err_type,
        turns=turns,
        env=env_name if isinstance(env_name, str) else None,
        empty=turns == 0 and err_type is None,
        duration_s=duration,
    )


def _v06_episode(obj: dict[str, Any], step: int | None) -> Rollout:
    err = obj.get("error")
    err_type = None
    if isinstance(err, dict):
        err_type = str(err.get("error") or "Error")
    elif isinstance(err, str) and err:
        err_type = err
    timing = _dict(obj.get("timing"))
    stop = obj.get("stop_condition") if isinstance(obj.get("stop_condition"), str) else None
    return Rollout(
        step=step,
        reward=_f(obj.get("reward")),
        ok=err_type is None,
        truncated=bool(obj.get("is_truncated")) or (stop in TRUNCATING_STOPS),
        stop_condition=stop,
        error_type=err_type,
        turns=None,
        env=obj.get("env_name") if isinstance(obj.get("env_name"), str) else None,
        duration_s=_f(timing.get("total")),
    )


def parse_line(line: str | bytes, step: int | None, source: str = "rollouts") -> Event | None:
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line:
        return None
    try:
        obj = loads(line)
    except ValueError:
        return Unrecognised(source, "not JSON (cut line?)")
    if not isinstance(obj, dict):
        return Unrecognised(source, "not a JSON object")
    if "traces" in obj or "errors" in obj:
        if step is None:
            # One stream for all steps (monitors/file/traces/stream.jsonl): the record names its step.
            run = obj.get("run")
            work = run.get("work") if isinstance(run, dict) else None
            s = work.get("step") if isinstance(work, dict) else None
            step = s if isinstance(s, int) and not isinstance(s, bool) else None
        return _trace_episode(obj, step)
    if "reward" in obj or "example_id" in obj:
        return _v06_episode(obj, step)
    return Unrecognised(source, "no known rollout keys")
