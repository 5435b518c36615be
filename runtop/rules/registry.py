"""The health rules: each a pure function of the run's facts, returning findings. This
module holds the registry and the rules of life and death (a crash, a missing role, a
dead inference server, a stall, stuck rollouts, what cannot be read); `rules_quality`
the rest; `findings` what they answer with.

A finding names its rule, a severity (info / warning / critical), a one-line cause
and its evidence (file and log time, or the value). `down` marks the findings that
mean the run is not training any more. Thresholds come from `runtop.config`. The
rules are what the people in docs/incidents.md did by hand each hour:
each cites the incident that drove it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from runtop.frameworks import get as get_framework
from runtop.parsers.events import ROLLOUT_SIDE, Kind
from runtop.parsers.hygiene import shown
from runtop.parsers.node_files import node_of
from runtop.rules.findings import ROLE_NAMES, Facts, Finding, _short, _where, short_keeping_errno
from runtop.rules.hang import env_lag, gpu_idle_held, node_silent
from runtop.rules.quality import checkpoint_incomplete, disk_pressure, environment, notify_failing, rollout_quality, training_signal
from runtop.rules.ray import ray_cluster
from runtop.rules.slurm import slurm_job, walltime
from runtop.rules.stall import slowdown, stalled
from runtop.rules.vanished import vanished
from runtop.state.parts import ErrorEntry, clock_diff
from runtop.state.run import RunState
from runtop.units import duration

__all__ = ["RULES", "Facts", "Finding"]

# ---- crash ----------------------------------------------------------------------
def crash(f: Facts) -> list[Finding]:
    """A fatal error ends a log and the role's process is gone (the SIGBUS save in
    docs/incidents.md#sigbus-save-core-dumps, the OOM sample).

    The cause is the most specific error of the death, not the wrapper that reported it
    (`runtop.state.causes`); a death an engine or NCCL announces is Down even while the
    process still answers.
    """
    s = f.state
    fatals = s.open_fatals()
    if not fatals:
        return []
    if s.run_finished():
        # Deaths after the run said it ended: its teardown (vLLM's engine stopped under it, a
        # SIGSEGV at exit), not a Down. The finishing role's own death may have cost the final
        # save or upload: said loudly; another role's, as a warning.
        last = fatals[-1]
        own = last.role in s.finished
        msg = (f"after the run finished, {ROLE_NAMES.get(last.role, last.role)} died during teardown: {last.kind} "
               f"({_short(last.message, 80)})" + ("; check its final save" if own else ""))
        return [Finding("crash", "critical" if own else "warning", msg, _where(s, last), last.time, cause=last.kind, subject="teardown", detail=last.message)]
    first = min(fatals, key=lambda e: (not e.certain and e.rank >= 40, e.time or "99"))
    role = ROLE_NAMES.get(first.role, first.role) + node_words(first.source)
    detail = first.message
    if detail.startswith("Fatal error") and ": " in detail:
        detail = detail.split(": ", 1)[1]  # the exception says more than "Fatal error in train"
    who = f"in {first.actor}{f' pid {first.pid}' if first.pid else ''}" if first.actor and first.actor not in role else None
    during = f" during {first.phase}" if first.phase else ""
    cause = f"{first.kind}{during} ({short_keeping_errno(detail, 100)})"
    context = "".join(
        f"; {part}" for part in (_in_step(s, first), who, f"reported as {first.wrapped_by}" if first.wrapped_by else None, others_waiting(s, first)) if part
    )
    # Where to look next comes last: what died, where and who reported it come first on a narrow screen.
    advice = f"; {first.hint}" if first.hint else ""
    alive = f.alive or {}
    running = sorted(r for r, pids in alive.items() if pids)
    if not alive.get(first.role) or first.certain:
        if f.alive is None:
            tail = "its process could not be checked" + (f" ({_denied_text(s)})" if s.process_denied else "")
        elif alive.get(first.role):
            tail = "its process is still up but cannot recover"
        else:
            tail = "no run process alive" if not running else f"still running: {', '.join(running)}"
        msg = f"{role} died: {cause}{context}; {tail}{advice}"
        return [Finding("crash", "critical", msg, _where(s, first), first.time, down=True, cause=first.kind, wrapper=first.wrapped_by, phase=first.phase,
                        detail=detail)]
    msg = f"{role} logged a fatal {first.kind} but its process is still alive ({_short(detail, 80)}){context}{advice}"
    return [Finding("crash", "warning", msg, _where(s, first), first.time, cause=first.kind, wrapper=first.wrapped_by, phase=first.phase, detail=detail)]


def _in_step(s: RunState, dead: ErrorEntry) -> str | None:
    """`in step 3 (step 2 was its last)`: the step a trainer died in, where its framework logs a
    step when it is done (the step after the last one logged), and no phase says more."""
    step = s.trainer_step
    if dead.phase or step is None or dead.role != "trainer" or not get_framework(s.framework).logs_steps_when_done:
        return None
    return f"in step {step + 1} (step {step} was its last)"


def node_words(source: str) -> str:
    """` node 2` for a multi-node run's per-node log (`trainer/node_2.log`), else nothing."""
    at = node_of(source)
    return "" if at is None else f" node {at[0]}" + (f" rank {at[1]}" if at[1] is not None else "")


