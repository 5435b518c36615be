"""prime-rl `metrics.jsonl` rows → `StepMetrics` (docs/formats.md, "metrics.jsonl").

The trainer writes several rows per step and the orchestrator one, interleaved in
one file; each row is attributed to its role by its keys, so both roles' `time/step`
stay apart.
"""

from __future__ import annotations

from .events import ORCHESTRATOR, TRAINER, Event, StepMetrics, Unrecognised
from .metrics_generic import json_row

ORCH_PREFIXES = ("train/", "progress/", "off_policy/", "eval/", "batch/", "scheduler/", "reward/", "seq_len/", "is_truncated/")
TRAINER_PREFIXES = ("loss/", "entropy/", "optim/", "perf/", "mismatch_kl/", "system/", "is_masked", "kl_ent_ratio", "masked_")

# canonical name → keys in order of preference (newest release first, legacy last).
ORCH_KEYS = {
    "reward": ("train/agg/effective/agent/reward/mean", "reward/all/mean"),
    "reward_all": ("train/agg/all/agent/reward/mean",),
    "seq_len": ("train/agg/all/num_total_tokens/mean", "seq_len/all/mean"),
    "truncated": ("train/agg/all/agent/is_truncated/mean", "is_truncated/all/mean"),
    "error_rate": ("train/agg/all/has_error/mean",),
    "cancelled": ("train/agg/all/cancelled/mean",),
    "turns": ("train/agg/all/num_turns/mean",),
    "off_policy_max": ("off_policy/max",),
    "async_level": ("scheduler/async_level",),
    "rollouts": ("progress/rollouts",),
    "step_time_s": ("time/step",),
}
TRAINER_KEYS = {
    "loss": ("loss/mean",),
    "entropy": ("entropy/all/mean",),
    "kl": ("mismatch_kl/all/mean",),
    "grad_norm": ("optim/grad_norm",),
    "lr": ("optim/lr",),
    "throughput_tok_s": ("perf/throughput",),
    "mfu": ("perf/mfu",),
    "peak_mem_gib": ("perf/peak_memory",),
    "step_time_s": ("time/step",),
    "ckpt_disk_free_ratio": ("system/ckpt_disk_free_ratio",),
}
ORCH_TIME_KEYS = ("time/wait_for_policy", "time/wait_for_ckpt", "time/generate_completions", "time/update_weights")
TRAINER_TIME_KEYS = ("time/wait_for_batch", "time/forward_backward", "time/broadcast_weights", "time/save_ckpt", "time/load_data")



def _role_of(row: dict[str, object]) -> str | None:
    for key in row:
        if key.startswith(ORCH_PREFIXES) or key in ORCH_TIME_KEYS:
            return ORCHESTRATOR
        if key.startswith(TRAINER_PREFIXES) or key in TRAINER_TIME_KEYS:
            return TRAINER
    return None


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def parse_line(line: str | bytes, source: str = "metrics.jsonl") -> Event | None:
    """One row → `StepMetrics`; a row of unknown shape → `Unrecognised`; blank → None."""
    got = json_row(line, source)
    if got is None or isinstance(got, Unrecognised):
        return got
    step, row = got
    role = _role_of(row)
    if role is None:
        return Unrecognised(source, "no known metric keys")
    table = ORCH_KEYS if role == ORCHESTRATOR else TRAINER_KEYS
    values: dict[str, float] = {}
    for name, keys in table.items():
        for key in keys:
            v = _num(row.get(key))
            if v is not None:
                values[name] = v
                break
    phases: dict[str, float] = {}
    for key in ORCH_TIME_KEYS if role == ORCHESTRATOR else TRAINER_TIME_KEYS:
        v = _num(row.get(key))
        if v is not None:
            phases[key.split("/", 1)[1]] = v
    extra: dict[str, float] = {}
    for key, raw in row.items():
        if key.startswith("eval/") or key.startswith("train/agg/all/agent/error/"):
            n = _num(raw)
            if n is not None:
                extra[key] = n
    return StepMetrics(role, int(step), values, phases, origin="metrics", extra=extra)
