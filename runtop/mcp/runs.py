"""The runs `runtop mcp` serves: one engine per run, stepped in a thread of its own as
`runtop watch` steps it, and the journal of incidents an agent polls (docs/mcp.md).

A tool reads the engine's newest published view (frozen: no lock, no re-read of the files),
so an answer costs what copying a few fields costs, whatever the run's length.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtop.rules.health import Verdict

if TYPE_CHECKING:
    from runtop.engine.engine import Engine
    from runtop.view.view import View

# How long a tool waits for a run's first judged look (its tail read): a server just started
# answers "reading" rather than nothing, but not for the first second of a small run.
FIRST_LOOK_S = 15.0
JOURNAL_KEPT = 10_000  # incidents begun or cleared, kept for agents that poll with a cursor


def incident(f: Any) -> dict[str, Any]:
    """A finding as an incident: the keys of the status JSON's `alerts`, and the `key` that makes
    two findings one incident (its rule and subject, never its numbers)."""
    return {
        "key": f.key, "rule": f.rule, "severity": f.severity, "label": f.label, "message": f.message, "evidence": f.evidence,
        "since": f.since, "down": f.down, "cause": f.cause, "wrapper": f.wrapper, "phase": f.phase,
    }


class Journal:
    """Each incident once when it begins and once when it clears, numbered by a cursor: an agent
    that asks `findings(since=cursor)` every hour sees each change once, whatever happened
    between its looks (the engine is watched at every step, not at the agent's calls)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: deque[dict[str, Any]] = deque(maxlen=JOURNAL_KEPT)
        self._open: dict[str, dict[str, Any]] = {}
        self.cursor = 0  # the number of the newest event (0: none yet)

    def observe(self, verdict: Verdict, now: float) -> None:
        current = {f.key: incident(f) for f in verdict.alerts}
        with self._lock:
            for key, inc in current.items():
                if key not in self._open:
                    self._add("begun", inc, now)
            for key, inc in self._open.items():
                if key not in current:
                    self._add("cleared", inc, now)
            self._open = current

    def _add(self, event: str, inc: dict[str, Any], now: float) -> None:
        self.cursor += 1
        self._events.append({"cursor": self.cursor, "event": event, "time": now, "incident": inc})

    def since(self, cursor: int = 0, after_time: float | None = None) -> tuple[list[dict[str, Any]], int, bool]:
        """(events after `cursor`, or at or after `after_time`; the newest cursor; whether events
        the agent had not seen were dropped from the journal's memory)."""
        with self._lock:
            events = list(self._events)
            newest = self.cursor
        lost = bool(events) and events[0]["cursor"] > cursor + 1 and after_time is None
        if after_time is not None:
            return [e for e in events if e["time"] >= after_time], newest, False
        return [e for e in events if e["cursor"] > cursor], newest, lost

    def open(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._open.values())


@dataclass
class ActionSettings:
    """How `propose_action` finds the run's Launcher pane and its launch command (as `runtop actions`)."""

    read_only: bool = False
    config: str | None = None
    tmux_socket: str | None = None
    tmux_session: str | None = None
    tmux_target: str | None = None
    launch_cmd: str | None = None


@dataclass
class Served:
    """One run the server answers for: its engine, stepped in a thread, and its journal."""

    name: str  # how tools name it (its directory's name; the path too is accepted)
    path: str
    engine: Engine
    actions: ActionSettings = field(default_factory=ActionSettings)
    journal: Journal = field(default_factory=Journal)
    poll_only: bool = False  # a fleet's runs are polled at the interval: no one run's writes wake its thread
    problem: str | None = None  # the last step that failed, in one line (the engine carries on)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"runtop-mcp-{self.name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        engine = self.engine
        while not self._stop.is_set():
            try:
                engine.step()
                self.problem = None
            except Exception as e:  # noqa: BLE001 - a failing step is said in the answers, never a dead server
                self.problem = f"{type(e).__name__}: {e}"
            if engine.steps_done:
                self.journal.observe(engine.verdict, time.time())
            if self.poll_only:
                self._stop.wait(engine.interval)
            else:
                engine.wait(engine.interval)  # a write wakes it early

    def view(self, wait: float = FIRST_LOOK_S) -> View:
        """The engine's newest view, after its first judged look with the run's processes in it
        (at most `wait` seconds): which processes live is part of the verdict (a death with
        nothing alive is Down), and `status --json` judges with them."""
        until = time.monotonic() + wait
        looks = any(p.name == "process" for p in self.engine.probes)
        while self._thread is not None and time.monotonic() < until:
            view = self.engine.view()
            if self.engine.steps_done and (not looks or view.system.readings.get("process")):
                return view
            time.sleep(0.02)
        return self.engine.view()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.engine.interval + 5.0)
        self.engine.close()


def unique_names(paths: list[str]) -> list[str]:
    """Each run's directory name; where two runs share one, their paths name them."""
    from runtop.fleet.runs import run_name

    names = [run_name(p) for p in paths]
    return [n if names.count(n) == 1 else os.path.abspath(p) for n, p in zip(names, paths)]


def pick(runs: list[Served], run: str | None) -> Served:
    """The run a tool names, by name or path; the only run where none is named."""
    if run is None or run == "":
        if len(runs) == 1:
            return runs[0]
        raise LookupError(f"name a run: this server serves {len(runs)} ({', '.join(r.name for r in runs)})")
    for r in runs:
        if run == r.name:
            return r
    real = os.path.realpath(run)
    for r in runs:
        if real == os.path.realpath(r.path):
            return r
    raise LookupError(f"no run {run!r} here: this server serves {', '.join(r.name for r in runs)} (start `runtop mcp PATH` with it)")
