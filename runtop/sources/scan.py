"""The scan stage: a long stretch of a log narrowed to the lines a plug-in's keep rule keeps,
each with its byte offset, before any of them becomes a `str` (docs/reading.md, "The scan stage").

Backends (`RUNTOP_SCAN` names one; `off` reads every line in Python; else `backend` picks):
- `re`: Python alone, the reference the others are held to: one `split` and C-level `in` tests
  and `match` calls over each window, the guard words looked for once over all the lines left out;
- `hyperscan`: the same, the guard words found by Intel's Hyperscan (the maintained Vectorscan
  build; the extra `runtop-rl[fast]`) in one pass. Hyperscan over every pattern of the rule was
  slower: it calls back into Python once a hit, and a noisy log has a hit on nearly every line;
- `grep`: GNU grep children (`bulk_grep`), for a stretch of 32 MB and more: only the kept lines
  cross into Python; for a rule grep can gate itself (a prime-rl orchestrator's), a pipe of two
  greps that leaves its chatter out too, the headers `gate` keeps read back (`grep_gate`).

Every backend hands on exactly the lines `BulkNoise.keeps` keeps; the tailer puts each chunk's
newest latest-wins line back in place (`FileTailer._bulk_read`), whichever backend ran. A window
is read with `pread` (the page cache holds the bytes, this process holds one window), and a line
longer than a window is judged by its head, as the tailer judges one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

from runtop.parsers.skim import BulkNoise
from runtop.sources import bulk_grep, grep_gate

BACKENDS = ("hyperscan", "grep", "re", "off")
# An in-process scan has no child to start: worth it from a few MB on (the bounded first status
# reads 8 MB of each long log).
INPROC_MIN = 2 << 20
WINDOW = 8 << 20
MAX_SEEN = 32  # line starts remembered per shape


class Scan(Protocol):
    ident: tuple[int, int]
    pos: int
    end: int

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None: ...

    def close(self) -> None: ...


@cache
def _hyperscan() -> Any:
    try:
        import hyperscan
    except ImportError:
        return None
    return hyperscan


def backend(rule: BulkNoise | None = None, stretch: int | None = None) -> str:
    """The backend for a log of this rule: `RUNTOP_SCAN`, else the quickest one installed here
    for the stretch (measured: docs/reading.md, "The scan stage"). On a long stretch GNU grep's
    children win for every rule, an agent's transcripts and a table a row included: they hand on
    only the kept lines, with no call per line. Under `grep_min` (a MB) their start costs more
    than Hyperscan's guard-word pass."""
    want = os.environ.get("RUNTOP_SCAN", "").strip().lower()
    hs, grep = _hyperscan() is not None, bulk_grep.gnu_grep() is not None
    if want in BACKENDS and (want != "hyperscan" or hs) and (want != "grep" or grep):
        return want
    short = stretch is not None and stretch < grep_min(rule)
    if hs and (not grep or short):
        return "hyperscan"
    return "grep" if grep else "re"


def grep_min(rule: BulkNoise | None) -> int:
    """The shortest stretch worth grep's children: a MB (a 32nd of `BULK_MIN`) for every rule grep
    can run whole here; `BULK_MIN` for one whose shapes or gate need `-P` where this grep has none
    (its stray grep would fail and hand the stretch back to Python). From a MB on grep is as quick
    as the in-process scan or quicker whatever the rule. A first status's 8 MB tail, in process
    then with grep, in turn six times beside two busy loops, median: vLLM 0.81 → 0.66 s, verl
    1.19 → 1.04, an agent run 1.21 → 1.09, TRL's console 1.38 → 1.06; a noisy orchestrator
    (grep gates it itself) 1.0 → 0.7 alone (docs/reading.md, "The scan stage")."""
    if rule is None:
        return bulk_grep.BULK_MIN
    if (rule.drop_re or rule.grep_gates()) and not bulk_grep.pcre():
        return bulk_grep.BULK_MIN
    return bulk_grep.BULK_MIN >> 5


def min_stretch(name: str, rule: BulkNoise | None = None) -> int:
    """Below this many unread bytes a stretch is read line by line in Python."""
    return grep_min(rule) if name == "grep" else min(INPROC_MIN, bulk_grep.BULK_MIN)


def open_scan(name: str, path: str, ident: tuple[int, int], start: int, end: int, rule: BulkNoise, max_line: int) -> Scan:
    if name == "grep":
        if rule.grep_gates() and bulk_grep.pcre():
            return grep_gate.GatedGrep(path, ident, start, end, rule, max_line)
        return bulk_grep.BulkGrep(path, ident, start, end, rule, max_line)
    finder = PythonFinder(rule, hyperscan_words(rule.glue) if name == "hyperscan" and rule.glue else None)
    return InProcessScan(path, ident, start, end, max_line, finder)




