"""The run's verdict: Healthy / Degraded / Down / Unknown, and why.

A first, deliberately small rule set (issue 2): Down when a fatal error ends a
log and the role's process is gone; Unknown when there is nothing to judge. The
full rules engine (issue 5) replaces `judge` with configurable rules that read
the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtop.state import ErrorEntry, RunState

ROLE_NAMES = {
    "trainer": "trainer",
    "orchestrator": "orchestrator",
    "inference": "inference server (vLLM)",
    "env": "env server",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # "info" | "warning" | "critical"
    message: str
    evidence: str | None = None
    since: str | None = None


@dataclass
class Verdict:
    verdict: str  # "Healthy" | "Degraded" | "Down" | "Unknown"
    reasons: list[str] = field(default_factory=list)
    alerts: list[Finding] = field(default_factory=list)


def _fatal_entries(state: RunState) -> list[ErrorEntry]:
    """Fatal errors that end their log: nothing of the role's work came after them."""
    out = [
        info.fatal
        for info in state.files.values()
        if info.kind == "log" and info.fatal is not None and not info.active_after_fatal
    ]
    return sorted(out, key=lambda e: e.time or "99")


def judge(state: RunState) -> Verdict:
    alive = state.processes or {}
    fatals = _fatal_entries(state)
    if fatals:
        first = fatals[0]
        role = ROLE_NAMES.get(first.role, first.role)
        where = f"{state.relpath(first.source)} {first.time or ''}".strip()
        detail = first.message
        if detail.startswith("Fatal error") and ": " in detail:
            detail = detail.split(": ", 1)[1]  # the exception text says more than "Fatal error in train"
        detail = detail if len(detail) <= 100 else detail[:99] + "…"
        running = sorted(r for r, pids in alive.items() if pids)
        if not alive.get(first.role):
            tail = "no run process alive" if not running else f"still running: {', '.join(running)}"
            msg = f"{role} died: {first.kind} ({detail})"
            return Verdict(
                "Down",
                [msg, tail],
                [Finding("crash", "critical", f"{msg}; {tail}", evidence=where, since=first.time)],
            )
        msg = f"{role} logged a fatal {first.kind} but its process is still alive"
        return Verdict("Degraded", [msg], [Finding("crash", "warning", msg, evidence=where, since=first.time)])
    if "trainer" in state.finished:
        return Verdict("Healthy", ["run finished"])
    for e in reversed(state.errors):
        if e.kind == "max_tokens_too_large":
            # Seeds 002/004: rollouts hang at 0/N while vLLM rejects every request.
            msg = f"vLLM rejects requests: {e.message[:140]}"
            return Verdict(
                "Degraded",
                [msg],
                [Finding("rollouts_hung", "critical", msg, evidence=f"{state.relpath(e.source)} {e.time or ''}".strip(), since=e.time)],
            )
    if state.current_step() is None:
        if any(info.bytes_read for info in state.files.values()):
            return Verdict("Unknown", ["no step finished yet (starting up?)"])
        return Verdict("Unknown", ["nothing to judge yet: no log lines or metrics read"])
    return Verdict("Healthy", [])
