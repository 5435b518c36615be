"""The Logs pane's keys, as in less and toolong: `/` searches and jumps, `n`/`N`, `f` filters,
`g`/`G`, `t` a time, `l` the level, `w` wraps, Enter a record whole (README, "Keys")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtop.tui.record_screen import RecordScreen
from runtop.widgets.logs_pane import LogsPane

if TYPE_CHECKING:
    from textual.app import App

    _Base = App[int]
else:
    _Base = object


class LogKeys(_Base):
    """Needs `compact`, `slot`, `_slot_chosen`, `_apply_layout` and `refresh_panes` (the app's)."""

    if TYPE_CHECKING:
        slot: str
        _slot_chosen: bool

        @property
        def compact(self) -> bool: ...

        def _apply_layout(self) -> None: ...

        def refresh_panes(self) -> None: ...

    def action_log_level(self) -> None:
        self.query_one(LogsPane).cycle_level()

    def _logs(self) -> LogsPane:
        """The Logs pane, on screen: the compact layout shows it in its slot."""
        if self.compact and self.slot != "logs":
            self.slot = "logs"
            self._slot_chosen = True
            self._apply_layout()
        return self.query_one(LogsPane)

    def action_search(self) -> None:
        self._logs().open_search("search")

    def action_filter_logs(self) -> None:
        self._logs().open_search("filter")

    def action_logs_time(self) -> None:
        self._logs().open_search("time")

    def action_next_match(self, by: int) -> None:
        self._logs().next_match(by)

    def action_logs_oldest(self) -> None:
        self._logs().oldest()

    def action_logs_newest(self) -> None:
        self._logs().newest()
        self.refresh_panes()

    def action_wrap_logs(self) -> None:
        self.query_one(LogsPane).toggle_wrap()

    def on_logs_pane_open_record(self, event: LogsPane.OpenRecord) -> None:
        self.push_screen(RecordScreen(event.line, wrap=True))

    def action_toggle_follow(self) -> None:
        self.query_one(LogsPane).toggle_follow()
        self.refresh_panes()
