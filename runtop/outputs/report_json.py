"""`RunState` → the JSON document of `runtop status --json` (schema in the README).

Unknown values are `null`, never 0; NaN and ±Infinity become `null` (the document is
always strict JSON); every string passes through `public` (secrets, escapes).
The `steps` list is streamed one row at a time by `write_json`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import statistics
from typing import IO, Any

from runtop import __version__
from runtop.parsers.columns import METRICS, ROLLOUT
from runtop.parsers.hygiene import public
from runtop.rules.advice import advise
from runtop.rules.health import Verdict
from runtop.state.parts import StepRow
from runtop.state.run import RunState


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def step_dict(row: StepRow) -> dict[str, Any]:
    d: dict[str, Any] = {"step": row.step, "attempt": row.attempt}
    # Every metric of the one registry, from the role that owns it (`runtop.parsers.columns`).
    for m in METRICS:
        d[m.name] = _num((row.rollout if m.owner == ROLLOUT else row.trainer).get(m.name))
    # Keys that come from a run's files are made public here, so a row needs no second walk.
    d["phases_s"] = {public(k): _num(v) for k, v in row.phases_s.items()}
    d["rollout_step_time_s"] = _num(row.rollout.get("step_time_s"))
    # Where the numbers came from, per role: "metrics" (metrics.jsonl), "log", or both.
    origins: dict[str, set[str]] = {}
    for key, origin in row.origin.items():
        origins.setdefault(key.split(".", 1)[0], set()).add(origin)
    d["origin"] = {role: "+".join(sorted(o)) for role, o in sorted(origins.items())}
    extra = {public(k): v for k, v in row.extra.items() if _num(v) is not None}
    if extra:
        d["extra"] = extra
    if row.superseded:
        d["superseded"] = True
    return d


def _redact_all(obj: Any) -> Any:
    """The JSON boundary: strings printable with secrets hidden, keys too;
    NaN and ±Infinity (a `time/*` key, a rollout score) become null, never a crash."""
    if isinstance(obj, str):
        return public(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {(public(k) if isinstance(k, str) else k): _redact_all(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_redact_all(v) for v in obj]
    return obj


def _default(obj: Any) -> Any:
    return _redact_all(list(obj)) if isinstance(obj, (set, frozenset)) else public(str(obj))


def _pass_rates(state: RunState) -> dict[str, float]:
    """Share of rollouts that passed: skyrl-agent's per-trajectory `ft`/`gt` rewards > 0;
    `reward>0` from prime-rl's rollout files."""
    out: dict[str, float] = {}
    for kind in ("ft", "gt"):
        rate = state.agent.pass_rate(kind)
        if rate is not None:
            out[kind] = rate
    r = state.rollouts
    if r.reward_n:
        out["reward>0"] = r.positive / r.reward_n
    return out


def _health(v: Verdict) -> dict[str, Any]:
    """The verdict, its reasons, and for a death the cause an expert names."""
    death = next((a for a in v.alerts if a.cause), None)
    return {
        "verdict": v.verdict,
        "reasons": list(v.reasons),
        "cause": death.cause if death else None,
        "wrapper": death.wrapper if death else None,
        "phase": death.phase if death else None,
    }


def _next(state: RunState, v: Verdict) -> dict[str, Any] | None:
    """The next step, as the band and the check-in say it; `action` is a `runtop send` action."""
    advice = advise(state, v)
    if advice is None:
        return None
    return {"text": advice.text, "action": advice.action, "pane": advice.pane, "resume_refused": advice.refused}


