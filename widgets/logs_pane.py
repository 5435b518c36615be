"""Merged tail of the run's logs: source tags, a level filter, search, pause/follow."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, RichLog

from runtop.state import LogLine
from runtop.view import View

LEVELS = ("ALL", "INFO", "WARNING", "ERROR")
RANK = {"TRACE": 0, "DEBUG": 0, "INFO": 1, "SUCCESS": 1, "WARNING": 2, "ERROR": 3, "CRITICAL": 3}
LEVEL_STYLE = {"WARNING": "yellow", "ERROR": "red", "CRITICAL": "bold red", "SUCCESS": "green"}


class LogsPane(Vertical):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    LogsPane { height: 12; border: round $primary-darken-2; }
    LogsPane > Input { height: 3; display: none; }
    LogsPane.-searching > Input { display: block; }
    LogsPane > RichLog { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.level = 0
        self.query_text = ""
        self.follow = True
        self._seq = 0
        self._pending = 0
        self._lines: list[LogLine] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the log tail (Enter to apply, Esc to close)", id="log-search")
        yield RichLog(id="log-view", max_lines=1000, wrap=False, markup=False, auto_scroll=True)

    def on_mount(self) -> None:
        self._retitle()

    def _retitle(self) -> None:
        parts = [f"logs · {LEVELS[self.level]}+" if self.level else "logs · all levels"]
        if self.query_text:
            parts.append(f"/{self.query_text}")
        parts.append("following" if self.follow else f"paused (+{self._pending} new)")
        self.border_title = " · ".join(parts)

    def _keep(self, line: LogLine) -> bool:
        if self.level and RANK.get(line.level or "INFO", 1) < self.level:
            return False
        return not self.query_text or self.query_text.lower() in line.text.lower()

    def _write(self, log: RichLog, lines: list[LogLine]) -> None:
        for ln in lines:
            if not self._keep(ln):
                continue
            t = Text(f"{ln.time or '        '} ", style="grey50")
            t.append(f"{ln.source[:16]:<16} ", style="cyan")
            t.append(ln.text, style=LEVEL_STYLE.get(ln.level or "", ""))
            log.write(t)

    def update_view(self, view: View) -> bool:
        tail = view.state.log_tail
        seq = view.state.log_seq
        if seq == self._seq:
            return False
        new = min(seq - self._seq, len(tail)) if seq > self._seq else len(tail)
        self._seq = seq
        fresh = list(tail)[-new:] if new else []
        self._lines = list(tail)
        if not self.follow:
            self._pending += len(fresh)
            self._retitle()
            return False
        self._write(self.query_one(RichLog), fresh)
        return True

    def rerender(self) -> None:
        log = self.query_one(RichLog)
        log.clear()
        self._write(log, self._lines)
        self._pending = 0
        self._retitle()

    def cycle_level(self) -> None:
        self.level = (self.level + 1) % len(LEVELS)
        self.rerender()

    def toggle_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.rerender()
        else:
            self._retitle()

    def open_search(self) -> None:
        self.add_class("-searching")
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.remove_class("-searching")
        self.rerender()
        self.query_one(RichLog).focus()