def others_waiting(s: RunState, dead: ErrorEntry) -> str | None:
    """On a multi-node run, the same role's nodes whose logs end in no death: they wait on
    the dead one in a collective (`nodes 0, 1, 3 waiting`)."""
    if node_of(dead.source) is None:
        return None
    dying = {i.path for i in s.files.values() if i.fatal is not None and not i.active_after_fatal}
    waiting = sorted(at[0] for i in s.files.values()
                     if i.kind == "log" and i.role == dead.role and i.path not in dying and (at := node_of(i.path)) is not None)
    return f"node{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} waiting" if waiting else None


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
        out.append(Finding("role_missing", "critical", msg, "process table", down=True, subject=role))
    return out


def inference_dead(f: Facts) -> list[Finding]:
    """vLLM stopped while the trainer waits (docs/incidents.md#vllm-dies-silently): its process
    gone, or the orchestrator retrying `Inference server was not reached`."""
    s = f.state
    # A framework that launches vLLM itself always has it; elsewhere (SkyRL's engines are Ray
    # actors) only once it was seen.
    expects_inference = (
        get_framework(s.framework).launches_inference or "inference" in (f.alive or {}) or "inference" in f.missing_roles
    )
    if f.finished() or not expects_inference:
        return []
    alive = f.alive
    fw = get_framework(s.framework)
    waiters = {"trainer", fw.rollout_role}
    others = sorted(r for r, p in (alive or {}).items() if p and r in waiters)
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
        secs = seconds_in(text)
        if secs is not None and secs >= f.cfg.inference_unreachable_s:
            msg = f"{fw.rollout_role} cannot reach vLLM: {_short(text, 90)} ({n} retries){cause}"
            return [Finding("inference_dead", "critical", msg, f"{fw.rollout_role} log", None, down=alive is not None and not alive.get("inference"))]
    return []


AFTER_SECONDS_RE = re.compile(r"after (\d+(?:\.\d+)?) seconds")


def seconds_in(text: str) -> float | None:
    m = AFTER_SECONDS_RE.search(text)
    return float(m.group(1)) if m else None


def rollouts_hung(f: Facts) -> list[Finding]:
    """Batches stuck at 0/N while vLLM rejects every request (`max_tokens` too large:
    docs/incidents.md#max-tokens-stuck-rollouts)."""
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
    fits = max_tokens_that_fit([r.message for r in rejects])
    if fits is not None:
        msg += f"; fix: max_tokens ≤ {fits[0]} (context {fits[1]} minus the longest prompt seen, {fits[2]} tokens), or a longer max_model_len"
    return [Finding("rollouts_hung", "critical", msg, _where(s, e), e.time, detail=e.message)]