def _slurm(snap: Any) -> dict[str, Any] | None:
    """The run's SLURM job as squeue/sacct last said; None: the run names no job."""
    if snap is None:
        return None
    job = snap.job
    return {
        "job_id": snap.ref.job_id, "found_by": snap.ref.how, "earlier_jobs": list(snap.ref.earlier), "source": snap.source,
        "in_queue": snap.in_queue, "notes": list(snap.notes),
        "state": job.state.value if job else None, "state_text": job.state_text if job else None,
        "exit_code": job.exit_code if job else None, "signal": job.signal if job else None,
        "elapsed_s": job.elapsed_s if job else None, "time_limit_s": job.limit_s if job else None,
        "time_left_s": job.time_left() if job else None, "nodes": job.nodes if job else None,
        "node_count": job.node_count if job else None, "reason": job.reason if job else None,
    }


def _ray(snap: Any) -> dict[str, Any] | None:
    """The run's Ray cluster as its state API last said; None: none tied to the run."""
    if snap is None:
        return None
    return {
        "address": snap.address, "found_by": snap.how, "alive_actors": snap.alive_actors, "gpus": snap.gpus(),
        "nodes": [{"node_id": n.node_id, "ip": n.ip, "alive": n.alive, "head": n.head, "gpus": n.gpus, "message": n.message or None}
                  for n in snap.nodes],
        "dead_actors": [{"class_name": a.class_name, "name": a.name or None, "pid": a.pid, "ip": a.ip, "reason": a.reason,
                         "message": a.message} for a in snap.dead],
    }


