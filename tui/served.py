"""The TUI's driver in a `runtop serve` session: Textual's web driver, and a TUI that leaves
when `serve` is gone (docs/design.md, "`runtop serve`: a door with a lock").

Textual's web driver keeps the app running after its pipes close: a TUI whose `serve` was
killed (or that lost its session while it started) stayed up, reparented to init, with no
one to see it. Here the end of stdin, or a write to a closed stdout, means `serve` is gone:
the app is asked to quit, and the process exits by itself if it has not within `LEAVE_S`.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from typing import Any

from textual.drivers.web_driver import WebDriver

LEAVE_S = 3.0


class ServedDriver(WebDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gone = threading.Event()
        self._write = partial(self._write_or_leave, self.fileno)

    def _write_or_leave(self, fileno: int, data: bytes) -> int:
        try:
            return os.write(fileno, data)
        except OSError:  # a closed pipe: serve is gone
            self._serve_gone()
            return len(data)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin ended while the app ran: serve closed it, or died
            self._serve_gone()

    def _serve_gone(self) -> None:
        if self._gone.is_set():
            return
        self._gone.set()
        # The app's own exit first (its engine threads stop); the process leaves regardless.
        timer = threading.Timer(LEAVE_S, os._exit, (0,))
        timer.daemon = True
        timer.start()
        try:
            self._loop.call_soon_threadsafe(self._app.exit)
        except RuntimeError:  # the loop is closed already
            os._exit(0)
