"""The generic reader: any text log, whatever wrote it (docs/reading.md, "The generic reader").

It is a plug-in like the others, with the same contract, and the one a new framework starts
from: it claims what no framework's evidence claims, reads deaths, progress and ends in words
every training script uses, and says that it read the run generically. It also runs under
every other plug-in (`under.py`): a death or an end a plug-in's parser passes over is still read.
"""

from __future__ import annotations

import os
from typing import Any

from runtop.frameworks.driver_log import DriverLogFramework
from runtop.frameworks.layout import RunLayout, Tracked

NAME = "generic"
# What a user redirects a run's output into, newest first when there are several.
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
NOT_LOGS = ("requirements", "license", "readme", "notes", "cmake", "pip-")


def text_logs(paths: list[str]) -> list[str]:
    """The files of `paths` that can be a run's output, oldest first."""
    found = [p for p in paths if p.lower().endswith(LOG_SUFFIXES) and not os.path.basename(p).lower().startswith(NOT_LOGS)
             and os.path.isfile(p)]
    return sorted(found, key=_mtime)


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


class Generic(DriverLogFramework):
    name = NAME
    layout_name = "text log"
    package = __name__  # its parse module (header, Parser)
    expects = ""  # it takes any text file: it names nothing in "expected …"
    read_note = "framework not recognised: read generically"
    simulates = False

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        return ()

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        raise NotImplementedError("the generic reader has no simulator: `runtop demo --framework` names the frameworks that do")

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        found = text_logs(logs)
        if not found:
            return None
        lay = self._layout(found[-1])
        lay.root = path
        if len(found) > 1:
            lay.notes.insert(0, f"{len(found)} logs in {path}; reading the newest, {os.path.basename(found[-1])}")
        return lay

    def file_layout(self, path: str, text: str) -> RunLayout:
        return self._layout(path)

    def _layout(self, path: str) -> RunLayout:
        path = os.path.abspath(path)
        lay = RunLayout(os.path.dirname(path), self.name, self.layout_name)
        lay.logs = [Tracked(path, "trainer", "log")]
        return lay


GENERIC = Generic()
