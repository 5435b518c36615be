"""SIGTERM, SIGHUP and SIGINT end a TUI the way `q` does: Textual leaves the alternate
screen, turns mouse tracking off and shows the cursor again before the process exits.

Killed by the default handler instead, the process left the terminal in the alternate
screen with mouse tracking on and no cursor (docs/design.md, "Terminal hygiene"). The
handler only records the signal and asks the app's loop to exit: the loop wakes on the
request (a thread-safe call), so a signal that lands mid-frame never touches the screen.
"""

from __future__ import annotations

import signal
from types import FrameType, TracebackType
from typing import Any

from textual.app import App

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class EndOnSignal:
    """`with EndOnSignal(app) as ended: app.run()`; then `ended.signum` is the signal that
    ended it (None when the user left), and `ended.code` the shell's 128 + signal number."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> EndOnSignal:
        self._old = {sig: signal.signal(sig, self._on) for sig in SIGNALS}
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    @property
    def code(self) -> int | None:
        return None if self.signum is None else 128 + self.signum

    def _on(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = signum
        loop = self.app._loop  # set while the app runs
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.app.exit)
            return
        # No loop: the app has not started (or has ended), the terminal is as it was. The
        # command line's own handling of an interrupt ends the process.
        raise KeyboardInterrupt