# vLLM's own arithmetic in its refusal: `(4000 > 4096 - 1297)`.
FITS_RE = re.compile(r"\((\d+) > (\d+) - (\d+)\)", re.ASCII)
# … and as its OpenAI-compatible server words it: `maximum context length is 8192 tokens.
# However, you requested 8480 tokens (288 in the messages, 8192 in the completion)`.
CONTEXT_RE = re.compile(r"maximum context length is (\d+) tokens\. However, you requested \d+ tokens \((\d+) in the messages, \d+ in the completion", re.ASCII)


def max_tokens_that_fit(messages: list[str]) -> tuple[int, int, int] | None:
    """(the largest max_tokens every refused request would have fit, the context, the longest
    prompt), from vLLM's refusals in either wording; None when they do not say."""
    found = [(int(m.group(2)), int(m.group(3))) for msg in messages if (m := FITS_RE.search(msg))]
    found += [(int(m.group(1)), int(m.group(2))) for msg in messages if (m := CONTEXT_RE.search(msg)) and not FITS_RE.search(msg)]
    if not found:
        return None
    context = min(c for c, _ in found)
    longest = max(p for _, p in found)
    return (context - longest, context, longest) if context > longest else None


def rollouts_failing(f: Facts) -> list[Finding]:
    """Stuck without an ERROR: every rollout fails with one error type and is retried forever
    while the batch does not move (`0/4`, `HarnessError: harness 'null' exited 1`). Degraded
    at once, Down once it has lasted the stall time (docs/formats.md, "What genuine output adds")."""
    s = f.state
    everything = list(s.rollouts_since_step)
    # The rollout side and the env server report the same rollouts: count one source's.
    by_source = Counter(src for *_, src in everything)
    source = max(by_source, key=lambda src: (by_source[src], src == ROLLOUT_SIDE), default=None)
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


def _denied_text(s: RunState) -> str:
    return "; ".join(f"{len(roles)} process(es) of {user} cannot be inspected" for user, roles in sorted(s.process_denied.items()))


def unreadable(f: Facts) -> list[Finding]:
    """A log runtop cannot read (permission, I/O error, vanished) hides whatever it says: a
    dead run must not look Healthy because its trainer.log is `chmod 000`."""
    s = f.state
    out = []
    for info in s.files.values():
        if not info.error or info.kind not in ("log", "metrics"):
            continue
        err = shown(info.error[len(info.path) + 2 :] if info.error.startswith(info.path + ": ") else info.error)
        who = ROLE_NAMES.get(info.role, info.role)
        msg = (f"unreadable: {s.relpath(info.path)} ({who}) {err}; what it says is unknown" if info.not_regular
               else f"cannot read {s.relpath(info.path)} ({who}): {err}; what it says is unknown")
        out.append(Finding("unreadable", "warning", msg, s.relpath(info.path)))
    if s.backfill_error:
        out.append(Finding("unreadable", "warning", f"the run's history was not all read ({s.backfill_error}): numbers before the live tail are missing", "backfill"))
    return out


def process_access(f: Facts) -> list[Finding]:
    """Say what runtop cannot see: another user's titled processes."""
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
    # First: a job the scheduler ended is the cause of whatever its processes said as they went.
    ("slurm", slurm_job),
    # Before the crash: where the log names only Ray's wrapper, the dead actor is the cause.
    ("ray", ray_cluster),
    ("crash", crash),
    ("inference_dead", inference_dead),
    ("role_missing", role_missing),
    ("vanished", vanished),
    ("stalled", stalled),
    ("slowdown", slowdown),
    ("walltime", walltime),
    ("rollouts_hung", rollouts_hung),
    ("rollouts_failing", rollouts_failing),
    ("checkpoint_incomplete", checkpoint_incomplete),
    ("disk_pressure", disk_pressure),
    ("training_signal", training_signal),
    ("rollout_quality", rollout_quality),
    ("environment", environment),
    ("unreadable", unreadable),
    ("process_access", process_access),
    ("gpu_idle", gpu_idle_held),
    ("env_lag", env_lag),
    ("node_silent", node_silent),
    ("notify", notify_failing),
]
