"""The engine: the run's files plus the system probes, judged by the rules.

One `Engine` serves the TUI (stepped from its worker thread), `runtop status`, `check`
and `watch` (`snapshot.RunJudge` drives one over a reader read to the end), so the same
facts give the same verdict everywhere: the NVML probe that says "vLLM is alive but holds
no GPU memory" speaks to `runtop check` too.

Everything here does I/O and runs off the UI loop. Each probe has its own period (a TTL), so
more panes never mean more syscalls, and its own error: a probe that fails shows why in its
pane while the others carry on. The state is written only on the engine's thread, under `lock`;
the screen never takes that lock. After each bounded slice of reading the engine publishes a
frozen, versioned `View` (`runtop.view.publish`), and the app renders the newest one: a pane never
sees a half-applied poll, and a key never waits on the disk.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence

from runtop.action_error import ActionError
from runtop.config import Thresholds
from runtop.engine.live import LiveRun, OnceRun
from runtop.frameworks import get as get_framework
from runtop.frameworks import process_roles
from runtop.frameworks.layout import RunLayout
from runtop.outputs.alerting import Alerting
from runtop.outputs.forensics import Forensics, InThread
from runtop.probes.registry import PROBES
from runtop.probes.runner import Probe
from runtop.probes.seam import SystemProbe
from runtop.queues import drain
from runtop.rules.findings import Finding
from runtop.rules.hang import GpuIdleTracker
from runtop.rules.health import READING, HealthTracker, Verdict
from runtop.rules.pace import Pace
from runtop.rules.registry import Facts
from runtop.sources.disk import DiskSampler, DiskSnapshot, run_paths
from runtop.sources.gpu import GpuProbe, GpuSnapshot, NvmlProbe
from runtop.sources.lifetimes import Lifetimes
from runtop.sources.process_watch import ProcessWatch
from runtop.sources.processes import ProcessSampler, ProcessSnapshot, ProcessSource
from runtop.sources.ray_state import RayClient
from runtop.sources.slurm import SLURM_PERIOD_S, SlurmClient
from runtop.sources.tmux import TmuxError
from runtop.sources.vllm_metrics import DEFAULT_URL
from runtop.state.run import RunState
from runtop.view.history import PERIOD_S, HistoryKeeper
from runtop.view.publish import Publisher
from runtop.view.view import SystemView, View

# What one slice of reading may take per file before the lock is given back (~20-50 ms of work).
SLICE_BYTES = 256 << 10
STEP_READ_S = 1.0  # … and the most one step reads before the probes have their turn
PUBLISH_S = 0.05  # while a step reads, a fresh view at most this often (copying has a cost)
# How long one engine step waits for the probes it started (they run in parallel).
PROBE_WAIT_S = 0.5
# How long a headless check-in waits for every probe at once (a hung NFS `/proc` or NVML
# call is judged without, and says so).
PROBE_ALL_S = 10.0


def _samplers(layout: RunLayout) -> tuple[ProcessSampler, DiskSampler]:
    """The run's processes and disks as its plug-in knows them (its processes' titles, driver and
    roles; where its core dumps land)."""
    fw = get_framework(layout.framework)
    return ProcessSampler(layout.root, [t.path for t in layout.logs], process_roles(fw)), DiskSampler(run_paths(layout.root, None), fw.core_roots(layout.root))


class Engine:
    def __init__(
        self,
        layout: RunLayout,
        *,
        interval: float = 2.0,
        poll: bool = False,
        gpu: GpuProbe | None = None,
        vllm_url: str | None = DEFAULT_URL,
        processes: bool = True,
        disks: bool = True,
        clock: Callable[[], float] = time.time,
        proc_sampler: ProcessSource | None = None,
        disk_sampler: DiskSampler | None = None,
        thresholds: Thresholds | None = None,
        launcher: Callable[[], list[str]] | None = None,
        run: LiveRun | OnceRun | None = None,
        alerting: Alerting | None = None,
        publishing: bool | None = None,
        slurm: SlurmClient | None = None,
        slurm_job: str | None = None,
        ray_address: str | None = None,
        ray: RayClient | None = None,
        gpus: bool = True,
        process_period: float | None = None,
        slurm_period: float = SLURM_PERIOD_S,
        probes: Sequence[SystemProbe] | None = None,
    ) -> None:
        self.layout = layout
        self.interval = interval
        self.clock = clock
        self.lock = threading.RLock()
        # The files: followed live (tail first, history backfilled), or read once by the caller.
        self.live = run or LiveRun(layout, poll=poll, interval=interval, processes=False)
        self.system = SystemView(vllm_url=vllm_url)
        self.health = HealthTracker(thresholds)
        # Hang forensics: taken in a thread of its own when a stall begins (if
        # `forensics_on_stall`) or when asked (`F`); the newest result is named by the stall.
        self.forensics_on_stall = False
        self.gpu_idle = GpuIdleTracker()  # since when each GPU has sat idle holding the run's memory
        # Each GPU's and each role's last readings, drawn as sparklines in their panes.
        self.history = HistoryKeeper(period=max(PERIOD_S, interval))
        # Which of the run's processes were seen alive, and when all of them went (a run killed
        # whole says nothing in its logs); what an earlier runtop recorded stands in until then.
        self.processes_over_time = ProcessWatch(layout.root, load=processes)
        self.forensics = InThread()
        # How long the run goes between steps, learned as it runs: what "stalled" means for it.
        self.pace = Pace()
        # Who hears of an incident when no one looks at the screen: every verdict goes there.
        self.alerting = alerting
        self.verdict: Verdict = self._judge()
        self._judged_reads = False  # no verdict yet judges what was read
        # Samplers can be handed in (tests, snapshots): anything with the same `sample` works.
        procs, disks_ = _samplers(layout)
        self._procs, self._disks = proc_sampler or procs, disk_sampler or disks_
        self._own_samplers = (proc_sampler is None, disk_sampler is None)
        self._gpu = gpu
        self.probes: list[Probe] = []
        # Findings that began, handed to the screen without a shared lock.
        self._new_findings: queue.SimpleQueue[Finding] = queue.SimpleQueue()
        self._publisher = Publisher()
        self.steps_done = 0  # engine steps completed (what a test waits on to see one whole step)
        self._published_at = 0.0
        # A run read once by the caller (`status`, `check`) has no screen: no frozen copy of
        # a 100k-step state is made for nobody (`view()` builds one if asked).
        self.publishing = not isinstance(self.live, OnceRun) if publishing is None else publishing
        if processes:
            self.probes.append(Probe("process", process_period or interval, self._sample_procs))
        if disks:
            self.probes.append(Probe("disk", max(interval, 5.0), self._sample_disks))
        if gpus:  # off for a fleet's runs: one machine's GPUs are not twenty runs' news
            self.probes.append(Probe("gpu", interval, self._sample_gpu))
        # The probes on the seam (`runtop.probes.seam`): `probes`, else every one `PROBES` makes of this engine's options.
        if probes is None:
            options = {"vllm_url": vllm_url, "ray_address": ray_address, "ray": ray, "slurm_job": slurm_job, "slurm": slurm, "slurm_period": slurm_period}
            probes = [p for make in PROBES if (p := make(options)) is not None]
        self.seam: dict[str, SystemProbe] = {p.name: p for p in probes}
        self.probes += [p.runner(self, interval) for p in probes]
        if launcher is not None:  # the Launcher pane (tmux): `Trainer failed with exit code 1` reaches the Logs pane so
            self.probes.append(Probe("launcher", max(interval, 5.0), launcher, idle_period=max(30.0, interval), unavailable=(TmuxError, ActionError)))
        self.published: View | None = self._publish() if self.publishing else None

    @property
    def state(self) -> RunState:
        return self.live.state

    @property
    def shown_verdict(self) -> Verdict:
        """The verdict a screen shows: `READING` until the engine has judged what it read."""
        return self.verdict if self._judged_reads else READING

    def _relayout(self, layout: RunLayout) -> None:
        """The run, first read generically, is now claimed by a plug-in: its processes and disks are sampled as its own."""
        self.layout = layout
        procs, disks = _samplers(layout)
        self._procs = procs if self._own_samplers[0] else self._procs
        self._disks = disks if self._own_samplers[1] else self._disks

    # ---- probes (worker thread) -------------------------------------------
    def _sample_procs(self) -> ProcessSnapshot:
        self._procs.set_logs([t.path for t in self.live.reader.layout.logs])
        return self._procs.sample(finished=self.state.run_finished())

    def _sample_disks(self) -> DiskSnapshot:
        ckpt = self.live.reader.checkpoint_dir()
        self._disks.set_path("checkpoint dir", ckpt if ckpt and os.path.isdir(ckpt) else None)
        return self._disks.sample(self.clock())

    def _sample_gpu(self) -> GpuSnapshot:
        if self._gpu is None:
            self._gpu = NvmlProbe()  # created in the worker: nvmlInit can be slow
        return self._gpu.read()

    def step(self) -> bool:
        """Read the run's files and the due probes. True when anything changed.

        The files are read in slices of `SLICE_BYTES` per file, the lock released between
        them (a 64 MB burst of warnings held the lock for 5 s, and every key that
        repaints waited that long): the screen is never more than one slice behind a key.
        """
        changed = False
        # A run writing faster than we read must not keep the probes from their turn.
        until = time.monotonic() + STEP_READ_S
        while True:
            with self.lock:
                changed |= self.live.step(max_bytes=SLICE_BYTES)
                if isinstance(self.live, LiveRun) and self.live.layout is not self.layout:
                    self._relayout(self.live.layout)
                more = not self.live.reader.done()
                if more and changed and self.publishing and time.monotonic() - self._published_at >= PUBLISH_S:
                    self.published = self._publish()
            if not more or time.monotonic() > until:
                break
            time.sleep(0.003)  # hand the GIL to the UI thread
        now = time.monotonic()
        started = [p for p in self.probes if p.due(now)]
        for probe in started:
            probe.start(now)
        # Fast probes answer within this step; a slow one is collected on a later step.
        budget = time.monotonic() + PROBE_WAIT_S
        for probe in self.probes:
            wait = max(0.0, budget - time.monotonic()) if probe in started else 0.0
            news, value, error = probe.collect(wait)
            if not news:
                continue
            with self.lock:
                self._store(probe.name, value, error)
            changed = True
        changed |= self._take_forensics()
        if changed or not self._judged_reads:  # the first step is judged even when nothing came (logs still empty)
            self.judge()
        self.steps_done += 1
        return changed

    def judge(self, queue: bool = True) -> Verdict:
        """Judge what was read and probed, now (a replay's simulated clock outruns the probes'
        periods: it judges every tick whether or not a probe answered)."""
        with self.lock:
            self._procs_into_state()
            self.pace.observe(self.state, self.clock())
            self.verdict = self._judge()
            self._judged_reads = True
            for finding in self.verdict.new if queue else ():
                self._new_findings.put(finding)
            if self.publishing:
                self.published = self._publish()
        return self.verdict

    def probe_all(self, timeout: float = PROBE_ALL_S) -> Verdict:
        """Ask every probe once and judge (a headless check-in): each probe's answer, or its
        error, within `timeout` seconds overall; a probe still running past it is judged without."""
        now = time.monotonic()
        for probe in self.probes:
            if not probe.waiting:
                probe.start(now)
        deadline = now + timeout
        pending = list(self.probes)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            still = []
            for probe in pending:
                news, value, error = probe.collect(min(0.05, left))
                if news:
                    with self.lock:
                        self._store(probe.name, value, error)
                elif probe.waiting:
                    still.append(probe)
            pending = still
        return self.judge(queue=False)

    def _procs_into_state(self) -> None:
        if self.system.procs is not None and self.system.procs.error is None:
            self.state.processes = self.system.procs.roles()
            self.state.process_denied = dict(self.system.procs.denied)

    def _judge(self) -> Verdict:
        """Evaluate the rules (under `lock`) and hand the verdict to the alerting, which only queues."""
        facts = self.facts()
        verdict = self.health.evaluate(facts)
        if self.alerting is not None:
            self.alerting.observe(verdict, self.state, facts.now)
        # Stacks are taken when the run goes silent past its pace, not only once it is Down: stacks
        # waiting in a collective are the evidence that makes a silent run Down (docs/reading.md).
        if self.forensics_on_stall and any(f.rule == "stalled" and (f.down or f.subject == "no step") for f in verdict.new):
            self.start_forensics(verdict)
        return verdict

    def start_forensics(self, verdict: Verdict | None = None) -> bool:
        """Save hang forensics in a thread (py-spy takes seconds); False if one is running."""
        with self.lock:
            view = self._publish()  # a frozen copy: the collection reads it while the engine reads on
        return self.forensics.start(view.state, verdict or view.verdict, view.system.procs, view.system.gpu, view.system.disk, view.now)

    @property
    def last_forensics(self) -> Forensics | None:
        return self.forensics.last

    def _take_forensics(self) -> bool:
        results = self.forensics.take()
        for result in results:
            if self.alerting is not None:
                self.alerting.forensics(result)
        return bool(results)

    def facts(self) -> Facts:
        procs = self.system.procs
        return Facts(
            self.state, self.clock(), self.health.cfg, disk=self.system.disk, gpu=self.system.gpu,
            missing_roles=list(procs.missing) if procs else [], zombie_roles=list(procs.zombie_roles) if procs else [],
            notify_problems=self.alerting.problems() if self.alerting is not None else [],
            forensics=self.last_forensics.line() if self.last_forensics is not None else None,
            gpu_idle=dict(self.gpu_idle.idle), slurm=self.state.slurm, trainer_live=self.system.trainer,
            ray=self.state.ray, lifetimes=self.processes_over_time.view(), shell_says=self.processes_over_time.shell_says(),
            pace=self.pace.view(),
        )

    def take_new_findings(self) -> list[Finding]:
        """Findings that began since the last call (the app toasts the critical ones); any thread."""
        return drain(self._new_findings)

    def _observe_processes(self, snap: ProcessSnapshot) -> None:
        if self.processes_over_time.observe(snap, self.clock(), self.state.attempt):
            for probe in self.probes:
                if probe.name == "launcher":
                    probe.soon()

    @property
    def lifetimes(self) -> Lifetimes:
        return self.processes_over_time.lifetimes

    def _store(self, name: str, value: object, error: str | None) -> None:
        if name == "process" and error is None and isinstance(value, ProcessSnapshot):
            self._observe_processes(value)
            self.history.processes(value, self.clock())
            self.system.history = self.history.frozen()
        if name == "gpu" and error is None and isinstance(value, GpuSnapshot):
            pids = {p for ps in (self.state.processes or {}).values() for p in ps}
            self.gpu_idle.update(value, pids, self.state.current_step(), self.clock())
            self.history.gpu(value, self.clock())
            self.system.history = self.history.frozen()
        if name == "disk" and error is None:
            self.state.disk = value  # what the next step is checked against: a resume onto a full disk fails again
        seam = self.seam.get(name)
        if seam is not None:
            if error is None:
                seam.store(value, self.state, self.system)
            else:
                seam.forget(self.state, self.system)
        if name == "launcher":
            if error is None:
                self.processes_over_time.launcher_screen = list(value)  # type: ignore[call-overload]
                self.live.tail.add_screen("launcher", value)  # type: ignore[arg-type]
            else:
                self.system.errors[name] = error
            return
        self.system.store(name, value, error)

    def view(self) -> View:
        """The newest published view: frozen, so any thread may read it without a lock."""
        published = self.published
        return published if published is not None and self.publishing else self.refresh_view()

    def refresh_view(self) -> View:
        """Publish the state as it is now (the engine's thread, or a caller that steps it)."""
        with self.lock:
            self.published = self._publish()
            return self.published

    def set_publishing(self, on: bool) -> None:
        """Start or stop publishing views (the thread that steps the engine): a fleet's run
        publishes only while a screen charts it, and one no longer charted lets its copy go."""
        with self.lock:
            if on and not self.publishing:
                self.publishing = True
                self.published = self._publish()
            elif not on and self.publishing:
                self.publishing, self.published = False, None
                self._publisher = Publisher()  # its frozen copy of the steps goes with it
                self.state._track_rows = False  # nobody collects the rows written since
                self.state._dirty_steps.clear()

    def _publish(self) -> View:
        """A frozen copy of the state and the readings, with a version per slice (under `lock`)."""
        self._published_at = time.monotonic()
        return self._publisher.view(
            self.state, self.system, self.shown_verdict, self.clock(), self.live.tail, self.live.backfill_progress(),
            interval=self.interval, checkpoint_dir=self.live.reader.checkpoint_dir(), fills={p.name: p.fills for p in self.seam.values()},
        )

    def wait(self, timeout: float) -> bool:
        return self.live.wait(timeout)

    def close(self) -> None:
        self.live.close()
        if self.alerting is not None:
            self.alerting.close()