def to_json(state: RunState, verdict: Verdict, *, include_steps: bool = True) -> dict[str, Any]:
    """The status document of a run: its state, and the verdict the engine judged of it."""
    v = verdict
    r = state.rollouts
    ckpt = state.last_complete_checkpoint()
    doc: dict[str, Any] = {
        "runtop_version": __version__,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "framework": state.framework,
        "layout": state.layout,
        "detection": state.detection,
        "path": state.path,
        "run_name": state.run_name,
        "notes": list(state.notes),
        "health": _health(v),
        "next": _next(state, v),
        "progress": {
            "step": state.step,
            "step_text": state.step_text(),
            "trainer_step": state.trainer_step,
            "rollout_step": state.rollout_step,
            "max_steps": state.max_steps,
            "max_steps_source": state.max_steps_source,
            "eta_s": _num(state.eta_s()),
            "median_step_time_s": _num(state.median_step_time()),
            "attempt": state.attempt,
            "attempts": [
                {"number": a.number, "reason": a.reason, "resumed_from": a.resumed_from} for a in state.attempts
            ],
            "batch": (
                {"done": state.batch.done, "total": state.batch.total, "inflight": state.batch.inflight, "time": state.batch.time}
                if state.batch
                else None
            ),
            "waiting": dict(state.waiting),
            "phase": state.current_phase(),
            "sample_filter": (
                {"flagged": state.sample_filter.flagged, "total": state.sample_filter.total,
                 "reasons": dict(state.sample_filter.reasons), "enforced": state.sample_filter.enforced}
                if state.sample_filter else None
            ),
            "finished": sorted(state.finished),
        },
        "lost_steps": [step_dict(row) for row in state.lost_steps],
        "checkpoints": [
            {"step": c.step, "path": c.path, "complete": c.complete, "bytes": c.bytes, "reason": c.reason,
             "problem": c.problem.value if c.problem else None}
            for c in sorted(state.checkpoints.values(), key=lambda c: c.step)
        ],
        "last_complete_checkpoint": ckpt.step if ckpt else None,
        "checkpoint_dir": state.checkpoint_dir,
        "checkpoint_dir_source": state.checkpoint_dir_source,
        "slurm": _slurm(state.slurm),
        "ray": _ray(state.ray),
        "rollouts": {
            "total": r.total,
            "errored": r.errored,
            "truncated": r.truncated,
            "empty": r.empty,
            "by_stop": dict(r.by_stop),
            "by_error": dict(r.by_error),
            "format_failures": {f"rule_{n}": c for n, c in sorted(state.agent.format_failures.items())},
            "pass_rates": _pass_rates(state),
            "mean_reward": r.reward_sum / r.reward_n if r.reward_n else None,
            "steps_read": sorted(r.steps),
        },
        "env": {
            "rollouts_started": state.env.started,
            "rollouts_done": state.env.done,
            "by_stop": dict(state.env.by_stop),
            "duration_p50_s": statistics.median(state.env.durations) if state.env.durations else None,
            "duration_max_s": max(state.env.durations) if state.env.durations else None,
            "active_tasks": state.env.active_tasks,
            "lag_ms": dict(state.env.lag_ms),
        },
        "slow_calls": {
            "count": state.slow_calls.count,
            "threshold_s": state.slow_calls.threshold_s,
            "timeouts": state.slow_calls.timeouts,
            "by_function": [
                {
                    "function": name,
                    "count": fc.count,
                    "p50_s": statistics.median(fc.durations) if fc.durations else None,
                    "max_s": fc.max_s,
                    "last_seen": fc.last_time,
                }
                for name, fc in sorted(state.slow_calls.by_function.items(), key=lambda kv: -kv[1].count)
            ],
        },
        "context_overflows": state.context_overflows,
        "agent": {
            "trajectories": state.agent.trajectories,
            "rewards": {
                k: {"n": int(n), "passed": int(p), "mean": (tot / n) if n else None}
                for k, (n, p, tot) in sorted(state.agent.rewards.items())
            },
            # The model's own coding errors inside observations: not infrastructure faults.
            "code_errors": dict(state.agent.code_errors.most_common()),
        },
        "errors": [
            {"time": e.time, "source": state.relpath(e.source), "role": e.role, "kind": e.kind, "message": e.message, "fatal": e.fatal}
            for e in state.errors
        ],
        "error_count": state.error_count,
        "warnings": dict(state.warnings.most_common()),
        "events": {k: {"time": t, "message": m} for k, (t, m) in state.events.items()},
        "vllm": (
            {
                "source": state.vllm_source,
                "time": state.vllm.time,
                "running": state.vllm.running,
                "waiting": state.vllm.waiting,
                "kv_cache_pct": state.vllm.kv_cache_pct,
                "prompt_tok_s": state.vllm.prompt_tok_s,
                "gen_tok_s": state.vllm.gen_tok_s,
                "preemptions": state.vllm.preemptions,
            }
            if state.vllm
            else None
        ),
        "processes": state.processes,
        "files": [
            {
                "path": state.relpath(f.path),
                "role": f.role,
                "kind": f.kind,
                "bytes_read": f.bytes_read,
                "size": f.size,
                "last_log_time": f.last_time,
                "restarts": f.restarts,
                "lines_capped": f.lines_capped,
                "error": f.error,
                "unparsed": (
                    {"count": f.unparsed, "last_line": f.unparsed_line, "reason": f.unparsed_reason} if f.unparsed else None
                ),
            }
            for f in state.files.values()
        ],
        "unrecognised": dict(state.unrecognised),
        "alerts": [
            {"rule": a.rule, "severity": a.severity, "message": a.message, "evidence": a.evidence, "since": a.since,
             "down": a.down, "cause": a.cause, "wrapper": a.wrapper, "phase": a.phase}
            for a in v.alerts
        ],
    }
    if include_steps:
        doc["steps"] = [step_dict(r) for r in state.rows()]
    redacted: dict[str, Any] = _redact_all(doc)
    return redacted


def write_json(state: RunState, fp: IO[str], verdict: Verdict) -> None:
    """`to_json`, written with the `steps` list streamed one row at a time.

    A long run has tens of thousands of steps; building them all as dicts next to
    the state would double the memory of `runtop status --json`.
    """
    doc = to_json(state, verdict, include_steps=False)
    head = json.dumps(doc, indent=2, allow_nan=False, default=_default)
    fp.write(head[: head.rfind("}")].rstrip() + ',\n  "steps": [')
    for i, r in enumerate(state.rows()):
        row = json.dumps(step_dict(r), allow_nan=False, default=_default)
        fp.write(("\n    " if i == 0 else ",\n    ") + row)
    fp.write("\n  ]\n}\n")


