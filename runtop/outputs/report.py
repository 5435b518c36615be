"""`RunState` → the check-in (STATUS.md shape); the JSON document is `report_json`'s.

Unknown values are "n/a", never 0. Every string that
leaves runtop passes through `public` (docs/formats.md: shell traces print API keys; and logs
carry escape sequences).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import statistics
from collections.abc import Callable

from runtop.frameworks import get as get_framework
from runtop.parsers.columns import STEP_COLUMNS
from runtop.parsers.hygiene import public, shown
from runtop.parsers.numbers import finite
from runtop.rules.advice import advise
from runtop.rules.health import Verdict
from runtop.state.parts import StepRow
from runtop.state.run import RunState
from runtop.units import duration, human_bytes


def sample_filter_text(state: RunState) -> str | None:
    """prime-rl's `Detected 97/128 rollouts (gibberish=2, zero_advantage=95)` as an expert reads
    it: most of a batch carrying no learning signal (reward saturated), a note, not an alarm."""
    sf = state.sample_filter
    if sf is None or not sf.total:
        return None
    why = ", ".join(f"{k}={v}" for k, v in sorted(sf.reasons.items(), key=lambda kv: -kv[1]))
    return f"{sf.flagged / sf.total:.0%} of the batch carries no signal ({why} of {sf.total})"


# ---- markdown check-in --------------------------------------------------------
def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    if v != 0 and (abs(v) < 10 ** -(digits) or abs(v) >= 1e6):
        return f"{v:.2e}"
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{v:.{digits}f}" else f"{v:.{digits}f}"


def _series(rows: list[StepRow], name: str) -> list[tuple[int, float]]:
    return [(r.step, v) for r in rows if (v := r.value(name)) is not None and math.isfinite(v)]


def _trend(rows: list[StepRow], name: str, label: str, digits: int = 3, pct: bool = False) -> str | None:
    s = _series(rows, name)
    if not s:
        return None
    conv: Callable[[float], str] = (lambda x: f"{x * 100:.1f}%") if pct else (lambda x: _fmt(x, digits))
    if len(s) == 1:
        return f"{label} {conv(s[0][1])} (step {s[0][0]})"
    lo = min(v for _, v in s)
    hi = max(v for _, v in s)
    if lo == hi:
        return f"{label} {conv(lo)} (steady, steps {s[0][0]}-{s[-1][0]})"
    return f"{label} {conv(s[0][1])} -> {conv(s[-1][1])} (range {conv(lo)}-{conv(hi)}, steps {s[0][0]}-{s[-1][0]})"


# The step table the run notes in docs/incidents.md kept by hand; a column shows only when some row has it.
def step_table(rows: list[StepRow], last: int = 10) -> list[str]:
    rows = rows[-last:]
    cols = [(c.name, c.label, c.digits) for c in STEP_COLUMNS if any(finite(r.value(c.name)) is not None for r in rows)]
    if not rows or not cols:
        return []

    def cell(r: StepRow, name: str, digits: int) -> str:
        v = finite(r.value(name))
        if v is None:
            return "n/a"
        return f"{v:.0f}s" if name == "step_time_s" else _fmt(v, digits)

    out = ["| step | " + " | ".join(c[1] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for r in rows:
        out.append(f"| {r.step} | " + " | ".join(cell(r, c[0], c[2]) for c in cols) + " |")
    return out


def _agent_lines(state: RunState) -> list[str]:
    """skyrl-agent's layer, in the words of the check-ins in docs/incidents.md#sigbus-save-core-dumps."""
    a = state.agent
    out = []
    fw = get_framework(state.framework)
    if state.batch is not None and fw.batch_is_agent_layer:
        out.append(f"{fw.batch_words} {state.batch.done}/{state.batch.total or '?'}")
    for kind in ("ft", "gt"):
        r = a.rewards.get(kind)
        if r and r[0]:
            out.append(f"{kind}_reward pass {r[1] / r[0] * 100:.0f}% ({int(r[1])}/{int(r[0])})")
    if a.format_failures:
        out.append("format failures " + ", ".join(f"Rule {n} ×{c}" for n, c in sorted(a.format_failures.items())))
    return out


