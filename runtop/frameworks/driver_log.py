"""What the frameworks that write one console log (wherever the user redirected it) share
(issue 16): the log found by its signs in a file or in the run dir holding it, the newest of
several, the run named for the log. A plug-in sets `signs` and `layout_name`."""

from __future__ import annotations

import os
import re

from runtop.discovery import RunLayout, Tracked
from runtop.frameworks.base import Framework


class DriverLogFramework(Framework):
    signs: re.Pattern[str] = re.compile(r"(?!)")  # words only this framework's log has
    layout_name = "driver log"

    def _layout(self, path: str) -> RunLayout:
        path = os.path.abspath(path)
        lay = RunLayout(os.path.dirname(path), self.name, self.layout_name)
        lay.logs = [Tracked(path, "trainer", "log")]
        return lay

    def _is_mine(self, path: str) -> bool:
        from runtop.discovery import DiscoveryError, sniff

        try:
            return bool(self.signs.search(sniff(path, 16384)))
        except DiscoveryError:
            return False

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        found = sorted((f for f in logs if self._is_mine(f)), key=os.path.getmtime)
        if not found:
            return None
        lay = self._layout(found[-1])
        lay.root = path  # the run's directory (where it was launched; its checkpoints beneath)
        if len(found) > 1:
            lay.notes.insert(0, f"{len(found)} {self.name} logs in {path}; showing the newest, {os.path.basename(found[-1])}")
        return lay

    def file_layout(self, path: str, text: str) -> RunLayout | None:
        return self._layout(path) if self.signs.search(text) else None

    def default_run_name(self, layout: RunLayout) -> str:
        if layout.logs:
            return os.path.splitext(os.path.basename(layout.logs[0].path))[0]
        return super().default_run_name(layout)
