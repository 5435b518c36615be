"""prime-rl log records (orchestrator, trainer, env servers) → events.

Every generation from v0.5 to main is read here; fields are found by name, not by
position, since each release renamed or reordered them (docs/formats.md, prime-rl).
"""

from __future__ import annotations

import re

from .crashes import crash_signature, error_notice, has_traceback
from .events import (
    ENV,
    ORCHESTRATOR,
    TRAINER,
    BatchProgress,
    CheckpointSave,
    EnvLag,
    Event,
    Kind,
    MaxSteps,
    Notice,
    Resumed,
    RoleFinished,
    RolloutDone,
    RolloutFailed,
    RolloutStart,
    SampleFilter,
    StepMetrics,
    Waiting,
)
from .numbers import shared, shared_float, strict_float, strict_int
from .records import Record
from .text import parse_duration, split_fields, to_float

STEP_RE = re.compile(r"Step (\d+)\s*(?:\||$)", re.ASCII)
BATCH_RE = re.compile(
    r"Train batch (\d+)/(\d+)(?: \([\d.]+%\))?(?: \((?!\+)[^)]{0,200}\))?(?: \(\+(\d+) buffered\))?(?:[^;]{0,300}; (\d+) inflight)?", re.ASCII
)
MAX_STEPS_RE = re.compile(r"max_steps=(\d+)", re.ASCII)
RESUME_RE = re.compile(r"Resuming (?:training )?from checkpoint (?:at )?step (\d+)", re.ASCII)
SAVE_RE = re.compile(r"Saving checkpoint at step (\d+)", re.ASCII)
TRACE_FAILED_RE = re.compile(r"Trace failed in group \S+ \(([^)]*)\) \W+ ([\w.]+)(?::\s*(.*))?", re.ASCII)
DROPPED_RE = re.compile(r"Dropped (\d+) queued traces", re.ASCII)
# `Detected 97/128 rollouts (gibberish=2, zero_advantage=95), enforcing 95`
DETECTED_RE = re.compile(r"Detected (\d+)/(\d+) rollouts \(([^)]{0,300})\)(?:,? enforcing (\d+))?", re.ASCII)
# `Orchestrator paused: waiting for trainer process to complete checkpoint 14 (>1 step(s) ahead)`
COUNT_KV_RE = re.compile(r"(?<!\w)(\w{1,40})=(\d{1,12})\b", re.ASCII)
PAUSED_RE = re.compile(r"Orchestrator paused: waiting for trainer(?: process)? to complete checkpoint (\d+)", re.ASCII)
# A rollout that failed and is retried, in any of the words prime-rl used:
# `Trace failed in group g12 (env) — HarnessError: …`, `Rollout failed (id=…): ProviderError: …`.
ROLLOUT_FAILED_RE = re.compile(
    r"(?:Rollout|Trace|Episode)\b.{0,200}?\bfailed\b.{0,200}?(?<![\w.])([A-Z]\w{0,60}(?:Error|Exception|Timeout))(?::\s*(.{0,300}))?",
    re.ASCII,
)
EMPTY_BATCH_RE = re.compile(r"Step (\d+): empty train batch", re.ASCII)
# The lookbehinds in this file and skyrl.py start a match only where a word starts: without
# them `\w+` rescans the rest of a 64 KB word from every position (13 s a line).
ROLLOUT_KV_RE = re.compile(r"(?<!\w)(\w+)=(\S+)", re.ASCII)
ACTIVE_TASKS_RE = re.compile(r"Active tasks: (\d+)", re.ASCII)
LAG_RE = re.compile(r"(min|mean|median|p50|p90|p99|max)=([\d.]+)ms", re.ASCII)

# Step-line field name (lower-case, trailing dots dropped) → canonical metric.
ORCH_FIELDS = {
    "reward": "reward",
    "seq. length": "seq_len",
    "seq length": "seq_len",
    "truncation": "truncated",
    "error": "error_rate",
    "cancelled": "cancelled",
    "turns": "turns",
    "branches": "branches",
    "max off-policy": "off_policy_max",
    "max. off-policy level": "off_policy_max",
    "async level": "async_level",
    "throughput": "inference_tok_s",
}
TRAINER_FIELDS = {
    "loss": "loss",
    "entropy": "entropy",
    "mismatch kl": "kl",
    "grad. norm": "grad_norm",
    "grad norm": "grad_norm",
    "lr": "lr",
    "throughput": "throughput_tok_s",
    "mfu": "mfu",
    "peak mem.": "peak_mem_gib",
    "peak mem": "peak_mem_gib",
    "max vio": "max_vio",
    "routing conf.": "routing_conf",
}
PERCENT_FIELDS = {"truncated", "error_rate", "cancelled"}
# Stop conditions that mean "cut by a length limit" (docs/formats.md, rollout records).
TRUNCATING_STOPS = {
    "max_turns",
    "max_output_tokens",
    "max_tokens",
    "context_length",
    "generation_truncated",
    "prompt_too_long",
    "length",
    "max_total_tokens",
}


