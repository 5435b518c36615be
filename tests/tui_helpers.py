"""Build the app on a simulated run, with fixed probes where the machine's own readings would vary."""

from __future__ import annotations

import asyncio
import os
import time

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.sources.disk import DiskSnapshot, DiskUsage
from runtop.sources.gpu import RecordedProbe
from runtop.sources.processes import ProcessSnapshot
from runtop.sources.processes import ProcInfo as ProcessInfo
from runtop.tui.app import RuntopApp
from tests.screen_text import screen_text

FIXED_MTIME = 1_787_320_000.0
H100 = {
    "driver": "570.86.15",
    "gpus": [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "util_pct": 97, "mem_used": 71 << 30, "mem_total": 80 << 30, "temp_c": 64, "power_w": 512.0, "processes": [{"pid": 4242, "used_bytes": 70 << 30}]},
        {"index": 1, "name": "NVIDIA H100 80GB HBM3", "util_pct": 0, "mem_used": 2 << 20, "mem_total": 80 << 30, "temp_c": 31, "power_w": 70.0, "processes": []},
    ],
}


class FixedDisks:
    """A disk reading that does not depend on this machine (snapshots). `pressure`: the disk of
    docs/incidents.md#sigbus-save-core-dumps at 92 % with a 9 GB core dump and /dev/shm filling
    during a save."""

    def __init__(self, pressure: bool = False) -> None:
        self.pressure = pressure

    def set_path(self, label: str, path: str | None) -> None:
        self.ckpt = path

    def sample(self, now: float | None = None) -> DiskSnapshot:
        if not self.pressure:
            return DiskSnapshot(
                disks=[
                    DiskUsage(("/dev/shm",), "/dev/shm", 512 << 30, 20 << 30, 492 << 30, None, None),
                    DiskUsage(("root", "output dir"), "/", 369 << 30, 120 << 30, 249 << 30, None, None),
                ],
                taken_at=now or 0.0,
            )
        return DiskSnapshot(
            disks=[
                DiskUsage(("/dev/shm",), "/dev/shm", 512 << 30, 360 << 30, 152 << 30, 2 << 30, 76.0),
                DiskUsage(("root", "output dir"), "/", 369 << 30, 338 << 30, 31 << 30, None, None),
            ],
            core_dumps=[("/tmp/ray/session_1/runtime_resources/working_dir_files/core.67012", 9 << 30)],
            taken_at=now or 0.0,
        )


class FixedProcs:
    def __init__(self, snap: ProcessSnapshot) -> None:
        self.snap = snap

    def set_logs(self, logs: list[str]) -> None:
        self.logs = logs

    def sample(self, finished: bool = False) -> ProcessSnapshot:
        return self.snap


def fixed_tree(t0: float) -> ProcessSnapshot:
    procs = [
        ProcessInfo(4100, t0 - 3600, 1, "uv run rl @ configs/rl.toml", "launcher", "sleeping", 0.0, 80 << 20, 0),
        ProcessInfo(4242, t0 - 3500, 4100, "VLLM::APIServer", "inference", "sleeping", 12.0, 9 << 30, 1),
        ProcessInfo(4300, t0 - 3400, 4100, "PRIME-RL::Orchestrator", "orchestrator", "running", 88.0, 3 << 30, 1),
    ]
    return ProcessSnapshot(procs=procs, missing=["trainer"], taken_at=t0)


def healthy_tree(t0: float) -> ProcessSnapshot:
    """Every prime-rl role up: the launcher, vLLM, the orchestrator and the trainer."""
    procs = [
        *fixed_tree(t0).procs,
        ProcessInfo(4400, t0 - 3400, 4100, "PRIME-RL::Trainer", "trainer", "running", 97.0, 30 << 30, 1),
    ]
    return ProcessSnapshot(procs=procs, taken_at=t0)


def freeze_mtimes(root: str) -> None:
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)


def make_app(root: str, *, fixed: bool = True, gpu=None, interval: float = 0.2, age: float = 42.0, **kw) -> RuntopApp:
    """The app on `root`. `fixed`: a frozen clock (`age` seconds after the files' last write)
    and fixed disk/process/GPU readings (snapshots)."""
    layout = discover(root)
    if fixed:
        # A SkyRL log path: its run dir is the log dir's parent (logs/, ckpts/ beside it).
        freeze_mtimes(root if os.path.isdir(root) else os.path.dirname(os.path.dirname(root)))
        clock = lambda: FIXED_MTIME + age  # noqa: E731 - "last write 42s ago", always
        mon = Engine(
            layout, interval=interval, gpu=gpu or RecordedProbe([H100]), vllm_url=None, clock=clock,
            proc_sampler=kw.pop("proc_sampler", FixedProcs(fixed_tree(FIXED_MTIME))),
            disk_sampler=FixedDisks(pressure=kw.pop("disk_pressure", False)),
        )
    else:
        mon = Engine(layout, interval=interval, gpu=gpu or RecordedProbe([H100]), vllm_url=None, **kw)
    return RuntopApp(layout, interval=interval, monitor=mon)


async def settle(pilot, timeout: float = 10.0) -> None:
    """Wait until every file is read and every probe has run once, then repaint."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mon = app.monitor
        with mon.lock:
            ready = mon.live.reader.done() and all(p.last > float("-inf") and not p.waiting for p in mon.probes)
        if ready:
            break
        await asyncio.sleep(0.05)
    # One whole step after that: the probes' answers judged and published (under load a
    # step can take longer than any fixed pause).
    seen = app.monitor.steps_done
    while app.monitor.steps_done <= seen and time.monotonic() < deadline + 5:
        await asyncio.sleep(0.05)
    await pilot.pause(0.1)
    app.monitor.refresh_view()
    app.refresh_panes()
    await pilot.pause()


BIG = (200, 50)


def pane(app, pid: str) -> str:
    """The text a pane shows (its own region of the screen)."""
    w = app.query_one(f"#{pid}")
    region = w.region
    lines = screen_text(app).split("\n")[region.y : region.y + region.height]
    return "\n".join(line[region.x : region.x + region.width] for line in lines)


async def shown_after(pilot, event) -> None:
    """Fold `event` into the engine's state as a log line would, publish, and repaint."""
    app = pilot.app
    with app.monitor.lock:
        app.monitor.state.apply(event)
    app.monitor.refresh_view()
    app.refresh_panes()
    await pilot.pause()
