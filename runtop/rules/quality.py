"""The rules about how the run is doing, not whether it lives: checkpoints, disks, the
training signal, rollout quality and the environment (each cites the incident in
docs/incidents.md that drove it)."""

from __future__ import annotations

import math
import os
import statistics

from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import Kind
from runtop.rules.findings import Facts, Finding, _short, _where
from runtop.state.parts import StepRow
from runtop.state.run import RunState
from runtop.units import duration, human_bytes


# ---- checkpoints --------------------------------------------------------------------
def checkpoint_incomplete(f: Facts) -> list[Finding]:
    """A save that did not finish, a `policy/` of only `common.pt`
    (docs/incidents.md#sigbus-save-core-dumps), or one orders of magnitude smaller than the previous
    one."""
    s = f.state
    cks = sorted(s.checkpoints.values(), key=lambda c: c.step)
    if not cks:
        return []
    out = []
    newest = cks[-1].step
    moved_on = (s.trainer_step or 0) > newest or bool(s.open_fatals())
    # A save is being written while the run's processes live and no step came after it: TRL
    # writes `checkpoint-N/` in place, so mid-save it looks like a save missing its last file
    # (a real run was Degraded for a second at every save).
    saving = any(p.name == "save_checkpoints" for p in s.phases) or any(pids for r, pids in (f.alive or {}).items() if r != "ray")
    last_ok = s.last_complete_checkpoint()
    for c in cks:
        if c.complete:
            continue
        in_progress = c.step == newest and not moved_on and (saving or c.problem is Problem.IN_PROGRESS)
        if in_progress:
            continue
        failed_save = c.problem is Problem.FAILED_SAVE
        safe = f"; last complete: step {last_ok.step}" if last_ok else "; no complete checkpoint"
        msg = f"checkpoint step {c.step} is incomplete: {c.reason}{safe}"
        out.append(Finding("checkpoint_incomplete", "critical" if failed_save else "warning", msg, s.relpath(c.path), subject=c.path))
    untracked = [c for c in cks if c.complete and c.problem is Problem.UNTRACKED]
    if untracked:
        # Whole, but the framework's auto-resume reads a file that does not name it (verl's
        # async save never writes its tracker): a bare relaunch silently starts from scratch.
        c = untracked[-1]
        out.append(Finding("checkpoint_incomplete", "warning", f"checkpoint step {c.step}: {c.reason}; resume by its path (R does)",
                           s.relpath(c.path), subject=f"{os.path.dirname(c.path)} untracked"))
    done = [c for c in cks if c.complete and c.bytes > 0]
    for prev, cur in zip(done, done[1:]):
        if cur.bytes < f.cfg.ckpt_shrink_ratio * prev.bytes:
            msg = f"checkpoint step {cur.step} is {human_bytes(cur.bytes)}, step {prev.step} was {human_bytes(prev.bytes)}: the save likely failed"
            out.append(Finding("checkpoint_incomplete", "critical", msg, s.relpath(cur.path), subject=f"{cur.path} shrank"))
    return out


# ---- disk ----------------------------------------------------------------------------------
def disk_pressure(f: Facts) -> list[Finding]:
    """A watched filesystem over 85 %, or full before the next checkpoint; core dumps; no retention."""
    s = f.state
    out = []
    d = f.disk
    if d is not None:
        med = s.median_step_time()
        ckpt_every = (s.ckpt_interval or 1) * med if med else None
        for u in d.disks:
            label = ", ".join(u.labels)
            if u.pct >= f.cfg.disk_crit_pct:
                out.append(Finding("disk_pressure", "critical", f"{label} is {u.pct:.0f}% full ({human_bytes(u.free)} free)", u.path))
            elif u.pct >= f.cfg.disk_warn_pct:
                out.append(Finding("disk_pressure", "warning", f"{label} is {u.pct:.0f}% full ({human_bytes(u.free)} free)", u.path))
            elif u.full_in_s is not None and ckpt_every is not None and u.full_in_s < ckpt_every:
                out.append(Finding("disk_pressure", "warning", f"{label} will be full in {duration(u.full_in_s)}, before the next checkpoint", u.path))
        if d.core_dumps:
            total = sum(n for _, n in d.core_dumps)
            sev = "warning" if total >= f.cfg.core_dump_warn_bytes else "info"
            msg = f"{len(d.core_dumps)} core dump(s), {human_bytes(total)}: they can fill the disk (set `ulimit -c 0`)"
            out.append(Finding("disk_pressure", sev, msg, d.core_dumps[0][0]))
    n = len(s.checkpoints)
    if s.keep_last is None and n > f.cfg.max_checkpoints_without_retention:
        total = sum(c.bytes for c in s.checkpoints.values())
        out.append(Finding("disk_pressure", "info", f"{n} checkpoints ({human_bytes(total)}) and no retention set (keep_last / max_ckpts_to_keep)", "checkpoints"))
    return out


