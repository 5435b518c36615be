"""The Logs pane's tail: the newest lines of every log, merged by time (a UI
buffer, owned by the engine's reading, not a fact of the run's state).

One writer (the engine's thread: the reader's polls and the Launcher pane's lines); the
screen gets a frozen `TailView` with each published view.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from runtop.parsers.crashes import crash_signature, has_traceback
from runtop.parsers.records import Record
from runtop.state.parts import MAX_LOG_LINES, LogLine, LogRecord


@dataclass(frozen=True)
class TailView:
    lines: tuple[LogLine, ...] = ()
    seq: int = 0  # lines ever added: a pane knows how many came since it last drew


class LogTail:
    def __init__(self, maxlen: int = MAX_LOG_LINES) -> None:
        self._lines: deque[LogLine] = deque(maxlen=maxlen)
        self.seq = 0
        self._view = TailView()
        self._screens: dict[str, list[str]] = {}  # what each watched pane showed last

    def extend(self, lines: Iterable[LogLine]) -> None:
        added = list(lines)
        self._lines.extend(added)
        self.seq += len(added)

    def add_screen(self, source: str, lines: list[str]) -> None:
        """A tmux pane's visible lines (the Launcher's `Trainer failed with exit code 1`): only
        those it did not show last time. The screen scrolls, so the overlap is matched."""
        lines = [ln for ln in lines if ln.strip()]
        prev = self._screens.get(source, [])
        k = min(len(prev), len(lines))
        while k and prev[-k:] != lines[:k]:
            k -= 1
        fresh = lines[k:] if prev else lines[-20:]
        self._screens[source] = lines
        self.extend(LogLine(source, _level(text), None, text[:500]) for text in fresh)

    def add_poll(self, lines: list[LogLine]) -> None:
        """One poll's lines from every file, merged by time (stable: each file keeps its order)."""
        if lines:
            lines.sort(key=lambda ln: ln.time or "")
            self.extend(lines[-MAX_LOG_LINES:])

    def lines(self) -> list[LogLine]:
        return list(self._lines)

    def view(self) -> TailView:
        """A frozen copy, made again only when lines came since the last one."""
        if self._view.seq != self.seq:
            self._view = TailView(tuple(self._lines), self.seq)
        return self._view


def _level(text: str) -> str | None:
    return "ERROR" if any(w in text for w in ("failed", "Error", "error", "Traceback")) else None


MAX_RECORD_CHARS = 20_000  # one line of a record, as the record view shows it


def pane_lines(
    records: list[Record], role: str, last_time: str | None, out: list[LogLine], origin: str = "", numbered: bool = True
) -> str | None:
    """The Logs pane's lines of `records` into `out`: each record's message, and the head and
    tail of its continuation (a traceback's last lines name the exception); each line keeps
    its whole record for Enter. `origin` names the file; `numbered` says its line numbers
    count from the file's start (not from where a tail began). Returns the time of the last
    record that had one (a bare print gets the time of the record before)."""
    for rec in records[-MAX_LOG_LINES:]:
        # A Ray-prefixed line is tagged with its process (`skyrl_entrypoint`), not the file's role.
        src = rec.proc.split(" pid=")[0] if rec.proc else role
        cont = rec.lines()
        # A headerless record is an error when it says so (a traceback, a way to die), not for
        # being headerless: NeMo-RL's and verl's drivers print their progress bare.
        level = rec.level or ("ERROR" if rec.fmt == "raylet" or (rec.fmt == "orphan" and _says_error(rec.message, cont)) else None)
        if rec.time:
            last_time = rec.time
        whole = None
        if cont or len(rec.message) > 500:
            where = f"{origin} line {rec.line}" if numbered and rec.line else origin
            head = min(len(rec.cont), len(cont))
            whole = LogRecord(
                where, (rec.message[:MAX_RECORD_CHARS], *(ln[:MAX_RECORD_CHARS] for ln in cont)), rec.cont_dropped, 1 + head
            )
        out.append(LogLine(src, level, last_time, rec.message[:500], whole))
        extra = cont if len(cont) <= 5 else [*cont[:2], f"… {len(cont) - 4 + rec.cont_dropped} more lines (Enter: whole record)", *cont[-2:]]
        for line in extra:
            out.append(LogLine(src, level, last_time, "  " + line[:500], whole))
    return last_time


def _says_error(message: str, cont: list[str]) -> bool:
    return has_traceback([message, *cont]) or crash_signature("\n".join([message, *cont[:20], *cont[-20:]])) is not None