# One `Key value` / `Key: value` field right after a ` | ` separator (v0.5 used colons).
# A single findall per line keeps step lines cheap on a GB backfill.
FIELD_RE = re.compile(
    r"\|\s*([A-Za-z][A-Za-z.\- ]*?):?\s+([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(%?)", re.ASCII
)
TIME_FIELD_RE = re.compile(r"Time:?\s+([^|]+)", re.ASCII)
TRAINABLE_RE = re.compile(r"Trainable:? (\d+)/(\d+)", re.ASCII)


def _step_line(rec: Record, role_hint: str) -> list[Event]:
    msg = rec.message
    parts = msg.split("|", 2)
    head = parts[0].split()
    if len(head) < 2 or head[0] != "Step" or not head[1].isdigit():
        return []
    step = int(head[1])
    fields = [(k.lower(), num, pct) for k, num, pct in FIELD_RE.findall(msg)]
    keys = {k for k, _, _ in fields}
    if keys & {"loss", "entropy", "grad. norm", "mfu", "mismatch kl"}:
        role, table = TRAINER, TRAINER_FIELDS
    elif keys & {"reward", "trainable", "seq. length", "truncation"}:
        role, table = ORCHESTRATOR, ORCH_FIELDS
    else:
        role, table = role_hint, (TRAINER_FIELDS if role_hint == TRAINER else ORCH_FIELDS)
    values: dict[str, float] = {}
    extra: dict[str, float] = {}
    # The unnamed time field comes second (`|  1m 18s |`); v0.5 names it `Time:`.
    if len(parts) > 1:
        d = parse_duration(parts[1]) if parts[1].strip()[:1].isdigit() else None
        if d is not None:
            values["step_time_s"] = shared(d)
    for k, num_text, pct in fields:
        if k == "time":
            continue
        # FIELD_RE admits only ASCII decimal forms, which `float` always reads (no digit
        # limit, unlike `int`); the hot path of a GB backfill skips the second check.
        name = table.get(k)
        if name is None:
            if k not in ("trainable", "step"):
                extra[k] = shared_float(num_text)
            continue
        values[name] = shared_float(num_text, bool(pct) and name in PERCENT_FIELDS)
    if "time" in keys:  # v0.5 names the time field: `Time: 73.77s`
        m = TIME_FIELD_RE.search(msg)
        d = parse_duration(m.group(1)) if m else None
        if d is not None:
            values["step_time_s"] = d
    m = TRAINABLE_RE.search(msg)
    if m and int(m.group(2)):
        extra["trainable_frac"] = int(m.group(1)) / int(m.group(2))
    # Several envs add `\t\t ╰─ <env> | Ratio … | Reward … |` continuation lines.
    for line in rec.lines():
        if "╰─" not in line:
            continue
        parts2 = split_fields(line.split("╰─", 1)[1])
        if not parts2:
            continue
        env = (parts2[0][0] + " " + parts2[0][1]).strip() if parts2[0][0] else parts2[0][1]
        for key, value in parts2[1:]:
            num2 = to_float(value)
            if num2 is not None:
                extra[f"{env}/{key.lower()}"] = num2
    return [StepMetrics(role, step, values, origin="log", time=rec.time, extra=extra)]


def _rollout(msg: str, time: str | None) -> Event | None:
    kv = dict(ROLLOUT_KV_RE.findall(msg))
    rid = kv.get("id")
    if rid is None:
        return None
    if msg.startswith("rollout start"):
        return RolloutStart(rid, time)
    stop = kv.get("stop")
    reward = to_float(kv["reward"]) if "reward" in kv else None
    turns = strict_int(kv.get("turns"))
    err = stop if stop and stop not in TRUNCATING_STOPS and stop[:1].isupper() else None
    return RolloutDone(rid, reward, turns, stop, err, time)


