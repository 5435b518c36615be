"""History in the panes: "the GPUs went idle twenty minutes ago" is a line that drops, not a
number that reads the same as a moment's lull; each role's CPU and memory over time; the
process table ordered by what a researcher asks first."""

from __future__ import annotations

import math
import os
import time

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.simulator.processes import DemoProcesses
from runtop.sources.gpu import GpuReading, GpuSnapshot, RecordedProbe
from runtop.sources.processes import ProcessSnapshot, ProcInfo
from runtop.view.history import SAMPLES, HistoryKeeper
from runtop.widgets.render import BLOCKS
from tests.tui_helpers import BIG, FIXED_MTIME, FixedProcs, healthy_tree, make_app, pane, settle

GIB = 1 << 30


def gpu(util: float | None, mem: int = 70 << 30) -> dict:
    return {"index": 0, "name": "H100", "util_pct": util, "mem_used": mem, "mem_total": 80 << 30, "temp_c": 60, "power_w": 500.0 if util else 70.0}


def test_the_gpus_went_idle_and_the_history_says_when():
    """Ten minutes busy, then ten idle: the newest points read zero, the older ones the busy
    reading; a reading NVML could not give is a gap, never a zero; the series stays bounded."""
    keeper = HistoryKeeper(period=10.0)
    t0 = 1_000_000.0
    for i in range(60):
        util = 97.0 if i < 30 else 0.0
        keeper.gpu(GpuSnapshot([GpuReading(0, "H100", util, 70 * GIB, 80 * GIB, 60.0, 500.0)]), t0 + i * 20)
    util = keeper.frozen().gpus[0].util_pct
    # One reading every 20 s in 10 s points: every other point has no reading at all.
    finite = [v for v in util if math.isfinite(v)]
    assert finite[:30] == [97.0] * 30 and finite[30:] == [0.0] * 30
    assert sum(1 for v in util if not math.isfinite(v)) == len(util) - len(finite)
    keeper.gpu(GpuSnapshot([GpuReading(0, "H100", None, None, 80 * GIB, None, None)]), t0 + 60 * 20)
    assert not math.isfinite(keeper.frozen().gpus[0].util_pct[-1])
    for i in range(3 * SAMPLES):
        keeper.gpu(GpuSnapshot([GpuReading(0, "H100", 50.0, 70 * GIB, 80 * GIB, 60.0, 500.0)]), t0 + 10_000 + i * 10)
    assert len(keeper.frozen().gpus[0].util_pct) == SAMPLES


def test_two_readings_in_one_period_are_one_point_their_mean():
    keeper = HistoryKeeper(period=10.0)
    for t, util in ((100.0, 90.0), (104.0, 50.0), (111.0, 10.0)):
        keeper.gpu(GpuSnapshot([GpuReading(0, "H100", util, 1, 2, None, None)]), t)
    assert keeper.frozen().gpus[0].util_pct == (70.0, 10.0)