class InProcessScan:
    """[start, end) of one file, window by window, through a finder: `take(stop)` hands the kept
    lines that start before `stop` as (offset, line without its newline), as `BulkGrep` does."""

    def __init__(self, path: str, ident: tuple[int, int], start: int, end: int, max_line: int, finder: PythonFinder) -> None:
        self.ident, self.pos, self.end, self.max_line = ident, start, end, max_line
        self._find = finder
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(self._fd)
        if (st.st_dev, st.st_ino) != ident:
            os.close(self._fd)
            raise OSError("the file was replaced")

    def take(self, stop: int) -> tuple[list[tuple[int, bytes]], int] | None:
        """The kept lines that start before `stop`, and how many were cut at the cap (None: the
        file shrank under us)."""
        got: list[tuple[int, bytes]] = []
        cut = 0
        cap = self.max_line
        while self.pos < stop:
            base = self.pos
            buf = os.pread(self._fd, min(WINDOW, stop - base), base)
            if not buf:
                return None  # the file shrank under us: the tailer reads on in Python
            nl = buf.rfind(b"\n")
            if nl < 0:
                # A line longer than a window: judged by its head, and skipped to its end.
                after = bulk_grep.line_end(self._fd, base + len(buf), stop)
                for _off, line in self._find(buf[:cap] + b"\n"):
                    got.append((base, line))
                    cut += 1
                self.pos = min(after + 1, stop)
                continue
            if nl + 1 < len(buf):
                buf = buf[: nl + 1]
            # A long line that fits a window goes on whole: the tailer cuts it where it cuts
            # Python's lines (in characters, once decoded), as it does grep's.
            got.extend((base + off, line) for off, line in self._find(buf))
            self.pos = base + len(buf)
        return self._find.rule.gate(got), cut

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _with_offsets(buf: bytes, kept: list[bytes]) -> list[tuple[int, bytes]]:
    """Each kept line's offset in `buf`, found forward from the last (C speed: few lines are kept)."""
    out = []
    pos = 0
    for line in kept:
        at = buf.find(line, pos)
        # A kept line's text may also stand inside an earlier line: its own starts a line.
        while at > 0 and buf[at - 1] != 0x0A or buf[at + len(line) : at + len(line) + 1] != b"\n":
            at = buf.find(line, at + 1)
        out.append((at, line))
        pos = at + len(line) + 1
    return out


class PythonFinder:
    """The rule's tests over a window's lines, each a C-level pass (`split`, `in`, `match`);
    `present` says which guard words a blob holds (Python's `in`, the reference, or Hyperscan)."""

    def __init__(self, rule: BulkNoise, present: Callable[[bytes], list[bytes]] | None = None) -> None:
        self.rule = rule
        self._patterns = rule.drop_patterns()
        self._present = present or (lambda blob: [w for w in rule.glue if w in blob])
        # Each shape's line starts seen to match it, to the end of its match: a line that starts
        # so matches too (a shape looks no further than it reads), at C speed (`startswith`).
        self._seen: list[tuple[bytes, ...]] = [() for _ in self._patterns]

    def __call__(self, buf: bytes) -> list[tuple[int, bytes]]:
        rule = self.rule
        lines = buf.split(b"\n")
        lines.pop()  # whole lines: the last piece is empty
        for m in rule.latest_wins:
            if m in buf:
                lines = [ln for ln in lines if m not in ln]
        for m in rule.drop:
            if m in buf:
                lines = self._drop(lines, lambda ln, m=m: m in ln)  # type: ignore[misc]
        for j, r in enumerate(self._patterns):
            lines = self._drop_marked(lines, self._shape_marks(j, r, lines))
        return _with_offsets(buf, lines)

    def _shape_marks(self, j: int, r: re.Pattern[bytes], lines: list[bytes]) -> list[object]:
        """Which lines shape `j` matches: those that start as a line it matched did (C speed),
        then the rest that hold its hint, each asked (a shape that looks past its match, each
        line with its hint asked)."""
        hint = self.rule.drop_hint[j] if j < len(self.rule.drop_hint) else b""
        looks = any(a in r.pattern for a in (b"(?=", b"(?!", b"(?<"))
        seen = () if looks else self._seen[j]
        marks: list[object] = [ln.startswith(seen) for ln in lines] if seen else [False] * len(lines)
        for i in [i for i, ln in enumerate(lines) if not marks[i] and hint in ln]:
            m = r.match(lines[i])
            if m is not None:
                marks[i] = True
                if not looks and len(seen) < MAX_SEEN:
                    seen = self._seen[j] = (*seen, lines[i][: m.end()])
        return marks

    def _drop(self, lines: list[bytes], hit: Callable[[bytes], object]) -> list[bytes]:
        return self._drop_marked(lines, [hit(ln) for ln in lines])  # one test a line; the passes below only zip

    def _drop_marked(self, lines: list[bytes], marks: list[object]) -> list[bytes]:
        dropped = [ln for ln, m in zip(lines, marks) if m]
        if not dropped:
            return lines
        # The guard words, looked for once over everything left out: a line is kept back only
        # where one of them is there at all.
        words = self._present(b"\n".join(dropped))
        if not words:
            return [ln for ln, m in zip(lines, marks) if not m]
        return [ln for ln, m in zip(lines, marks) if not m or any(w in ln for w in words)]


def hyperscan_words(words: tuple[bytes, ...]) -> Callable[[bytes], list[bytes]]:
    """Which of `words` are in a blob, in one Hyperscan pass (each word reported once): what 40
    `in` tests over every line left out cost, at memory speed."""
    db = _database(words)

    def present(blob: bytes) -> list[bytes]:
        found: list[bytes] = []
        db.scan(blob, match_event_handler=lambda pid, _f, _t, _fl, _c: found.append(words[pid]))
        return found

    return present


@cache
def _database(words: tuple[bytes, ...]) -> Any:
    hs = _hyperscan()
    db = hs.Database()
    db.compile(expressions=[re.escape(w) for w in words], ids=list(range(len(words))), elements=len(words),
               flags=[hs.HS_FLAG_SINGLEMATCH] * len(words))
    return db