def _env_lines(state: RunState) -> list[str]:
    out = []
    sc = state.slow_calls
    if sc.count:
        top = sorted(sc.by_function.items(), key=lambda kv: -kv[1].count)[:4]
        parts = [f"{name} ×{fc.count} (max {fc.max_s:.0f}s)" for name, fc in top]
        out.append(f"{sc.count} slow tool calls (>{sc.threshold_s:.0f}s): " + ", ".join(parts))
    if sc.timeouts:
        out.append(f"{sc.timeouts} tool timeouts")
    if state.context_overflows:
        out.append(f"{state.context_overflows} context overflows")
    if state.agent.code_errors:
        errs = ", ".join(f"{k} ×{n}" for k, n in state.agent.code_errors.most_common(4))
        out.append(f"agent code errors (model behaviour, not infrastructure): {errs}")
    return out


def to_markdown(state: RunState, verdict: Verdict, now: _dt.datetime | None = None) -> str:
    """The check-in of a run: its state, and the verdict the engine judged of it (`runtop.engine.engine`:
    every face takes its verdict from there)."""
    v = verdict
    now = now or _dt.datetime.now(_dt.timezone.utc)
    rows = state.rows()
    out = [f"## {now:%Y-%m-%d %H:%M} UTC", ""]
    out.append(f"**Step**: {state.step_text().removeprefix('step ')}")
    health = v.verdict + (f" — {'; '.join(v.reasons)}" if v.reasons else "")
    out.append(f"**Health**: {health}")
    advice = advise(state, v)
    if advice is not None:
        # The band's `next:`, word for word (one Advice for every face: docs/design.md).
        out.append(f"**Next step**: {advice.text}" + (f" (`runtop send {advice.action}`)" if advice.action else ""))
    if state.detection:
        out.append(f"**Read as**: {state.detection}")
    phase = state.current_phase()
    if phase:
        out.append(f"**Phase**: {phase}")
    if v.alerts:
        out.append("**Alerts**:")
        for a in v.alerts:
            where = f" ({a.evidence})" if a.evidence else ""
            out.append(f"- {a.label} · {a.rule} · since {a.since or 'n/a'}: {a.message}{where}")
    out.append("")
    table = step_table(rows)
    if table:
        out.extend(table)
        out.append("")

    progress = [t for t in (
        _trend(rows, "reward", "reward/mean"),
        _trend(rows, "seq_len", "seq_len", 1),
    ) if t]
    trunc = [x for r in rows if (x := r.rollout.get("truncated")) is not None]
    if trunc:
        progress.append(f"truncation {min(trunc) * 100:.1f}-{max(trunc) * 100:.1f}%")
    errs = [x for r in rows if (x := r.rollout.get("error_rate")) is not None]
    if errs:
        progress.append(f"errored rollouts {min(errs) * 100:.1f}-{max(errs) * 100:.1f}%")
    fw = get_framework(state.framework)
    if state.batch and not fw.batch_is_agent_layer:
        progress.append(f"{fw.batch_words} {state.batch.done}/{state.batch.total or '?'}")
    note = sample_filter_text(state)
    if note:
        progress.append(note)
    progress.extend(_agent_lines(state))
    r = state.rollouts
    if r.total:
        progress.append(f"rollout files (steps {', '.join(map(str, sorted(r.steps))) or 'n/a'}): {r.total} episodes, {r.errored} errored, {r.truncated} truncated")
    out.append(f"**Progress**: {'; '.join(progress) if progress else 'no step metrics yet'}.")

    stability = [t for t in (
        _trend(rows, "entropy", "entropy", 4),
        _trend(rows, "kl", "mismatch_kl", 4),
        _trend(rows, "grad_norm", "grad_norm", 4),
        _trend(rows, "loss", "loss", 4),
    ) if t]
    out.append(f"**Stability**: {'; '.join(stability) if stability else 'no trainer metrics yet'}.")

    perf = []
    t_times = [r.trainer["step_time_s"] for r in rows if "step_time_s" in r.trainer]
    o_times = [r.rollout["step_time_s"] for r in rows if "step_time_s" in r.rollout]
    if t_times:
        perf.append(f"trainer ~{statistics.median(t_times):.0f}s/step (step {state.trainer_step})")
    if o_times:
        perf.append(f"{fw.rollout_role} ~{statistics.median(o_times):.0f}s/step (step {state.rollout_step})")
    eta = state.eta_s()
    if eta is not None and v.verdict != "Down" and not state.run_finished():
        perf.append(f"ETA {duration(eta, ' ')}")
    thr = _series(rows, "throughput_tok_s")
    if thr:
        perf.append(f"throughput {thr[-1][1]:.0f} tok/s")
    if state.waiting:
        perf.append("waiting: " + ", ".join(f"{k} on {w}" for k, w in sorted(state.waiting.items())))
    if state.vllm:
        vl = state.vllm
        perf.append(
            f"vLLM (from log, {vl.time or 'n/a'}): running {vl.running if vl.running is not None else 'n/a'}, "
            f"waiting {vl.waiting if vl.waiting is not None else 'n/a'}, KV cache {_fmt(vl.kv_cache_pct, 1)}%"
        )
    if state.env.durations:
        perf.append(f"env rollout p50 {statistics.median(state.env.durations):.0f}s, max {max(state.env.durations):.0f}s")
    perf.extend(_env_lines(state))
    out.append(f"**Performance**: {'; '.join(perf) if perf else 'n/a'}.")

    notes = []
    for e in list(state.errors)[-3:]:
        notes.append(f"{e.kind} at {e.time or '?'} in {state.relpath(e.source)}: {e.message[:200]}")
    if state.error_count > 3:
        notes.append(f"{state.error_count} errors in all")
    if state.warnings:
        notes.append("warnings: " + ", ".join(f"{k} ×{n}" for k, n in state.warnings.most_common(6)))
    for kind, (t, msg) in state.events.items():
        notes.append(f"{kind} at {t or '?'}: {msg[:120]}")
    if state.checkpoints:
        parts = [
            f"{os.path.basename(c.path)} ({human_bytes(c.bytes)}) {'complete' if c.complete else 'INCOMPLETE (' + c.reason + ')'}"
            for c in sorted(state.checkpoints.values(), key=lambda c: c.step)
        ]
        last = state.last_complete_checkpoint()
        notes.append("checkpoints: " + ", ".join(parts) + (f"; last complete: {os.path.basename(last.path)}" if last else "; none complete"))
    if state.checkpoint_dir and not state.checkpoints:
        notes.append(f"no checkpoints yet in {state.checkpoint_dir}")
    if len(state.attempts) > 1:
        notes.append("attempts: " + "; ".join(f"#{a.number} {a.reason}" for a in state.attempts))
    if state.lost_steps:
        notes.append(f"{len(state.lost_steps)} step(s) of earlier attempts were redone (kept as lost)")
    for f in state.files.values():
        if f.error:
            notes.append(f"cannot read {state.relpath(f.path)}: {shown(f.error)}")
        if f.unparsed:
            notes.append(
                f"{f.unparsed} record(s) of {state.relpath(f.path)} could not be parsed and were skipped"
                f" (last: line {f.unparsed_line}, {f.unparsed_reason})"
            )
    notes.extend(state.notes)
    for path, why in state.unrecognised.items():
        notes.append(f"not recognised: {state.relpath(path)} ({why})")
    if notes:
        out.append("**Notes**: " + " | ".join(notes))
    return public("\n".join(out)) + "\n"
