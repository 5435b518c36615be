"""Which framework wrote a log, by the evidence in it (docs/reading.md, "Detection").

Each plug-in lists its signs with a weight: 3 for what only it writes (its module paths, its
entrypoints, its actors and their forks, its own step line), 2 for what it writes in a shape
others rarely do, 1 for shapes it shares. A framework is named when its signs add up to
`DECIDES` with at least one that is more than shared; below `SURE` it is named as probable.
Shapes every framework's neighbours write — a timestamp with `[INFO]`, vLLM's and DeepSpeed's
lines, Ray's own — are nobody's sign, so they never decide. The best score wins; a file no
plug-in claims is read by the generic reader, which says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DECIDES = 3  # the least evidence that names a framework
SURE = 5  # below this it is named as probable ("probably verl: …")


@dataclass(frozen=True)
class Sign:
    pattern: re.Pattern[str]
    weight: int
    what: str  # how the reason names it: `(TaskRunner pid=…)`


def sign(pattern: str, weight: int, what: str, flags: int = 0) -> Sign:
    return Sign(re.compile(pattern, re.ASCII | flags), weight, what)


@dataclass(frozen=True)
class Score:
    framework: str
    points: int
    found: tuple[str, ...]  # the signs seen, strongest first
    strongest: int = 0

    @property
    def decides(self) -> bool:
        return self.points >= DECIDES and self.strongest >= 2

    @property
    def sure(self) -> bool:
        return self.points >= SURE

    def reason(self) -> str:
        """`verl: (TaskRunner pid=…), step:N - key:value` / `probably verl: …`."""
        signs = ", ".join(self.found[:4])
        return f"{self.framework}: {signs}" if self.sure else f"probably {self.framework}: {signs}"


def score(framework: str, signs: tuple[Sign, ...], text: str) -> Score:
    """Each sign counts once, however often it is seen."""
    seen = [s for s in signs if s.pattern.search(text)]
    seen.sort(key=lambda s: -s.weight)
    return Score(framework, sum(s.weight for s in seen), tuple(s.what for s in seen), max((s.weight for s in seen), default=0))


def best(scores: list[Score]) -> Score | None:
    """The framework the evidence names, or None when no score decides. A tie goes to the
    first in the list (the registry's order)."""
    deciding = [s for s in scores if s.decides]
    if not deciding:
        return None
    return max(deciding, key=lambda s: (s.points, s.strongest))
