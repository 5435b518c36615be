"""Search that jumps, as the log viewers researchers already use do (less, toolong, k9s): the
lines that hold the text, which one the cursor is on ("3/17"), the next and the previous;
and the line a clock time points at. Pure: lists of text in, indices out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*$")


def find_all(texts: Sequence[str], needle: str) -> list[int]:
    """The indices of the texts that hold `needle`, any case, oldest first."""
    n = needle.lower()
    return [i for i, t in enumerate(texts) if n in t.lower()] if n else []


def parse_clock(text: str) -> str | None:
    """`14:05` or `14:05:30` as the logs write a time (`14:05:00`), or None."""
    m = _CLOCK.match(text)
    if not m:
        return None
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if h > 23 or mi > 59 or s > 59:
        return None
    return f"{h:02d}:{mi:02d}:{s:02d}"


def at_time(times: Sequence[str | None], when: str) -> int | None:
    """The first line written at or after `when` (`HH:MM:SS`), or None when every timed line is
    older. A line without a time takes its place from the line before it. Logs that run past
    midnight: the first line after the clock went back counts as later than every line before."""
    wrapped = False
    last: str | None = None
    for i, t in enumerate(times):
        if t is None:
            continue
        t = t[-8:]  # a date before the time is the day's business, not the clock's
        if last is not None and t < last:
            wrapped = True  # midnight: every later line is after any time of the day before
        last = t
        if wrapped or t >= when:
            return i
    return None


@dataclass
class Matches:
    """The matching lines of one search and which one the cursor is on."""

    needle: str = ""
    hits: list[int] = field(default_factory=list)  # indices, oldest first
    at: int = -1  # index into `hits`, -1 before the first jump

    def find(self, texts: Sequence[str], needle: str) -> None:
        self.needle, self.hits, self.at = needle, find_all(texts, needle), -1

    def refind(self, texts: Sequence[str]) -> None:
        """The same search over new lines: the cursor stays on the match it was on, if it still is one."""
        was = self.hits[self.at] if 0 <= self.at < len(self.hits) else None
        self.hits = find_all(texts, self.needle)
        self.at = self.hits.index(was) if was in self.hits else -1

    def nearest(self, line: int, older: bool = True) -> int | None:
        """Jump to the match at or before `line` (or at or after it): the first jump of a search."""
        if not self.hits:
            return None
        before = [k for k, i in enumerate(self.hits) if (i <= line if older else i >= line)]
        self.at = (before[-1] if older else before[0]) if before else (len(self.hits) - 1 if older else 0)
        return self.hits[self.at]

    def step(self, by: int) -> int | None:
        """The next match `by` away (negative: older), wrapping round the ends; its line."""
        if not self.hits:
            return None
        self.at = (self.at + by) % len(self.hits) if self.at >= 0 else (len(self.hits) - 1 if by < 0 else 0)
        return self.hits[self.at]

    def label(self) -> str:
        """`3/17` (the third match of seventeen, counted from the oldest), `0/0` for none."""
        if not self.hits:
            return "no match"
        return f"{self.at + 1 if self.at >= 0 else '-'}/{len(self.hits)}"
