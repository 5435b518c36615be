"""The SLURM probe: the run's job (`runtop.sources.slurm`), asked only where the run names one
(or `--slurm-job`); squeue and sacct reach the controller and its database, so at most every
30 s. Its snapshot is the state's `slurm` (the rules' `Facts.slurm`, the status JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from runtop.probes.seam import ProbeRun, SystemProbe
from runtop.sources.slurm import SLURM_PERIOD_S, SlurmClient, SlurmSnapshot, find_job
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView


class SlurmProbe(SystemProbe):
    name = "slurm"
    fills = Slice.SLURM
    deadline: ClassVar[float | None] = 25.0

    def __init__(self, job: str | None = None, client: SlurmClient | None = None, every: float = SLURM_PERIOD_S) -> None:
        self.job = job  # `--slurm-job ID`, where the run dir names none
        self.client = client or SlurmClient()
        self.every = every

    def period(self, interval: float) -> float:
        return max(interval, self.every)

    def sample(self, run: ProbeRun) -> SlurmSnapshot | None:
        pids = [p for ps in (run.state.processes or {}).values() for p in ps]
        ref = find_job(run.layout.root, self.job, pids)
        return self.client.read(ref, run.layout.root) if ref is not None else None

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        state.slurm = reading if isinstance(reading, SlurmSnapshot) else None  # the job belongs in the status JSON and the check-in, beside the run
        system.slurm = state.slurm


def make(options: Mapping[str, Any]) -> SlurmProbe:
    return SlurmProbe(options.get("slurm_job"), options.get("slurm"), options.get("slurm_period") or SLURM_PERIOD_S)
