"""The demo's processes: real children with the titles a real run's processes carry
(`PRIME-RL::Trainer`, `ray::skyrl_entrypoint`, `VLLM::EngineCore`), working in the run's
directory, so the process pane, the GPU pane and the rules that read them see a run that
lives and dies as the simulated logs say (the demo's process pane was empty).

Each child sets its title with setproctitle (what the frameworks themselves use), then
waits for its end; it also ends when its parent goes, so a killed demo leaves none behind.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

READY_S = 5.0  # how long the demo waits for its processes to take their titles

# The child: take the title, then wait until told to end or orphaned (its parent gone).
CHILD = """
import os, sys, time
try:
    from setproctitle import setproctitle
except ImportError:
    setproctitle = None  # untitled: the process pane shows it by its command line
if setproctitle is not None:
    setproctitle(sys.argv[1])
try:
    os.write(1, b"ready\\n")
except OSError:
    pass  # the demo stopped waiting: it needs no answer
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
parent = os.getppid()
while os.getppid() == parent:
    time.sleep(0.5)
"""


class DemoProcesses:
    def __init__(self, root: str, titles: Iterable[tuple[str, str]]) -> None:
        self.root = root
        self.titles = tuple(titles)  # (title, role), in start order
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, roles: Iterable[str] | None = None) -> None:
        """Start the processes of `roles` (all when None) that are not running."""
        wanted = set(roles) if roles is not None else None
        os.makedirs(self.root, exist_ok=True)
        started = []
        for title, role in self.titles:
            if wanted is not None and role not in wanted:
                continue
            proc = self._procs.get(title)
            if proc is not None and proc.poll() is None:
                continue
            self._procs[title] = proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, title], cwd=self.root,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
            started.append(proc)
        # The script begins once each has its title: a process the pane would show untitled
        # (or a crash that lands before the title) is not the run the logs describe.
        deadline = time.monotonic() + READY_S
        for proc in started:
            assert proc.stdout is not None
            select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            proc.stdout.close()

    def end(self, roles: Iterable[str] | None = None) -> None:
        """End the processes of `roles` (all when None), as a crash or a teardown would."""
        wanted = set(roles) if roles is not None else None
        for title, role in self.titles:
            proc = self._procs.get(title)
            if proc is None or (wanted is not None and role not in wanted):
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=5)
            del self._procs[title]

    def pids(self) -> dict[str, list[int]]:
        """Live pids by role."""
        out: dict[str, list[int]] = {}
        for title, role in self.titles:
            proc = self._procs.get(title)
            if proc is not None and proc.poll() is None:
                out.setdefault(role, []).append(proc.pid)
        return out
