"""The health rules: each a pure function of the run's facts, returning findings.

A finding names its rule, a severity (info / warning / critical), a one-line cause
and its evidence (file and log time, or the value). `down` marks the findings that
mean the run is not training any more. Thresholds come from `runtop.config`. The
rules are what the seeds' authors did by hand each hour (see `../shared/seeds/`):
each cites the incident that drove it.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from runtop.config import Thresholds
from runtop.frameworks import get as get_framework
from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import Kind
from runtop.sources.disk import DiskSnapshot
from runtop.sources.gpu import GpuSnapshot
from runtop.state import ErrorEntry, RunState, clock_diff
from runtop.units import duration, human_bytes

ROLE_NAMES = {
    "trainer": "trainer",
    "orchestrator": "orchestrator",
    "inference": "inference server (vLLM)",
    "env": "env server",
    "launcher": "launcher",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # "info" | "warning" | "critical"
    message: str
    evidence: str | None = None
    since: str | None = None
    down: bool = False  # the run is not training any more
    # For a death (issue 12): the cause an expert names, the wrapper that reported it, the open phase.
    cause: str | None = None
    wrapper: str | None = None
    phase: str | None = None

    @property
    def key(self) -> str:
        """What makes two findings the same incident (for transitions): rule and cause, not the numbers."""
        return f"{self.rule}:{self.message.split(':', 1)[0][:60]}"


@dataclass
class Facts:
    state: RunState
    now: float  # wall clock, seconds since the epoch
    cfg: Thresholds
    disk: DiskSnapshot | None = None
    gpu: GpuSnapshot | None = None
    missing_roles: list[str] = field(default_factory=list)  # from the process sampler, when there is one
    zombie_roles: list[str] = field(default_factory=list)

    @property
    def alive(self) -> dict[str, list[int]] | None:
        """role → pids, or None when the process table was not read or cannot be trusted:
        titled processes runtop may not inspect (another user's) could be this run's, so
        their absence proves nothing (issue 10)."""
        if self.state.process_denied:
            return None
        return self.state.processes

    def newest_write(self) -> float | None:
        return max(self.state.write_times(), default=None)

    def oldest_write(self) -> float | None:
        return min(self.state.write_times(), default=None)

    def booting(self) -> bool:
        """Within the grace period of a start: nothing has finished a step yet and the files are young."""
        if self.state.current_step() is not None:
            return False
        oldest = self.oldest_write()
        return oldest is None or self.now - oldest < self.cfg.grace_s

    def finished(self) -> bool:
        return self.state.run_finished()


def _where(state: RunState, e: ErrorEntry) -> str:
    return f"{state.relpath(e.source)} {e.time or ''}".strip()


def _short(text: str, n: int = 110) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---- crash ----------------------------------------------------------------------
def crash(f: Facts) -> list[Finding]:
    """A fatal error ends a log and the role's process is gone (seed 000 SIGBUS, the OOM sample).

    The cause is the most specific error of the death, not the wrapper that reported it
    (`runtop.causes`); a death an engine or NCCL announces is Down even while the
    process still answers.
    """
    s = f.state
    fatals = s.open_fatals()
    if not fatals:
        return []
    first = min(fatals, key=lambda e: (not e.certain and e.rank >= 40, e.time or "99"))
    role = ROLE_NAMES.get(first.role, first.role)
    detail = first.message
    if detail.startswith("Fatal error") and ": " in detail:
        detail = detail.split(": ", 1)[1]  # the exception says more than "Fatal error in train"
    who = f"in {first.actor}{f' pid {first.pid}' if first.pid else ''}" if first.actor and first.actor not in role else None
    during = f" during {first.phase}" if first.phase else ""
    cause = f"{first.kind}{during} ({_short(detail, 100)})"
    context = "".join(
        f"; {part}" for part in (first.hint, who, f"reported as {first.wrapped_by}" if first.wrapped_by else None) if part
    )
    alive = f.alive or {}
    running = sorted(r for r, pids in alive.items() if pids)
    if not alive.get(first.role) or first.certain:
        if f.alive is None:
            tail = "its process could not be checked" + (f" ({_denied_text(s)})" if s.process_denied else "")
        elif alive.get(first.role):
            tail = "its process is still up but cannot recover"
        else:
            tail = "no run process alive" if not running else f"still running: {', '.join(running)}"
        msg = f"{role} died: {cause}{context}; {tail}"
        return [Finding("crash", "critical", msg, _where(s, first), first.time, down=True, cause=first.kind, wrapper=first.wrapped_by, phase=first.phase)]
    msg = f"{role} logged a fatal {first.kind} but its process is still alive ({_short(detail, 80)}){context}"
    return [Finding("crash", "warning", msg, _where(s, first), first.time, cause=first.kind, wrapper=first.wrapped_by, phase=first.phase)]


# ---- processes --------------------------------------------------------------------
def role_missing(f: Facts) -> list[Finding]:
    """An expected process is gone or a zombie while the others run (inference has its own rule)."""
    alive = f.alive
    if alive is None or f.finished() or f.booting():
        return []
    running = sorted(r for r, p in alive.items() if p and r != "ray")
    if not running:
        return []
    expected = set(get_framework(f.state.framework).expected_roles) | set(f.missing_roles) | set(f.zombie_roles)
    # A role whose log ends in a fatal error is the crash rule's to report.
    crashed = {e.role for e in f.state.open_fatals()}
    out = []
    for role in sorted(expected - set(running) - crashed - {"inference", "ray", "launcher"}):
        how = "a zombie" if role in f.zombie_roles else "not running"
        msg = f"{ROLE_NAMES.get(role, role)} process is {how} while {', '.join(running)} run"
        out.append(Finding("role_missing", "critical", msg, "process table", down=True))
    return out


def inference_dead(f: Facts) -> list[Finding]:
    """vLLM stopped while the trainer waits (seed 002): its process gone, or the orchestrator
    retrying `Inference server was not reached`."""
    s = f.state
    # A framework that launches vLLM itself always has it; elsewhere (SkyRL's engines are Ray
    # actors) only once it was seen.
    expects_inference = (
        get_framework(s.framework).launches_inference or "inference" in (f.alive or {}) or "inference" in f.missing_roles
    )
    if f.finished() or not expects_inference:
        return []
    alive = f.alive
    others = sorted(r for r, p in (alive or {}).items() if p and r in ("trainer", "orchestrator"))
    last_err = next((e for e in reversed(s.errors) if e.role == "inference"), None)
    cause = f" after {last_err.kind} ({_short(last_err.message, 60)})" if last_err else ""
    if alive is not None and not alive.get("inference") and others and not f.booting():
        msg = f"vLLM (inference) process is gone while {' and '.join(others)} wait{cause}"
        return [Finding("inference_dead", "critical", msg, _where(s, last_err) if last_err else "process table", last_err.time if last_err else None, down=True)]
    gpu = f.gpu
    pids = set((alive or {}).get("inference") or [])
    if gpu is not None and gpu.gpus and pids and others:
        held = {p.pid: p.used_bytes for g in gpu.gpus for p in g.processes}
        if not any((held.get(pid) or 0) > 1 << 30 for pid in pids):
            msg = f"vLLM is running but holds no GPU memory while {' and '.join(others)} wait: its engine has likely died{cause}"
            return [Finding("inference_dead", "critical", msg, "NVML", None, down=True)]
    n = s.warnings.get(Kind.INFERENCE_UNREACHABLE, 0)
    if n:
        text = s.last_warning.get(Kind.INFERENCE_UNREACHABLE, "")
        secs = _seconds_in(text)
        if secs is not None and secs >= f.cfg.inference_unreachable_s:
            msg = f"orchestrator cannot reach vLLM: {_short(text, 90)} ({n} retries){cause}"
            return [Finding("inference_dead", "critical", msg, "orchestrator log", None, down=alive is not None and not alive.get("inference"))]
    return []


AFTER_SECONDS_RE = re.compile(r"after (\d+(?:\.\d+)?) seconds")


def _seconds_in(text: str) -> float | None:
    m = AFTER_SECONDS_RE.search(text)
    return float(m.group(1)) if m else None


# ---- progress -----------------------------------------------------------------------
def stalled(f: Facts) -> list[Finding]:
    """No step for k × the median step time, or no write at all (a reclaimed pod: seed 003)."""
    s = f.state
    if f.finished() or s.open_fatals():
        return []  # a crash explains the silence; the crash rule says so
    newest = f.newest_write()
    if newest is None or f.booting():
        return []
    quiet = f.now - newest
    med = s.median_step_time()
    limit = max(f.cfg.stall_min_s, f.cfg.stall_k * med if med else 0.0)
    waiting = _waiting_on(s)
    alive = f.alive
    if quiet >= max(f.cfg.silence_s, limit):
        nobody = alive is not None and not any(p for r, p in alive.items() if r != "ray")
        msg = f"no log write anywhere for {duration(quiet)}" + ("; no run process alive: the pod or job may be gone" if nobody else (f"; {waiting}" if waiting else ""))
        return [Finding("stalled", "critical", msg, f"newest write {duration(quiet)} ago", None, down=nobody)]
    # The logs go on but the steps do not (waiting on something).
    last_step_t, newest_t = s.last_step_time, _newest_log_time(s)
    if last_step_t and newest_t:
        gap = clock_diff(last_step_t, newest_t)
        if gap >= limit:
            msg = f"no step for {duration(gap)} (> {f.cfg.stall_k:g} × median step {duration(med) if med else 'n/a'})" + (f"; {waiting}" if waiting else "")
            return [Finding("stalled", "warning", msg, f"last step at {last_step_t}, log at {newest_t}", last_step_t)]
    return []


def _waiting_on(s: RunState) -> str:
    for role, on in sorted(s.waiting.items()):
        return f"{role} waiting on {on}"
    if s.batch is not None and s.batch.inflight == 0 and s.batch.done < (s.batch.total or 1):
        return "waiting on env: no rollouts in flight"
    return ""


def _newest_log_time(s: RunState) -> str | None:
    times = [f.last_time for f in s.files.values() if f.kind == "log" and f.last_time]
    return max(times) if times else None


def rollouts_hung(f: Facts) -> list[Finding]:
    """Batches stuck at 0/N while vLLM rejects every request (seeds 002/004: `max_tokens` too large)."""
    s = f.state
    rejects = [e for e in s.errors if e.kind == Kind.MAX_TOKENS_TOO_LARGE]
    if not rejects:
        return []
    stuck = s.batch is None or s.batch.done == 0
    if not stuck:
        return []
    e = rejects[-1]
    at = f"{s.batch.done}/{s.batch.total}" if s.batch else "0/?"
    msg = f"rollouts hung at {at}: vLLM rejects requests: {_short(e.message, 120)}"
    return [Finding("rollouts_hung", "critical", msg, _where(s, e), e.time)]


def rollouts_failing(f: Facts) -> list[Finding]:
    """Stuck without an ERROR: every rollout fails with one error type and is retried forever
    while the batch does not move (`0/4`, `HarnessError: harness 'null' exited 1`). Degraded
    at once, Down once it has lasted the stall time (FORMATS.md, "What genuine output adds")."""
    s = f.state
    everything = list(s.rollouts_since_step)
    # The orchestrator and the env server report the same rollouts: count one source's.
    by_source = Counter(src for *_, src in everything)
    source = max(by_source, key=lambda src: (by_source[src], src == "orchestrator"), default=None)
    recent = [e for e in everything if e[3] == source]
    window = recent[-f.cfg.rollout_fail_window :]
    if len(window) < f.cfg.rollout_fail_min or f.finished():
        return []
    kinds = Counter(k for k, *_ in window if k)
    if not kinds:
        return []
    kind, n = kinds.most_common(1)[0]
    if n / len(window) < f.cfg.rollout_fail_share:
        return []
    # The words of the failure (`harness 'null' exited 1`), not an env server's bare `stop=` type.
    last = next((m for k, _, m, _ in reversed(everything) if k == kind and m and m != kind), "")
    times = [t for _, t, *_ in recent if t]
    span = clock_diff(times[0], times[-1]) if len(times) >= 2 else 0.0
    at = f"batch at {s.batch.done}/{s.batch.total}" if s.batch is not None else "no step since"
    msg = (f"stuck: {n} of the last {len(window)} rollouts failed with {kind}"
           f"{f' ({_short(last, 70)})' if last else ''}; {at}, retried for {duration(span)}")
    down = span >= max(f.cfg.stall_min_s, 1.0)
    return [Finding("rollouts_failing", "critical" if down else "warning", msg, "orchestrator/env logs",
                    times[0] if times else None, down=down, cause=kind)]


# ---- checkpoints --------------------------------------------------------------------
def checkpoint_incomplete(f: Facts) -> list[Finding]:
    """A save that did not finish, a `policy/` of only `common.pt` (seed 000), or one orders of
    magnitude smaller than the previous one."""
    s = f.state
    cks = sorted(s.checkpoints.values(), key=lambda c: c.step)
    if not cks:
        return []
    out = []
    newest = cks[-1].step
    moved_on = (s.trainer_step or 0) > newest or bool(s.open_fatals())
    saving = any(p.name == "save_checkpoints" for p in s.phases)
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
        out.append(Finding("checkpoint_incomplete", "critical" if failed_save else "warning", msg, s.relpath(c.path)))
    done = [c for c in cks if c.complete and c.bytes > 0]
    for prev, cur in zip(done, done[1:]):
        if cur.bytes < f.cfg.ckpt_shrink_ratio * prev.bytes:
            msg = f"checkpoint step {cur.step} is {human_bytes(cur.bytes)}, step {prev.step} was {human_bytes(prev.bytes)}: the save likely failed"
            out.append(Finding("checkpoint_incomplete", "critical", msg, s.relpath(cur.path)))
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
            msg = f"{len(d.core_dumps)} core dump(s), {human_bytes(total)}: they filled the disk in seed 000 (set `ulimit -c 0`)"
            out.append(Finding("disk_pressure", sev, msg, d.core_dumps[0][0]))
    n = len(s.checkpoints)
    if s.keep_last is None and n > f.cfg.max_checkpoints_without_retention:
        total = sum(c.bytes for c in s.checkpoints.values())
        out.append(Finding("disk_pressure", "info", f"{n} checkpoints ({human_bytes(total)}) and no retention set (keep_last / max_ckpts_to_keep)", "checkpoints"))
    return out


# ---- the training signal -----------------------------------------------------------------
def _series(s: RunState, column: str, window: int = 50) -> list[tuple[int, float]]:
    rows = [r for r in s.rows(window) if r.attempt == s.attempt]
    return [(r.step, v) for r in rows if (v := r.value(column)) is not None]


def training_signal(f: Facts) -> list[Finding]:
    """Entropy sliding (seed 000: 7.45 → 6.91 → 6.16), grad-norm or KL spikes, reward collapse, NaN loss."""
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
    return out


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
    if row is not None and (e := row.orchestrator.get("error_rate")) is not None and e >= cfg.errored_rate:
        out.append(Finding("rollout_quality", "warning", f"{e:.0%} of the last step's rollouts errored", f"step {row.step}"))
    return out


# ---- the environment -----------------------------------------------------------------------
def environment(f: Facts) -> list[Finding]:
    """`ulimit` warnings and too many open files (seed 002), and error kinds never seen before."""
    s = f.state
    out = []
    if s.warnings.get(Kind.ULIMIT):
        out.append(Finding("environment", "warning", _short(s.last_warning.get(Kind.ULIMIT, "ulimit too low"), 140), "warning"))
    fds = [e for e in s.errors if e.kind == Kind.TOO_MANY_OPEN_FILES or "Too many open files" in e.message]
    if fds:
        out.append(Finding("environment", "critical", f"too many open files: {_short(fds[-1].message, 100)}", _where(s, fds[-1]), fds[-1].time))
    return out


def _denied_text(s: RunState) -> str:
    return "; ".join(f"{len(roles)} process(es) of {user} cannot be inspected" for user, roles in sorted(s.process_denied.items()))


def unreadable(f: Facts) -> list[Finding]:
    """A log runtop cannot read (permission, I/O error, vanished) hides whatever it says: a
    dead run must not look Healthy because its trainer.log is `chmod 000` (issue 12)."""
    s = f.state
    out = []
    for info in s.files.values():
        if not info.error or info.kind not in ("log", "metrics"):
            continue
        err = info.error[len(info.path) + 2 :] if info.error.startswith(info.path + ": ") else info.error
        who = ROLE_NAMES.get(info.role, info.role)
        msg = f"cannot read {s.relpath(info.path)} ({who}): {err}; what it says is unknown"
        out.append(Finding("unreadable", "warning", msg, s.relpath(info.path)))
    if s.backfill_error:
        out.append(Finding("unreadable", "warning", f"the run's history was not all read ({s.backfill_error}): numbers before the live tail are missing", "backfill"))
    return out


def process_access(f: Facts) -> list[Finding]:
    """Say what runtop cannot see: another user's titled processes (issue 10)."""
    s = f.state
    return [
        Finding(
            "process_access", "info",
            f"cannot inspect {len(roles)} process(es) owned by {user} ({', '.join(sorted(set(roles)))}): "
            f"run runtop as {user} to tie them to this run; process checks are off meanwhile",
            "process table",
        )
        for user, roles in sorted(s.process_denied.items())
    ]


RULES: list[tuple[str, Callable[[Facts], list[Finding]]]] = [
    ("crash", crash),
    ("inference_dead", inference_dead),
    ("role_missing", role_missing),
    ("stalled", stalled),
    ("rollouts_hung", rollouts_hung),
    ("rollouts_failing", rollouts_failing),
    ("checkpoint_incomplete", checkpoint_incomplete),
    ("disk_pressure", disk_pressure),
    ("training_signal", training_signal),
    ("rollout_quality", rollout_quality),
    ("environment", environment),
    ("unreadable", unreadable),
    ("process_access", process_access),
]
