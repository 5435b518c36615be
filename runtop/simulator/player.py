"""Play a simulated run's script: all at once (tests) or in a thread at a pace (`runtop demo`).

A simulator is a script of (simulated second, action) pairs in time order; the
actions write files. Both frameworks' simulators share this player.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

Action = tuple[float, Callable[[], None]]


class ScriptPlayer:
    START = 0.0  # the simulated second the script begins at

    def __init__(self, root: str | None, default_name: str, speed: float) -> None:
        # A temp dir of our own (not a TemporaryDirectory, whose finaliser would remove it at
        # exit even when `runtop demo --keep` asked to keep it).
        self._tmp: str | None = None
        if root is None:
            self._tmp = tempfile.mkdtemp(prefix="runtop-demo-")
            root = os.path.join(self._tmp, default_name)
        self.root = root
        self.speed = speed
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def script(self) -> Iterator[Action]:  # pragma: no cover - each simulator writes its own
        raise NotImplementedError

    def _append(self, rel: str, text: str) -> None:
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)

    def run(self, until: float | None = None) -> None:
        """Write the whole script now (tests), or up to simulated second `until`."""
        for at, act in self.script():
            if until is not None and at > until:
                return
            act()

    def start(self) -> None:
        """Play the script in a thread at `speed` simulated seconds per real second."""

        def play() -> None:
            t0 = time.monotonic()
            for at, act in self.script():
                delay = (at - self.START) / self.speed - (time.monotonic() - t0)
                if delay > 0 and self._stop.wait(delay):
                    return
                act()

        self._thread = threading.Thread(target=play, name="runtop-simulator", daemon=True)
        self._thread.start()

    def stop(self, keep: bool = False) -> None:
        """Stop writing; the temp dir goes too unless `keep` (`runtop demo --keep`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._tmp is not None and not keep:
            shutil.rmtree(self._tmp, ignore_errors=True)