# ---- the training signal -----------------------------------------------------------------
def _series(s: RunState, column: str, window: int = 50) -> list[tuple[int, float]]:
    return s.value_series(column, window)


def training_signal(f: Facts) -> list[Finding]:
    """Entropy sliding (7.45 → 6.91 → 6.16 in docs/incidents.md#sigbus-save-core-dumps), grad-norm
    or KL spikes, reward collapse, NaN loss."""
    s = f.state
    cfg = f.cfg
    out = []
    last = s.last_row()
    if last is not None:
        bad = sorted(k for k, v in last.trainer.items() if isinstance(v, float) and not math.isfinite(v) and k in ("loss", "entropy", "grad_norm", "kl"))
        if bad:
            out.append(Finding("training_signal", "critical", f"{', '.join(bad)} is not finite at step {last.step}", f"step {last.step}"))
    ent = [(st, v) for st, v in _series(s, "entropy") if math.isfinite(v)]
    if ent:
        st, v = ent[-1]
        if v < cfg.entropy_floor:
            out.append(Finding("training_signal", "warning", f"entropy {v:.4g} is below the floor {cfg.entropy_floor:g} at step {st}", f"step {st}"))
        w = cfg.entropy_window
        if len(ent) > w:
            tail = ent[-(w + 1) :]
            falling = all(b[1] < a[1] for a, b in zip(tail, tail[1:]))
            first = tail[0][1]
            rate = (first - tail[-1][1]) / (w * abs(first)) if first else 0.0
            if falling and rate >= cfg.entropy_drop_per_step:
                msg = f"entropy falling {rate * 100:.0f}%/step for {w} steps: {first:.4g} → {tail[-1][1]:.4g}"
                out.append(Finding("training_signal", "warning", msg, f"steps {tail[0][0]}-{tail[-1][0]}"))
    for column, label, k in (("grad_norm", "grad norm", cfg.grad_norm_spike), ("kl", "KL", cfg.kl_spike)):
        ser = [(st, v) for st, v in _series(s, column) if math.isfinite(v)]
        if len(ser) >= 6:
            base = statistics.median(v for _, v in ser[:-1][-20:])
            st, v = ser[-1]
            if base > 0 and v > k * base:
                out.append(Finding("training_signal", "warning", f"{label} spike: {v:.4g} at step {st}, {v / base:.1f}× the median {base:.4g}", f"step {st}"))
    rew = [(st, v) for st, v in _series(s, "reward", 20) if math.isfinite(v)]
    if len(rew) >= 5:
        best = max(v for _, v in rew)
        st, v = rew[-1]
        if best > 0 and v < cfg.reward_collapse * best:
            out.append(Finding("training_signal", "warning", f"reward collapsed to {v:.4g} at step {st} from a best of {best:.4g}", f"step {st}"))
    out.extend(_no_signal(s))
    return out


# Steps in a row with nothing to learn from before it is said: one such batch happens.
NO_SIGNAL_STEPS = 3
_ZERO = 1e-9


def _first(d: dict[str, float], *keys: str) -> float | None:
    return next((d[k] for k in keys if k in d), None)


def no_signal_in(row: StepRow) -> str | None:
    """Why a step carried no learning signal, in the run's own keys, or None: every advantage 0
    (verl's `critic/advantages/max` = `min` = 0), every sample scored the same (`critic/score/max`
    = `min`), or every group's rewards identical (TRL's `reward_std` 0, `frac_reward_zero_std` 1).
    Group-relative methods (GRPO, RLOO) learn nothing from such a batch."""
    ex = row.extra
    amax = _first(ex, "critic/advantages/max", "advantages/max", "advantage/max")
    amin = _first(ex, "critic/advantages/min", "advantages/min", "advantage/min")
    if amax is not None and amin is not None and abs(amax) < _ZERO and abs(amin) < _ZERO:
        return "every advantage is 0"
    smax, smin = _first(ex, "critic/score/max", "reward/max", "rewards/max"), _first(ex, "critic/score/min", "reward/min", "rewards/min")
    if smax is not None and smin is not None and abs(smax - smin) < _ZERO:
        return f"every sample scored {smax:g} (reward has zero spread)"
    std = _first(ex, "reward_std", "rewards/std", "reward/std")
    if std is not None and abs(std) < _ZERO:
        return "reward has zero spread across the batch (reward_std 0)"
    frac = ex.get("frac_reward_zero_std")
    if frac is not None and frac >= 1 - _ZERO:
        return "every group's rewards are identical (frac_reward_zero_std 1)"
    return None


