"""The run's processes watched over time, with the I/O that needs: the lifetimes the engine
keeps (`runtop.sources.lifetimes`), the record an earlier runtop left in `RUN/.runtop/processes.json`
and the one this runtop leaves, the kernel log's OOM kills and the Launcher pane's shell's word
when every process has gone (docs/reading.md, "A run that vanishes"). Run on the engine's thread."""

from __future__ import annotations

from runtop.parsers.shell import JobDeath, job_death
from runtop.sources import process_record
from runtop.sources.kernel_log import KMSG, oom_kills
from runtop.sources.lifetimes import GONE_SAMPLES, Lifetimes, LifetimesView
from runtop.sources.processes import ProcessSnapshot

# How often the record of the run's live processes is refreshed while they live (it is
# written at once when they change or all go).
RECORD_EVERY_S = 60.0


class ProcessWatch:
    def __init__(self, run_root: str, *, load: bool = True) -> None:
        self.run_root = run_root
        self.lifetimes = Lifetimes()
        # Whether this runtop leaves its record in RUN/.runtop/ (a `runtop serve` visitor writes nothing).
        self.records = True
        self.kernel_log = KMSG  # where the OOM killer's word is read (a saved `dmesg` file in tests)
        self.launcher_screen: list[str] = []  # the Launcher pane's newest lines
        self._recorded_at = 0.0
        if load:
            record = process_record.load(run_root)
            # Believed only for processes that are gone: one still here is the sampler's to find.
            if record is not None and (record.host != self.lifetimes.host or not process_record.still_alive(record)):
                self.lifetimes.recorded = record

    def observe(self, snap: ProcessSnapshot, now: float, attempt: int) -> bool:
        """Take one sample; True when every process has just gone at one sample, so what the
        launcher's shell says of it is wanted at the next."""
        lt = self.lifetimes
        changed = lt.observe(snap, now)
        if lt.gone_samples == GONE_SAMPLES and lt.last_alive:
            # All gone: whether the kernel's OOM killer did it is the cause, where its log still says.
            lt.oom = oom_kills({p.pid for p in lt.last_alive}, self.kernel_log)
        if changed or (lt.alive_now and now - self._recorded_at >= RECORD_EVERY_S):
            record = lt.record(attempt) if self.records else None
            if record is not None:
                process_record.save(self.run_root, record)
                self._recorded_at = now
        return lt.gone_samples == 1 and bool(lt.last_alive)

    def view(self) -> LifetimesView:
        return self.lifetimes.view()

    def shell_says(self) -> JobDeath | None:
        return job_death(self.launcher_screen)