async def test_the_gpu_pane_draws_the_drop_as_wide_as_the_pane(tmp_path):
    """Through the engine, as the TUI runs it: the GPU busy, then idle. The pane draws
    full blocks, then the lowest, and its sparkline grows with the pane's width."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=4).run()
    clock = [FIXED_MTIME]
    busy, idle = RecordedProbe([{"gpus": [gpu(97.0)]}]), RecordedProbe([{"gpus": [gpu(0.0, 1 << 20)]}])

    class ByTheClock:
        """Busy for the first ten points of the clock, idle after: however many readings a
        loaded machine lets the engine take in one point, the drop lands at one time."""

        def read(self) -> GpuSnapshot:
            return (busy if clock[0] < FIXED_MTIME + 100.0 else idle).read()

    app = make_app(root, gpu=ByTheClock(), interval=0.05)
    app.monitor.clock = lambda: clock[0]
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            clock[0] += 10.0  # a point of its own for each reading or two
            hist = app.monitor.view().system.history.gpus.get(0)
            finite = [v for v in hist.util_pct if math.isfinite(v)] if hist is not None else []
            if len(finite) >= 16 and finite[-1] == 0.0:
                break
            await pilot.pause(0.1)
        app.refresh_panes()
        await pilot.pause()
        line = next(ln for ln in pane(app, "gpus").splitlines() if ln.lstrip("│ ").startswith("0 "))
        spark = line.lstrip("│ ")[2:].lstrip().split(" ")[0]
        assert BLOCKS[-1] in spark or BLOCKS[-2] in spark  # busy: near the top of 0-100 %
        assert spark.endswith(BLOCKS[0])  # idle now
        assert len(spark) >= 10


def test_each_role_keeps_its_cpu_and_memory_and_a_dead_role_drops_to_zero(tmp_path):
    """Real processes with the run's titles, sampled as the TUI samples them: the trainer's
    series drops to zero once it is killed, the inference server's goes on."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=2).run()
    procs = DemoProcesses(root, Simulator.TITLES)
    procs.start()
    try:
        clock = [time.time()]
        mon = Engine(discover(root), interval=0.05, gpus=False, vllm_url=None, clock=lambda: clock[0])

        def sample(n: int) -> None:
            for _ in range(n):
                clock[0] += 10.0
                time.sleep(0.06)
                mon.step()

        sample(4)
        roles = mon.view().system.history.roles
        assert {"trainer", "inference"} <= set(roles)
        assert all(v > 0 for v in roles["trainer"].rss[-2:])  # a live process holds memory
        procs.end(["trainer"])
        sample(4)
        roles = mon.view().system.history.roles
        assert roles["trainer"].rss[-1] == 0.0 and roles["trainer"].cpu_pct[-1] == 0.0
        assert roles["inference"].rss[-1] > 0
        mon.close()
    finally:
        procs.end()


async def test_o_orders_the_processes_by_cpu_then_memory_then_age(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=4).run()
    t0 = FIXED_MTIME
    tree = ProcessSnapshot(procs=[
        ProcInfo(4100, t0 - 3600, 1, "uv run rl @ configs/rl.toml", "launcher", "sleeping", 0.0, 80 << 20, 0),
        ProcInfo(4242, t0 - 3500, 4100, "VLLM::APIServer", "inference", "sleeping", 12.0, 40 << 30, 1),
        ProcInfo(4400, t0 - 3400, 4100, "PRIME-RL::Trainer", "trainer", "running", 97.0, 30 << 30, 1),
    ], taken_at=t0)
    app = make_app(root, proc_sampler=FixedProcs(tree))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)

        def first() -> str:
            rows = [ln for ln in pane(app, "procs").splitlines()[1:] if any(c.isdigit() for c in ln)]
            return rows[0].split()[1]

        assert first() == "4100"  # the tree: the launcher above its children
        await pilot.press("o")
        assert first() == "4400" and "by cpu" in pane(app, "procs")
        await pilot.press("o")
        assert first() == "4242"  # the largest resident memory
        await pilot.press("o")
        assert first() == "4100"  # the oldest
        await pilot.press("o")
        assert "by " not in pane(app, "procs").splitlines()[0]


async def test_the_process_pane_draws_each_roles_history_once_where_it_is_wide(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=4).run()
    app = make_app(root, proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        text = pane(app, "procs")
        trainer = next(ln for ln in text.splitlines() if "PRIME-RL::Trainer" in ln)
        assert any(b in trainer for b in BLOCKS)  # its CPU over time, beside the number
    assert os.path.isdir(root)


async def test_quitting_stops_the_engine_and_its_reading_of_the_run(tmp_path):
    """After q the engine's thread ends: nothing keeps reading the run or probing its GPUs."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=2).run()
    app = make_app(root)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        await pilot.press("q")
    assert app._stop and app.engine_idle.wait(5)
    steps = app.monitor.steps_done
    time.sleep(0.5)
    assert app.monitor.steps_done == steps