def _no_signal(s: RunState) -> list[Finding]:
    rows = [r for r in s.rows(NO_SIGNAL_STEPS) if r.attempt == s.attempt]
    if len(rows) < NO_SIGNAL_STEPS:
        return []
    why = [no_signal_in(r) for r in rows]
    if not all(why):
        return []
    first, last = rows[0].step, rows[-1].step
    trunc = last_row_truncated(rows[-1])
    msg = f"no learning signal for {len(rows)} steps ({first}-{last}): {why[-1]}" + (f"; {trunc}" if trunc else "")
    return [Finding("training_signal", "warning", msg, f"steps {first}-{last}", subject="no signal")]


def last_row_truncated(row: StepRow) -> str | None:
    """`every response truncated at the length limit` when the step says so: the usual reason
    every sample scores the same (a format penalty for a cut answer)."""
    t = row.value("truncated")
    return "every response truncated at the length limit" if t is not None and t >= 0.999 else None


# ---- rollout quality ------------------------------------------------------------------------
def rollout_quality(f: Facts) -> list[Finding]:
    """Format failures, errored or truncated rollouts, context overflows and timeouts above their rates."""
    s = f.state
    cfg = f.cfg
    out = []
    n = s.agent.trajectories
    if n >= 10:
        fails = sum(s.agent.format_failures.values())
        if fails / n >= cfg.format_failure_rate:
            rules = ", ".join(f"Rule {k} ×{v}" for k, v in sorted(s.agent.format_failures.items()))
            out.append(Finding("rollout_quality", "warning", f"format failures in {fails}/{n} trajectories ({fails / n:.0%}): {rules}", "agent warnings"))
        if s.context_overflows / n >= cfg.context_overflow_rate:
            out.append(Finding("rollout_quality", "warning", f"context overflows in {s.context_overflows}/{n} trajectories", "agent warnings"))
        if s.slow_calls.timeouts / n >= cfg.timeout_rate:
            out.append(Finding("rollout_quality", "warning", f"tool timeouts: {s.slow_calls.timeouts} in {n} trajectories", "agent warnings"))
    r = s.rollouts
    if r.total >= 10:
        if r.errored / r.total >= cfg.errored_rate:
            kinds = ", ".join(f"{k} ×{v}" for k, v in r.by_error.most_common(3))
            out.append(Finding("rollout_quality", "warning", f"{r.errored}/{r.total} rollouts errored ({kinds})", "rollout files"))
        if r.truncated / r.total >= cfg.truncated_rate:
            out.append(Finding("rollout_quality", "warning", f"{r.truncated}/{r.total} rollouts truncated", "rollout files"))
    row = s.last_row()
    if row is not None and (e := row.rollout.get("error_rate")) is not None and e >= cfg.errored_rate:
        out.append(Finding("rollout_quality", "warning", f"{e:.0%} of the last step's rollouts errored", f"step {row.step}"))
    return out


# ---- the environment -----------------------------------------------------------------------
def environment(f: Facts) -> list[Finding]:
    """`ulimit` warnings and too many open files (docs/incidents.md#vllm-dies-silently), and error
    kinds never seen before."""
    s = f.state
    out = []
    if s.warnings.get(Kind.ULIMIT):
        out.append(Finding("environment", "warning", _short(s.last_warning.get(Kind.ULIMIT, "ulimit too low"), 140), "warning"))
    fds = [e for e in s.errors if e.kind == Kind.TOO_MANY_OPEN_FILES or "Too many open files" in e.message]
    if fds:
        out.append(Finding("environment", "critical", f"too many open files: {_short(fds[-1].message, 100)}", _where(s, fds[-1]), fds[-1].time))
    return out




def notify_failing(f: Facts) -> list[Finding]:
    """An alert target that refuses, hangs or is misconfigured: the researcher believes they
    will be paged and will not be. Info: it says nothing about the run's own health."""
    return [Finding("notify", "info", f"alerts not delivered: {p}", "notify", subject=p.split(":", 1)[0]) for p in f.notify_problems]