def parse_record(rec: Record, role: str) -> list[Event]:
    """Events in one prime-rl record. `role` is the file's role (from its name)."""
    msg = rec.message
    level = rec.level or ""
    t = rec.time
    # Hot path first: the lines a long run writes most.
    if msg.startswith("rollout "):
        ev = _rollout(msg, t)
        return [ev] if ev else []
    if msg.startswith("Train batch "):
        m = BATCH_RE.match(msg)
        if m:
            return [
                BatchProgress(
                    int(m.group(1)),
                    int(m.group(2)),
                    int(m.group(3)) if m.group(3) else None,
                    int(m.group(4)) if m.group(4) else None,
                    t,
                )
            ]
        return []
    if msg.startswith("Step "):
        if STEP_RE.match(msg):
            return _step_line(rec, role)
        m = EMPTY_BATCH_RE.match(msg)
        if m:
            return [Notice(ORCHESTRATOR, "WARNING", Kind.EMPTY_BATCH, msg.strip(), t)]
    if level in ("ERROR", "CRITICAL") or rec.fmt == "orphan":
        if rec.fmt == "glog" and "exitcode" in msg and not has_traceback(rec.lines()):
            # torchrun reporting that a rank died; the rank's own traceback names the cause,
            # unless a signal killed it (`exitcode: -9`: SIGKILL, the OOM killer's).
            notice = error_notice(rec, role, traceback_is_fatal=True)
            if notice is not None and notice.kind != "error" and not notice.wrapper:
                return [notice]
            return [Notice(role, level, "ChildFailedError", msg.strip(), t, fatal=True, wrapper=True, rank=60)]
        if "Inference server is not ready" in msg:
            return [Notice(ORCHESTRATOR, level, Kind.INFERENCE_NOT_READY, msg.strip(), t, fatal=True)]
        notice = error_notice(rec, role, traceback_is_fatal=True)
        out: list[Event] = [notice] if notice else []
        if "failed" in msg and not notice_fatal(notice) and (m := ROLLOUT_FAILED_RE.search(msg)) is not None:
            out.append(RolloutFailed(m.group(1), (m.group(2) or "").strip(), t))
        return out
    if level == "WARNING":
        return _warning(msg, role, t)
    if "max_steps=" in msg and ("Starting" in msg):
        m = MAX_STEPS_RE.search(msg)
        if m:
            return [MaxSteps(int(m.group(1)), role)]
    if msg.startswith("Saving checkpoint"):
        m = SAVE_RE.match(msg)
        if m:
            return [CheckpointSave(role, int(m.group(1)), t)]
    if msg.startswith("Resuming"):
        m = RESUME_RE.match(msg)
        if m:
            return [Resumed(role, int(m.group(1)), t)]
        if msg.startswith("Resuming dispatcher"):
            return [Waiting(ORCHESTRATOR, "", t)]
    if msg.startswith("Detected ") and (m := DETECTED_RE.match(msg)) is not None:
        reasons = {k: v for k, val in COUNT_KV_RE.findall(m.group(3)) if (v := strict_int(val)) is not None}
        return [SampleFilter(int(m.group(1)), int(m.group(2)), reasons, strict_int(m.group(4)), t)]
    if msg.startswith("Orchestrator paused") and (m := PAUSED_RE.match(msg)) is not None:
        # Back-pressure, not a fault: prime-rl says "Training is progressing normally".
        return [Waiting(ORCHESTRATOR, f"trainer checkpoint {m.group(1)} (normal back-pressure)", t)]
    if msg.startswith("Pausing dispatcher"):
        return [Waiting(ORCHESTRATOR, "policy", t)]
    if msg.startswith("Waiting for policy inference pool"):
        return [Waiting(ORCHESTRATOR, "inference", t)]
    if msg.startswith("Policy inference pool ready"):
        return [Waiting(ORCHESTRATOR, "", t)]
    if msg.startswith(("RL trainer finished", "SFT trainer finished", "Training finished", "Orchestrator finished", "Orchestrator step loop done")):
        return [RoleFinished(ORCHESTRATOR if msg.startswith("Orchestrator") else TRAINER, t)]
    if rec.fmt == "stdlib":
        return _env_router(rec, t)
    return []


def notice_fatal(notice: Notice | None) -> bool:
    return notice is not None and notice.fatal


def _warning(msg: str, role: str, t: str | None) -> list[Event]:
    notice = _warning_notice(msg, role, t)
    if "failed" in msg and (m := ROLLOUT_FAILED_RE.search(msg)) is not None:
        return [notice, RolloutFailed(m.group(1), (m.group(2) or "").strip(), t)]
    return [notice]


def _warning_notice(msg: str, role: str, t: str | None) -> Notice:
    text = msg.strip()
    if text.startswith("Inference server was not reached"):
        return Notice(ORCHESTRATOR, "WARNING", Kind.INFERENCE_UNREACHABLE, text, t)
    if text.startswith("Trace failed"):
        m = TRACE_FAILED_RE.match(text)
        kind = f"{Kind.TRACE_FAILED}:{m.group(2)}" if m else Kind.TRACE_FAILED
        return Notice(ORCHESTRATOR, "WARNING", kind, text, t)
    if text.startswith("Dropped") and DROPPED_RE.match(text):
        return Notice(ORCHESTRATOR, "WARNING", Kind.DROPPED_TRACES, text, t)
    if "ulimit" in text:
        return Notice(role, "WARNING", Kind.ULIMIT, text, t)
    if "Worker" in text and "died" in text:
        return Notice(ENV, "WARNING", Kind.ENV_WORKER_DIED, text, t)
    sig = crash_signature(text)
    if sig:
        return Notice(role, "WARNING", sig[0], text, t)
    return Notice(role, "WARNING", "warning", text, t)


def _env_router(rec: Record, t: str | None) -> list[Event]:
    """v0.6 env router: `Active tasks: 128 (W0: 64, W1: 64)` then `  Server | Lag: …`."""
    msg = rec.message
    if msg.startswith("Active tasks"):
        m = ACTIVE_TASKS_RE.match(msg)
        lag: dict[str, float] = {}
        for line in rec.lines():
            if "Server" in line and "Lag:" in line:
                lag = {k: v2 for k, v in LAG_RE.findall(line) if (v2 := strict_float(v)) is not None}
                break
        return [EnvLag(int(m.group(1)) if m else None, lag, t)]
    if "died" in msg and "Worker" in msg:
        return [Notice(ENV, "WARNING", Kind.ENV_WORKER_DIED, msg.strip(), t)]
    return []
