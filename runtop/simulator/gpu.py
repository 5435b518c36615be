"""The demo's GPUs: readings in NVML's shape for the demo's own processes, marked
`simulated` so no one mistakes them for a machine's (the demo never showed the
GPU pane working). A role's GPU is busy while its process lives and idle once it is gone,
so a dead trainer reads as an idle GPU, as on a real box."""

from __future__ import annotations

import random
import time

from runtop.simulator.processes import DemoProcesses
from runtop.sources.gpu import GpuProcess, GpuReading, GpuSnapshot

GIB = 1 << 30
# (role, utilisation range %, memory GiB while busy): the roles that hold a GPU.
HOLDERS = (("inference", (62.0, 84.0), 71.0), ("trainer", (91.0, 99.0), 62.0))


class SimulatedGpuProbe:
    def __init__(self, procs: DemoProcesses, seed: int = 0) -> None:
        self.procs = procs
        self.rng = random.Random(seed)

    def read(self) -> GpuSnapshot:
        live = self.procs.pids()
        gpus = []
        for i, (role, (lo, hi), mem) in enumerate(HOLDERS):
            pids = live.get(role, [])
            busy = bool(pids)
            gpus.append(GpuReading(
                i, "simulated H100 80GB HBM3",
                self.rng.uniform(lo, hi) if busy else 0.0,
                int((mem + self.rng.uniform(-0.5, 0.5)) * GIB) if busy else int(0.5 * GIB),
                80 * GIB,
                self.rng.uniform(58, 71) if busy else 31.0,
                self.rng.uniform(420, 640) if busy else 70.0,
                tuple(GpuProcess(p, int(mem * GIB)) for p in pids),
            ))
        return GpuSnapshot(gpus, driver="simulated", taken_at=time.time(), simulated=True)
