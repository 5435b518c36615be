"""Wall-clock deadlines for calls into things runtop does not control.

A `/metrics` endpoint that drips one byte every 0.5 s blocked the engine for minutes;
a hanging `tmux` stalled it 10 s at a time; an NVML call has no timeout of its own; a
process scan can hang on `/proc` of a process in D state. Such a call runs in a daemon
thread and the caller waits at most `seconds`: past that it gets `Slow` and goes on. A
call that never returns keeps its one thread; `Deadline` never starts a second one
beside it, so a stuck source costs one thread, not one per tick.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Slow(Exception):
    """The call did not return within its deadline; the message is one line."""


class Unavailable(Exception):
    """A source that is simply not there (nothing on the port, no tmux server): said plainly,
    and asked again only every `idle_period` of its probe, not on every tick."""


class Deadline(Generic[T]):
    """Runs `fn` with a deadline, one call at a time."""

    def __init__(self, what: str, fn: Callable[[], T], seconds: float) -> None:
        self.what, self.fn, self.seconds = what, fn, seconds
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._box: dict[str, object] = {}
        self.inline = False  # called on the caller's thread: a source that answers at once (a simulated one)
        self._answered = False

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start a call in the background (no-op while one is running)."""
        if self.busy:
            return
        box: dict[str, object] = {}
        self._box = box

        def target() -> None:
            try:
                box["value"] = self.fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller, not lost
                box["error"] = e

        self._started = time.monotonic()
        if self.inline:
            target()
            self._answered = True
            return
        self._thread = threading.Thread(target=target, name=f"runtop-{self.what}", daemon=True)
        self._thread.start()

    def result(self, wait: float = 0.0) -> tuple[bool, T | None]:
        """(done, value) after waiting up to `wait` s; raises the call's exception, or `Slow`
        once the call has run past its deadline."""
        t = self._thread
        if self._answered:
            self._answered = False
        elif t is None:
            return False, None
        elif not self._joined(t, wait):
            ran = time.monotonic() - self._started
            if ran >= self.seconds:
                raise Slow(f"{self.what} slow: gave up after {self.seconds:g} s (still waiting on it for {ran:.0f} s)")
            return False, None
        self._thread = None
        if "error" in self._box:
            raise self._box["error"]  # type: ignore[misc]
        return True, self._box.get("value")  # type: ignore[return-value]

    @staticmethod
    def _joined(t: threading.Thread, wait: float) -> bool:
        """Whether the call's thread ended within `wait` seconds."""
        t.join(wait)
        return not t.is_alive()

    def call(self) -> T:
        """Start and wait: the value, the call's exception, or `Slow` after `seconds`."""
        if self.busy:
            # The previous call is still stuck: do not pile another one on top of it.
            done, value = self.result(max(0.0, self.seconds - (time.monotonic() - self._started)))
        else:
            self.start()
            done, value = self.result(self.seconds)
        if not done:
            raise Slow(f"{self.what} slow: gave up after {self.seconds:g} s")
        return value  # type: ignore[return-value]


def call_with_deadline(what: str, fn: Callable[[], T], seconds: float) -> T:
    """One call of `fn` with a deadline (headless commands)."""
    return Deadline(what, fn, seconds).call()


# What a command that ends by itself is given past its own end to finish (alerts queued at the
# end are delivered within a few seconds; a check-in is one write).
END_GRACE_S = 20.0


class Watchdog:
    """Ends the process `seconds` from now unless `cancel()` comes first: a command with an end
    (`watch --duration`, `export --duration`, the TUI after `q`) must end even when a read or a
    child it waits on never returns (a file on a hung NFS server, a process in D state). One
    line says what was still running; the exit code is `code`."""

    def __init__(self, seconds: float, what: str, code: int) -> None:
        self.what, self.code = what, code
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.name = "runtop-watchdog"
        self._timer.start()

    def _fire(self) -> None:
        stop_now(self.what, self.code)

    def cancel(self) -> None:
        self._timer.cancel()


def stop_now(what: str, code: int) -> None:
    """End the process at once, saying `what` on stderr: a thread stuck in a read cannot be
    stopped, and a normal exit would wait for it."""
    import os
    import sys

    try:
        sys.stdout.flush()
        sys.stderr.write(f"runtop: {what}\n")
        sys.stderr.flush()
    finally:
        os._exit(code)
