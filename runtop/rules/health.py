"""The run's verdict: Healthy / Degraded / Down / Unknown, and why.

`HealthTracker.evaluate` runs every rule in `runtop.rules.registry` over the facts, keeps when
each finding began (`since`, for transitions: a finding that persists keeps its start)
and which are new since the last evaluation (the TUI rings for a new critical one).
Down: a finding says the run is not training any more; Degraded: any warning or
critical finding; Healthy: steps are coming and nothing is wrong; Unknown: nothing
to judge yet.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from dataclasses import dataclass, field, replace

from runtop.config import Thresholds
from runtop.frameworks import get as get_framework
from runtop.parsers.events import Kind
from runtop.rules.pace import Pace
from runtop.rules.registry import RULES, Facts, Finding, seconds_in
from runtop.rules.stall import waiting_on
from runtop.state.run import RunState
from runtop.units import duration

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
MAX_REASONS = 3

__all__ = ["Finding", "HealthTracker", "Verdict", "judge"]


@dataclass
class Verdict:
    verdict: str  # "Healthy" | "Degraded" | "Down" | "Finished" | "Unknown"
    reasons: list[str] = field(default_factory=list)
    alerts: list[Finding] = field(default_factory=list)
    new: list[Finding] = field(default_factory=list)  # findings that began with this evaluation


# The verdict a screen shows before the engine has judged what it read: its first read of the
# tails takes several slices, and the verdict judged before them ("nothing to judge yet: no log
# lines or metrics read") beside the steps they show would be false (seen in tmux over step
# 32083 of a 1 GB run); judging a half-read tail could announce an incident its next lines resolve.
READING = Verdict("Unknown", ["reading the run's files: judged once the tail is read"])


class HealthTracker:
    """Evaluates the rules and remembers, across evaluations, when each finding began."""

    def __init__(self, cfg: Thresholds | None = None) -> None:
        self.cfg = cfg or Thresholds()
        self.first_seen: dict[str, float] = {}
        self.critical_seen: set[str] = set()  # incidents already announced as critical
        self.error_kinds: set[str] | None = None
        self.new_kinds: dict[str, str] = {}
        self.looked = False  # whether a first evaluation was made
        # Incidents already there at the first look whose evidence carries no time: when they
        # began is unknown, and said so (`since n/a`), never "now" (docs/reading.md, "One step, one clock").
        self.onset_unknown: set[str] = set()

    def evaluate(self, facts: Facts) -> Verdict:
        state = facts.state
        if facts.pace is None:
            # A one-shot judgement has no engine that watched the run: its pace from its files alone.
            facts = replace(facts, pace=Pace.once(state, facts.now))
        findings: list[Finding] = []
        for name, rule in RULES:
            try:
                findings.extend(rule(facts))
            except Exception as e:  # noqa: BLE001 - one broken rule must not hide the others' findings
                findings.append(Finding("rules", "warning", f"rule {name} failed: {type(e).__name__}: {e}"))
        findings.extend(self._new_error_kinds(state))
        out, new = self.track(lead_with_cause(findings), facts.now, state)
        out.sort(key=lambda f: (not f.down, SEVERITY_ORDER.get(f.severity, 3)))
        reasons = _reasons(state, out)
        note = get_framework(state.framework).read_note
        if note and state.detection.endswith("given with --framework"):
            note = f"read as {state.framework}: given with --framework"
        if note:
            # Every face says how it read the run: a verdict from the generic reader alone is
            # worth knowing (`Down: … CUDAOutOfMemory … (framework not recognised: read generically)`).
            reasons = [f"{reasons[0]} ({note})", *reasons[1:]] if reasons else [note]
        return Verdict(_verdict(state, out), reasons, out, new)

    def track(self, findings: list[Finding], now: float, state: RunState | None = None) -> tuple[list[Finding], list[Finding]]:
        """(the findings with their `since`, those that are news). An incident is its key
        (`Finding.key`): news when it begins, or when it becomes critical; its text may
        change from poll to poll and it stays one incident until it clears."""
        current: set[str] = set()
        out: list[Finding] = []
        new: list[Finding] = []
        first_look, self.looked = not self.looked, True
        for f in findings:
            key = f.key
            current.add(key)
            dated = f.since is not None or f.since_ts is not None
            if first_look and not dated and key not in self.first_seen:
                self.onset_unknown.add(key)
            # New: an incident that began, or one that became critical (a warning escalating
            # is announced once, when it does). Its text may change; it stays one incident.
            escalated = f.severity == "critical" and key not in self.critical_seen
            if key not in self.first_seen or escalated:
                new.append(f)
            self.first_seen.setdefault(key, now)
            if f.severity == "critical":
                self.critical_seen.add(key)
            # One clock for every `since`: the logs' (what the Logs pane shows), else the wall's.
            if not dated and key in self.onset_unknown:
                out.append(f)
                continue
            began = f.since_ts if f.since_ts is not None else self.first_seen[key]
            since = f.since or (state.log_clock(began) if state is not None else None)
            since = since or _dt.datetime.fromtimestamp(began).strftime("%H:%M:%S")
            out.append(replace(f, since=since))
        # A finding that clears and comes back is a new incident.
        for key in [k for k in self.first_seen if k not in current]:
            del self.first_seen[key]
            self.critical_seen.discard(key)
            self.onset_unknown.discard(key)
        return out, new

    def _new_error_kinds(self, state: RunState) -> list[Finding]:
        """An error kind never seen before in this run (the first evaluation sets what is known)."""
        kinds = {e.kind for e in state.errors if not e.fatal}
        if self.error_kinds is None:
            self.error_kinds = kinds
            return []
        for k in sorted(kinds - self.error_kinds):
            last = next(e for e in reversed(state.errors) if e.kind == k)
            self.new_kinds[k] = f"new error kind in this run: {k} ({last.message[:80]})"
        self.error_kinds |= kinds
        return [Finding("environment", "info", msg, "errors") for msg in self.new_kinds.values()]


# Rules whose finding names why a run went silent, most telling first: beside one of them a
# stall is evidence, not the headline (docs/reading.md, "The cause leads").
STALL_CAUSES = ("slurm", "ray", "vanished", "inference_dead", "role_missing", "rollouts_hung", "rollouts_failing",
                "env_lag", "node_silent", "gpu_idle")


def lead_with_cause(findings: list[Finding]) -> list[Finding]:
    """A stall beside a named cause (vLLM rejecting every request, a dead engine, a vanished
    run) becomes that cause's evidence: the cause leads every face, and is Down when the
    stall says the run stopped."""
    stall = next((f for f in findings if f.rule == "stalled" and f.severity != "info"), None)
    causes = [f for f in findings if f.rule in STALL_CAUSES and f.severity != "info"]
    if stall is None or not causes:
        return findings
    cause = min(causes, key=lambda f: STALL_CAUSES.index(f.rule))
    merged = replace(
        cause, down=cause.down or stall.down, severity="critical" if stall.down else cause.severity,
        evidence="; ".join(x for x in (cause.evidence, stall.message) if x),
        since_ts=cause.since_ts if cause.since is not None or cause.since_ts is not None else stall.since_ts,
        since=cause.since if cause.since is not None or cause.since_ts is not None else stall.since,
    )
    return [merged if f is cause else f for f in findings if f is not stall]


# Info findings a verdict with nothing worse says (`Healthy — no process of this run on
# this host (gpu-7): judged from its files alone`): what the verdict rests on.
SAID_WHEN_CLEAR = {"vanished"}


# Findings that forbid a verdict better than Degraded even for a finished run: runtop
# cannot vouch for what it could not read.
BLOCKS_FINISHED = {"unreadable"}


def _verdict(state: RunState, findings: list[Finding]) -> str:
    if any(f.down for f in findings):
        return "Down"
    if state.run_finished() and not any(f.rule in BLOCKS_FINISHED for f in findings):
        # A run that ended normally is Finished, whatever its files' age.
        return "Finished"
    if any(f.severity in ("critical", "warning") for f in findings):
        return "Degraded"
    if state.current_step() is not None:
        return "Healthy"
    return "Unknown"


def _reasons(state: RunState, findings: list[Finding]) -> list[str]:
    serious = [f.message for f in findings if f.severity != "info"]
    if state.run_finished() and not any(f.down or f.rule in BLOCKS_FINISHED for f in findings):
        return [finished_text(state), *serious][:MAX_REASONS]
    serious = serious[:MAX_REASONS]
    if serious:
        return serious
    said = [f.message for f in findings if f.rule in SAID_WHEN_CLEAR]
    if said and state.current_step() is not None:
        return said[:1]
    if state.current_step() is None:
        partial = next((n for n in state.notes if n.startswith("partial ")), None)
        if partial:
            steps = state.rollouts.steps
            return [partial.split(" (", 1)[0] + (f"; rollout files up to step {max(steps)}" if steps else "")]
        waiting = booting_text(state)
        if waiting:
            return [waiting]
        if any(info.bytes_read for info in state.files.values()):
            return ["no step finished yet (starting up?)"]
        return ["nothing to judge yet: no log lines or metrics read"]
    return []


def finished_text(state: RunState) -> str:
    """`finished at step 20 after 1h 12m (log clock); last complete checkpoint: step 20`."""
    step = state.step
    parts = [f"finished at step {step}" if step is not None else "finished"]
    dur = state.duration_s()
    if dur:
        parts[0] += f" after {duration(dur)}"
    ckpt = state.last_complete_checkpoint()
    parts.append(
        f"last complete checkpoint: step {ckpt.step}" if ckpt
        else ("no complete checkpoint" if state.checkpoints else "no checkpoint dir read")
    )
    who = ", ".join(sorted(state.finished))
    return f"{parts[0]} ({who} said so); {parts[1]}"


def progress_text(state: RunState) -> str:
    """`step 14/58, ETA 4h 36m` (the trainer's step where it has one)."""
    if state.step is None:
        return ""
    text = state.step_text()
    eta = state.eta_s()
    return text + (f", ETA {duration(eta, ' ')}" if eta else "")


def booting_text(state: RunState) -> str | None:
    """What a run with no step yet waits for: `waiting for the inference server at
    http://localhost:8000 for 50 s` (the orchestrator retries every 10 s)."""
    text = state.last_warning.get(Kind.INFERENCE_UNREACHABLE)
    if text:
        secs = seconds_in(text)
        url = URL_RE.search(text)
        at = f" at {url.group(0).rstrip('.,)')}" if url else ""
        return f"waiting for the inference server{at}" + (f" for {secs:g} s" if secs is not None else "")
    return waiting_on(state) or None


URL_RE = re.compile(r"https?://[^\s,;)]+", re.ASCII)


def judge(state: RunState, facts: Facts | None = None, cfg: Thresholds | None = None) -> Verdict:
    """One evaluation with no history (headless commands): every finding is new."""
    facts = facts or Facts(state, time.time(), cfg or Thresholds())
    return HealthTracker(facts.cfg).evaluate(facts)
