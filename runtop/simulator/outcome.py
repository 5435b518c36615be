"""What a replayed run came to (`runtop.playback.replay`): every finding as it began, when the
fault came and what stopped first, the simulated steps' times."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Seen:
    at: float  # simulated seconds since the replay began
    rule: str
    label: str  # down / act now / warning / info
    message: str


@dataclass
class Outcome:
    findings: list[Seen] = field(default_factory=list)  # every finding as it began
    fault_at: float | None = None  # simulated second of the fault
    culprit: str | None = None  # what stopped first, as runtop should name it (`GPU 3`, `node 2`, `orchestrator`)
    seconds: float = 0.0  # simulated seconds replayed
    steps: int = 0
    step_median: float | None = None
    step_times: list[float] = field(default_factory=list)  # simulated seconds between steps

    def alarms(self, rules: frozenset[str], down: bool) -> list[Seen]:
        """Findings of `rules` that began (Down ones, or the others): false alarms on a healthy run."""
        return [f for f in self.findings if f.rule in rules and (f.label == "down") == down and f.label != "info"]

    def caught(self, rules: frozenset[str]) -> Seen | None:
        """The first finding of `rules` after the fault."""
        after = self.fault_at if self.fault_at is not None else 0.0
        return next((f for f in self.findings if f.rule in rules and f.at >= after and f.label != "info"), None)
