"""Play a simulated run's script: all at once (tests) or in a thread at a pace (`runtop demo`).

A simulator is a script of (simulated second, action) pairs in time order; the
actions write files. Both frameworks' simulators share this player.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from runtop.simulator.processes import DemoProcesses

Action = tuple[float, Callable[[], None]]


class ScriptPlayer:
    START = 0.0  # the simulated second the script begins at
    # The processes the demo starts (title, role): each simulator names its framework's.
    TITLES: tuple[tuple[str, str], ...] = ()
    # Scenarios whose processes outlive the script's last line: a hang is silence with
    # every process alive (the others end at the script's end, as a launcher tears down).
    HANGS: frozenset[str] = frozenset()
    # Simulated seconds of the script a paced demo writes at once when it starts: the demo
    # joins a run already under way. A framework whose steps take minutes (SkyRL's: ~9 each)
    # would otherwise reach its scenario's fault minutes into the demo at the default speed,
    # Healthy until then; joined later in its timeline, every scenario shows its incident
    # within a minute, with the steps before it already in the charts.
    LEAD_IN_S = 0.0
    scenario = "healthy"
    failing = False  # the scenario's failure began (its first action ran): the detection replay times from there

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
        self.procs: DemoProcesses | None = None  # only a paced demo starts processes

    def ended(self, *roles: str) -> None:
        """A crash in the script: these roles' processes exit (all when none are named)."""
        if self.procs is not None:
            self.procs.end(roles or None)

    def launched(self) -> None:
        """A (re)launch in the script: every process runs again."""
        if self.procs is not None:
            self.procs.start()

    def fails(self, actions: Iterable[Action]) -> Iterator[Action]:
        """The scenario's failure, its first action saying that it began."""
        for i, (at, act) in enumerate(actions):
            yield at, (self._failure_begins(act) if i == 0 else act)

    def _failure_begins(self, act: Callable[[], None]) -> Callable[[], None]:
        def begins() -> None:
            self.failing = True
            act()

        return begins

    def saving_dir(self, rel: str) -> str:
        """Where a save bound for `rel` writes while it is not whole: `rel` itself, or elsewhere
        where the framework renames a whole save into place (docs/formats.md)."""
        return rel

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
        self._script_done()

    def start_processes(self) -> None:
        """The run's titled processes, which live and die with the script from now on."""
        self.procs = DemoProcesses(self.root, self.TITLES)
        self.procs.start()

    def _script_done(self) -> None:
        if self.scenario not in self.HANGS:
            self.ended()  # the launcher tears down what is left

    def start(self, processes: bool = False) -> None:
        """Play the script in a thread at `speed` simulated seconds per real second; with
        `processes`, the run's titled processes live and die with it."""
        if processes:
            self.start_processes()

        def play() -> None:
            t0 = time.monotonic()
            for at, act in self.script():
                delay = (at - self.START - self.LEAD_IN_S) / self.speed - (time.monotonic() - t0)
                # Asked before every action, not only before a wait: a demo's lead-in writes
                # minutes of its script at once, and a stop during it must not outlive stop().
                if self._stop.wait(delay) if delay > 0 else self._stop.is_set():
                    return
                act()
            self._script_done()

        self._thread = threading.Thread(target=play, name="runtop-simulator", daemon=True)
        self._thread.start()

    def stop(self, keep: bool = False) -> None:
        """Stop writing; the temp dir goes too unless `keep` (`runtop demo --keep`)."""
        self._stop.set()
        if self._thread is not None:
            # One action at most is still being written (a save's sparse files): waited for, so
            # nothing is written into the dir after it is removed.
            self._thread.join(timeout=30)
        self.ended()
        if self._tmp is not None and not keep:
            shutil.rmtree(self._tmp, ignore_errors=True)


class PacedRun(ScriptPlayer):
    """What the plug-ins' simulators share: scenario, length, save cadence, where the
    failure lands, a seeded random source. Each sets its class attributes."""

    SCENARIOS: tuple[str, ...] = ("healthy",)
    RUN_NAME = "run"
    MAX_STEPS = 8
    CKPT_INTERVAL = 4

    def __init__(self, root: str | None = None, *, scenario: str = "healthy", speed: float = 20.0,
                 max_steps: int | None = None, ckpt_interval: int | None = None, seed: int = 0) -> None:
        if scenario not in self.SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(self.SCENARIOS)}")
        super().__init__(root, self.RUN_NAME, speed)
        self.scenario = scenario
        self.max_steps = max_steps or self.MAX_STEPS
        self.ckpt_interval = ckpt_interval or self.CKPT_INTERVAL
        self.fail_step = self.fail_at(self.max_steps)
        self.rng = random.Random(seed)

    def fail_at(self, max_steps: int) -> int:
        """The step the failing scenario's failure lands on: past a save, before the end."""
        return max(3, max_steps // 2 + 1)
