"""What to tell the researcher, and when: the crashes in docs/incidents.md were found hours late
because nobody was looking at the screen that saw them.

`Notifier` turns the engine's verdicts into messages: one when incidents begin (a
finding's identity, never its text: a growing stall duration is one incident), one when
the run recovers, one when it finishes. It decides only; `runtop.outputs.delivery` sends, in its
own threads, so a slow or failing target never holds the engine.
"""

from __future__ import annotations

import datetime as _dt
import socket
from dataclasses import dataclass

from runtop.parsers.hygiene import public, shown, unmention
from runtop.rules.advice import advise
from runtop.rules.findings import Finding
from runtop.rules.health import Verdict
from runtop.state.run import RunState

RANK = {"info": 0, "warning": 1, "critical": 2}
# Findings about runtop's own delivery: never sent (a failing pager must not page about itself).
SELF = frozenset({"notify"})


class Event:
    INCIDENT = "incident"
    RECOVERED = "recovered"
    FINISHED = "finished"
    FORENSICS = "forensics"
    TEST = "test"


@dataclass(frozen=True)
class Message:
    event: str  # Event.*
    title: str
    body: str
    verdict: str
    rule: str = ""
    cause: str = ""

    def __post_init__(self) -> None:
        # What leaves for a chat: printable, secrets hidden, and no mass mention (an exception
        # quoting `@everyone` pinged a whole Discord server).
        object.__setattr__(self, "title", unmention(public(self.title)))
        object.__setattr__(self, "body", unmention(public(self.body)))


class Notifier:
    def __init__(self, run: str, min_severity: str = "critical") -> None:
        self.run = shown(run)  # the title is one line, whatever the run dir is called
        self.min_rank = RANK[min_severity]
        self.open: dict[str, Finding] = {}  # incidents told, by key, until they clear
        self.finished_told = False

    def observe(self, verdict: Verdict, state: RunState, now: float) -> list[Message]:
        current = {f.key: f for f in verdict.alerts if RANK.get(f.severity, 0) >= self.min_rank and f.rule not in SELF}
        out: list[Message] = []
        began = [f for k, f in current.items() if k not in self.open]
        if began and verdict.verdict != "Finished":
            out.append(self._incident(began, verdict, state, now))
        cleared = [f for k, f in self.open.items() if k not in current]
        if verdict.verdict == "Finished":
            self.open = {}
            if not self.finished_told:
                self.finished_told = True
                out.append(self._finished(verdict, state, now))
            return out
        self.open = current
        # Recovered: every incident told has cleared and the run is not Down.
        if cleared and not current and verdict.verdict != "Down":
            out.append(self._recovered(cleared, verdict, state, now))
        return out

    def forensics(self, line: str) -> Message:
        return Message(Event.FORENSICS, f"runtop: {self.run} hang forensics saved", f"stacks: {line}", "Down", "stalled")

    def _incident(self, began: list[Finding], verdict: Verdict, state: RunState, now: float) -> Message:
        top = began[0]  # the verdict's alerts come most serious first
        lines = [top.message]
        for label, value in (("cause", top.cause), ("reported by", top.wrapper), ("while", top.phase), ("evidence", top.evidence)):
            if value:
                lines.append(f"{label}: {value}")
        lines += [f"also: {f.message}" for f in began[1:]]
        lines += _context(verdict, state, now)
        return Message(Event.INCIDENT, f"runtop: {self.run} is {verdict.verdict}", "\n".join(lines), verdict.verdict, top.rule, top.cause or "")

    def _recovered(self, cleared: list[Finding], verdict: Verdict, state: RunState, now: float) -> Message:
        lines = [f"cleared: {f.message}" for f in cleared] + _context(verdict, state, now)
        return Message(Event.RECOVERED, f"runtop: {self.run} recovered ({verdict.verdict})", "\n".join(lines), verdict.verdict, cleared[0].rule)

    def _finished(self, verdict: Verdict, state: RunState, now: float) -> Message:
        lines = list(verdict.reasons[:3]) + _context(verdict, state, now)
        return Message(Event.FINISHED, f"runtop: {self.run} finished", "\n".join(lines), verdict.verdict)


def _context(verdict: Verdict, state: RunState, now: float) -> list[str]:
    """Step, last complete checkpoint, the suggested next step (words only: nothing is run),
    where, and when."""
    out = []
    if state.step is not None:
        out.append(state.step_text())
    ckpt = state.last_complete_checkpoint()
    out.append(f"last complete checkpoint: step {ckpt.step}" if ckpt is not None else "no complete checkpoint")
    advice = advise(state, verdict)
    if advice is not None:
        out.append(f"next: {advice.text}")
    stamp = _dt.datetime.fromtimestamp(now).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    out.append(f"{socket.gethostname()}:{shown(state.path or '')} at {stamp}")
    return out


def trial_message(run: str = "runtop") -> Message:
    host = socket.gethostname()
    return Message(Event.TEST, f"runtop: test message from {host}", f"If you read this, {run}'s alerts reach you.", "Healthy")
