"""Replay a simulated run through the engine on a simulated clock: a run-week judged in seconds
(docs/reading.md, "Stalls, at the run's own pace"; `benchmarks/detection.py`).

The plug-in's own simulator writes its files; the replay re-times its script with the pauses
healthy runs have — a first step 2–10 minutes late (warm-up), a heavy tail of slow steps, checkpoint saves lasting
several step times (its directory there while it writes, as the framework names it), evaluations every so many
steps with a progress bar in the log, block-buffered logs — and injects a fault at a step: a
hang with every process alive (its GPUs idle, memory held), the whole run killed, a straggler
(every step 3× slower), or the scenario's own failure. Files get their simulated modification
times; processes and GPUs are virtual (`runtop.simulator.virtual`); the engine reads as it
always does, with the simulated clock. Every finding is recorded as it begins."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from runtop.engine.engine import Engine
from runtop.engine.live import LiveRun
from runtop.engine.reader import RunReader
from runtop.frameworks.discovery import DiscoveryError, discover
from runtop.playback.replay_faults import TICK, Faults
from runtop.playback.replay_pauses import Habits, Pauses
from runtop.rules.pace import Pace
from runtop.simulator.outcome import Outcome, Seen
from runtop.simulator.virtual import VirtualGpus, VirtualProcesses

EPOCH = 2_000_000_000.0  # the simulated clock's zero (2033: a file it did not stamp looks old, never new)
BUFFER = 8192  # Python's block buffer: a log redirected to a file arrives in these
# A gap at least this long is judged again just before it ends (the longest silence it reaches);
# a shorter one cannot cross the shortest stall limit (a minute) by itself.
SILENCE_S = 20.0
# New files are looked for at most this often in wall seconds (a listing of a run with a
# directory per step costs; a replay plays a few steps in that time).
RESCAN_S = 0.05


def ready(root: str, actions: int) -> bool:
    """Whether the run has named its framework (or written for 200 actions without doing so)."""
    try:
        return os.path.isdir(root) and bool(os.listdir(root)) and (actions >= 200 or discover(root).framework != "generic")
    except DiscoveryError:
        return False  # nothing readable yet (a buffered log not flushed once)


class Replay(Pauses, Faults):
    def __init__(self, make_sim: Callable[[str], Any], *, habits: Habits | None = None, fault: str | None = None,
                 fault_step: int | None = None, gpus: bool = True, seed: int = 0, after_fault_s: float = 3600.0,
                 pace: Callable[[], Pace] | None = None, ranks: int = 1) -> None:
        self.pace = pace  # another way to learn the run's pace (a benchmark's baseline)
        self.make_sim = make_sim  # root → a simulator (a plug-in's `simulator(root, scenario, …)`)
        self.habits = habits or Habits()
        self.fault, self.fault_step = fault, fault_step
        self.gpus = gpus
        self.rng = random.Random(seed)
        self.after_fault_s = after_fault_s
        self.t = 0.0
        self.out = Outcome()
        self._scratch = tempfile.mkdtemp(prefix="runtop-replay-")
        self._buffers: dict[str, bytes] = {}
        self.ranks = ranks  # the trainer's GPUs
        self._appended: set[str] = set()  # every file the run wrote to
        self._silenced: str | None = None  # a file the fault stopped (a hung node's log)
        self._unjudged = False  # actions ran since the engine last judged
        self._written: set[str] = set()  # files appended to since the last touch
        self._step_times: list[float] = []

    @property
    def now(self) -> float:
        return EPOCH + self.t

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    # ---- the script ---------------------------------------------------------------------
    def _dry_run(self) -> list[tuple[float, frozenset[str], int | None, bool]]:
        """Each action's time, the directories it creates, the run's step after it and whether
        it saved a checkpoint (one more listed by the plug-in):
        the script played once into scratch, unbuffered, `os.makedirs` noting what it made and a
        reader following it (the habits follow the run's steps, not what a buffered log shows)."""
        root = os.path.join(self._scratch, "dry")
        sim = self.make_sim(root)
        sim.procs = VirtualProcesses(getattr(sim, "TITLES", ()), lambda: 0.0)
        made: set[str] = set()
        real = os.makedirs

        def makedirs(name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
            path = os.fspath(name)
            if not os.path.isdir(path):
                made.add(os.path.relpath(path, root))
            real(path, mode, exist_ok)

        out: list[tuple[float, frozenset[str], int | None, bool]] = []
        reader: RunReader | None = None
        os.makedirs = makedirs
        try:
            for i, (at, act) in enumerate(sim.script()):
                made.clear()
                act()
                if reader is None and ready(root, i):
                    reader = RunReader(discover(root))
                saves = len(reader.state.checkpoints) if reader is not None else 0
                if reader is not None:
                    # Every action until the first step (its logs appear one by one), then every 50 ms.
                    every = RESCAN_S if reader.state.current_step() is not None else 0.0
                    reader.poll(rescan_every=every, ckpt_every=0.0 if made else float("inf"))
                step = reader.state.current_step() if reader is not None else None
                out.append((at, frozenset(made), step, reader is not None and len(reader.state.checkpoints) > saves))
        finally:
            os.makedirs = real
            if reader is not None:
                reader.close()
        shutil.rmtree(root, ignore_errors=True)
        return out

    def run(self) -> Outcome:
        plan = self._dry_run()
        root = os.path.join(self._scratch, "run")
        sim = self.make_sim(root)
        procs = VirtualProcesses(getattr(sim, "TITLES", ()), lambda: self.now)
        sim.procs = procs
        procs.start()
        self._wrap_append(sim)
        engine: Engine | None = None
        last_step: int | None = None
        stepped_at = 0.0
        factor = 1.0
        warm_up = self.rng.uniform(*self.habits.warm_up)  # spent before the first step lands
        actions: Iterator[tuple[float, Callable[[], None]]] = iter(sim.script())
        prev: float | None = None
        for i, (at, act) in enumerate(actions):
            gap = 0.0 if prev is None else (at - prev) * factor
            prev = at
            _, news, step, saved = plan[i] if i < len(plan) else (at, frozenset(), last_step, False)
            if warm_up and step is not None and last_step is None:
                gap, warm_up = gap + warm_up, 0.0  # the action that lands the first step waited for it
            if saved and self._median() and engine is not None:
                self._wait(engine, self.t + gap, None)
                self._save(engine, sim, root, news, step or 0, at)  # 3-6 median steps, then the action writes it whole
            else:
                self._wait(engine, self.t + gap, None)
            act()
            if self.fault == "script" and self.out.fault_at is None and sim.failing:
                self.out.fault_at = self.t  # the scenario's failure began with this action
            self._touch(root, news)
            if engine is None and ready(root, i):
                # runtop is started once the run has named its framework (a live run read
                # generically is looked at again every few wall seconds, which a replay has not).
                engine = self._engine(root, procs)
            self._unjudged = engine is not None  # judged once time moves on: actions of one instant, once
            if step is not None and step != last_step:
                if last_step is not None:
                    self._step_times.append(self.t - stepped_at)
                last_step, stepped_at = step, self.t
                factor = self._next_factor(step)
                self._fault_before(step)
                if step % self.habits.eval_every == 0 and step and self._median():
                    self._evaluate(engine, sim, step, at)
                if engine is not None and self.fault is not None and self._stops(step):
                    return self._after(engine, procs, self.fault)  # what a buffer held is never written
        self._flush(root)
        self.out.fault_at = self.out.fault_at if self.out.fault_at is not None else (self.t if self.fault == "script" else None)
        if engine is not None:
            if getattr(sim, "scenario", "healthy") not in getattr(sim, "HANGS", frozenset()):
                procs.end()  # the launcher tears down what is left
            else:
                procs.hung = True
            self._wait(engine, self.t + (self.after_fault_s if self.fault == "script" else 4 * TICK), TICK)  # a straggler ran to its end
            engine.close()
        return self._done()

    def _tail(self) -> float:
        """A step's time against the usual: a heavy tail's slow step 2-4x, else 0.85-1.2x."""
        return self.rng.uniform(2.0, 4.0) if self.rng.random() < self.habits.tail_p else self.rng.uniform(0.85, 1.2)

    def _median(self) -> float | None:
        if len(self._step_times) < 3:
            return None
        return sorted(self._step_times)[len(self._step_times) // 2]

    def _median_gap(self, span: tuple[float, float]) -> float:
        return self.rng.uniform(*span) * (self._median() or 30.0)

    # ---- time, files, judging ----------------------------------------------------------------
    def _engine(self, root: str, procs: VirtualProcesses) -> Engine:
        gpu = VirtualGpus(procs, lambda: self.now, self.ranks) if self.gpus else None
        layout = discover(root)
        run = LiveRun(layout, poll=True, interval=RESCAN_S, processes=False, ckpt_every=0.0)
        engine = Engine(layout, interval=1e-3, poll=True, vllm_url=None, disks=False, gpus=self.gpus, gpu=gpu, run=run,
                        clock=lambda: self.now, proc_sampler=procs, process_period=1e-6, publishing=False)
        if self.pace is not None:
            engine.pace = self.pace()
        for probe in engine.probes:
            probe.inline()  # virtual processes and GPUs: no thread to wait for
        return engine

    def _wait(self, engine: Engine | None, until: float, tick: float | None, stop_at_down: bool = False) -> None:
        """Let simulated time pass to `until`: judged every `tick`, else once just before it ends
        (the longest silence a healthy pause reaches)."""
        if engine is None or until <= self.t:
            self.t = max(self.t, until)
            return
        if tick is None:
            if self._unjudged:
                self._judge(engine)  # what the last instant's actions wrote, judged when they wrote it
            if until - self.t >= SILENCE_S:
                self.t = until - 1e-3
                self._judge(engine)
            self.t = until
            return
        while self.t < until:
            self.t = min(until, self.t + tick)
            self._judge(engine)
            if stop_at_down and engine.verdict.verdict == "Down":
                return

    def _judge(self, engine: Engine) -> None:
        self._unjudged = False
        if not engine.step():
            engine.judge()  # nothing new read or probed: the simulated clock moved on all the same
        v = engine.verdict
        for f in v.new:
            self.out.findings.append(Seen(self.t, f.rule, f.label, f.message))

    def _wrap_append(self, sim: Any) -> None:
        own = sim._append
        self._main_log: str | None = None

        def append(rel: str, text: str) -> None:
            if self._main_log is None and rel.endswith(".log"):
                self._main_log = rel
            self._appended.add(rel)
            if rel == self._silenced:
                return  # a hung node writes nothing more
            if not self.habits.buffered:
                own(rel, text)
                self._written.add(rel)
                return
            # As Python's buffered writer does: whole 8 KB blocks, a line cut where the block ends.
            held = self._buffers.get(rel, b"") + text.encode()
            while len(held) >= BUFFER:
                self._write(sim.root, rel, held[:BUFFER])
                held = held[BUFFER:]
            self._buffers[rel] = held

        sim._append = append

    def _write(self, root: str, rel: str, data: bytes) -> None:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab") as f:
            f.write(data)
        self._written.add(rel)

    def _flush(self, root: str) -> None:
        for rel, held in self._buffers.items():
            if held:
                self._write(root, rel, held)  # the exit flushes what is left
        self._buffers.clear()
        self._touch(root)

    def _touch(self, root: str, dirs: frozenset[str] = frozenset()) -> None:
        """Give what the last action wrote the simulated time: the files it appended to, and
        everything in the directories it made."""
        stamp = self.now
        for rel in self._written:
            path = os.path.join(root, rel)
            if os.path.exists(path):
                os.utime(path, (stamp, stamp))
        self._written.clear()
        for rel in dirs:
            for d, _, files in os.walk(os.path.join(root, rel)):
                for name in files:
                    os.utime(os.path.join(d, name), (stamp, stamp), follow_symlinks=False)
                os.utime(d, (stamp, stamp))

    def _done(self) -> Outcome:
        self.out.seconds = self.t
        self.out.steps = len(self._step_times) + 1
        self.out.step_median = self._median()
        self.out.step_times = list(self._step_times)
        return self.out
