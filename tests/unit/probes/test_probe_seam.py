"""A probe is one module and one line (docs/architecture.md, "Adding a probe"): the engine takes
a list of probes, each declaring its name, period, deadline, how it samples, where its reading
goes and which slice of the view it fills."""

from __future__ import annotations

import os
from typing import ClassVar

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.probes import registry as probe_registry
from runtop.probes.ray import RayProbe
from runtop.probes.seam import ProbeRun, SystemProbe
from runtop.sources.deadline import Unavailable
from runtop.sources.ray_state import RayClient
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView
from tests.unit.sources.test_ray_state import CASE, Recorded, as_this_runs_worker


class RunDirFiles(SystemProbe):
    """A probe written here, in one class, as a new module would be: how many entries the run
    dir holds, noted in the state."""

    name = "rundir"
    fills = Slice.DISK
    deadline: ClassVar[float | None] = 2.0

    def __init__(self) -> None:
        self.seen: list[int] = []

    def period(self, interval: float) -> float:
        return 3 * interval

    def sample(self, run: ProbeRun) -> int:
        if not os.path.isdir(run.layout.root):
            raise Unavailable(f"{run.layout.root}: the run dir is gone")
        return len(os.listdir(run.layout.root))

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        assert isinstance(reading, int)
        self.seen.append(reading)


def _engine(root: str, **kw) -> Engine:
    return Engine(discover(root), processes=False, disks=False, gpus=False, vllm_url=None, **kw)


def test_the_engine_runs_every_probe_the_registry_makes_with_its_period_and_deadline(simulated):
    root = simulated("healthy")
    e = _engine(root, interval=2.0)
    assert [make.__module__ for make in probe_registry.PROBES] == ["runtop.probes.vllm", "runtop.probes.trainer", "runtop.probes.slurm", "runtop.probes.ray"]
    ray = next(p for p in e.probes if p.name == "ray")
    assert (ray.period, ray.idle_period) == (30.0, 30.0) and ray._call.seconds == 30.0
    assert isinstance(e.seam["ray"], RayProbe)
    slurm = next(p for p in e.probes if p.name == "slurm")  # squeue and sacct at most every 30 s, 25 s to answer
    assert slurm.period == 30.0 and slurm._call.seconds == 25.0
    trainer = next(p for p in e.probes if p.name == "trainer")  # nothing listening: asked every 30 s
    assert (trainer.period, trainer.idle_period) == (2.0, 30.0)
    assert not [p.name for p in _engine(root, probes=[]).probes if p.name in e.seam]  # a list handed in is the whole list


def test_a_new_probe_needs_no_line_of_the_engine(simulated):
    """The engine runs a probe it has never heard of: its reading is stored, counted, and moves
    the slice it fills; where its source is gone, its pane says why."""
    root = simulated("healthy")
    probe = RunDirFiles()
    e = _engine(root, probes=[probe])
    (runner,) = [p for p in e.probes if p.name == "rundir"]
    assert runner.period == 6.0
    before = e.refresh_view().versions[Slice.DISK]
    e.probe_all(timeout=5)
    view = e.refresh_view()
    assert probe.seen == [len(os.listdir(root))]
    assert view.system.readings["rundir"] == 1 and "rundir" not in view.system.errors
    assert view.versions[Slice.DISK] > before

    os.rename(root, root + "-moved")
    e.probe_all(timeout=5)
    assert e.refresh_view().system.errors["rundir"] == f"{root}: the run dir is gone"
    assert probe.seen == [len(os.listdir(root + "-moved"))]  # an error stores no reading


def test_the_ray_probe_on_the_seam_judges_as_before(tmp_path):
    """The Ray probe moved onto the seam: its snapshot is still the state's `ray`, which the
    rules read (the dead actor named as the cause) and the processes pane's slice moves."""
    import shutil

    root = str(tmp_path / "run")
    shutil.copytree(CASE, root)
    api = as_this_runs_worker(Recorded())
    e = _engine(root, probes=[RayProbe("127.0.0.1:6379", RayClient(api))])
    e.probe_all(timeout=10)
    view = e.refresh_view()
    assert api.calls == ["127.0.0.1:6379"]
    assert view.state.ray is not None and view.state.ray.address == "127.0.0.1:6379"
    assert view.versions[Slice.RAY] >= 1
