"""Failing neighbours: a slow /metrics endpoint, a hanging tmux or NVML call, a
lost GPU, another user's processes. Each is said in its own pane or finding, and none
stalls the reader, the screen or a command."""

from __future__ import annotations

import http.server
import os
import stat
import subprocess
import sys
import threading
import time

import psutil
import pytest

from runtop.frameworks import process_roles
from runtop.rules.health import judge
from runtop.sources.gpu import NvmlProbe
from runtop.sources.processes import ProcessSampler
from runtop.sources.tmux import Tmux, TmuxError
from runtop.sources.vllm_metrics import fetch
from runtop.state.run import RunState
from tests.live.test_processes import LAUNCHER, ROLES, TITLED, kill_tree, sample_until
from tests.tui_helpers import make_app, settle

METRICS = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 3.0\n" * 20


class DripHandler(http.server.BaseHTTPRequestHandler):
    """Answers 200 at once, then the body one byte every 0.5 s (a wedged exporter)."""

    stop = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(METRICS)))
        self.end_headers()
        for b in METRICS:
            if self.stop.is_set():
                return
            try:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.5)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def drip_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DripHandler)
    srv.daemon_threads = True
    DripHandler.stop.clear()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}/metrics"
    DripHandler.stop.set()
    srv.shutdown()
    srv.server_close()


def test_a_dripping_metrics_endpoint_gives_up_on_its_total_deadline(drip_server):
    t0 = time.monotonic()
    stats, err = fetch(drip_server, timeout=1.0, total=1.5)
    took = time.monotonic() - t0
    assert stats is None and "slow: gave up after 1.5 s" in err
    assert took < 3.0, f"the deadline is on the whole answer, not on each read ({took:.1f} s)"


def test_a_dripping_trainer_endpoint_is_given_up_too(drip_server):
    """The trainer's /metrics shares vLLM's bounded scrape (`sources.prometheus_text`)."""
    from runtop.sources.deadline import Unavailable
    from runtop.sources.trainer_metrics import fetch as fetch_trainer

    t0 = time.monotonic()
    with pytest.raises(Unavailable, match=r"slow: gave up after 3 s \(\d+ bytes of the answer so far\)"):
        fetch_trainer(drip_server, timeout=1.0)  # each byte within a second; the whole answer bounded at 3 s
    assert time.monotonic() - t0 < 5.0


async def test_the_tui_keeps_advancing_while_metrics_drip(tmp_path, drip_server):
    """The engine reads steps while vLLM's /metrics answers a byte at a time; the inference
    pane says the endpoint is slow instead of sitting at Unknown."""
    from runtop.frameworks.primerl.sim import Simulator
    from tests.live.test_tui import BIG, pane

    root = str(tmp_path / "live")
    sim = Simulator(root, scenario="healthy", max_steps=40, speed=400)
    sim.run(until=sim.START + 40)
    app = make_app(root, fixed=False, processes=False, disks=False, interval=0.2)
    mon = app.monitor
    from runtop.probes.runner import Probe
    from runtop.probes.vllm import VllmProbe

    vllm = VllmProbe(drip_server)  # the endpoint that drips, asked as the engine asks it, under a 1 s deadline
    mon.probes.append(Probe("vllm", 0.2, lambda: vllm.sample(mon), idle_period=30.0, deadline=1.0))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot, timeout=3.0)
        first = mon.state.trainer_step or 0
        rest = [a for a in sim.script() if a[0] > sim.START + 40]
        for _at, act in rest[: len(rest) // 2]:
            act()
        for _ in range(80):
            await pilot.pause(0.1)
            if (mon.state.trainer_step or 0) > first + 5 and "slow" in (mon.system.errors.get("vllm") or ""):
                break
        assert (mon.state.trainer_step or 0) > first + 5, "the reader stalled behind the dripping endpoint"
        app.refresh_panes()
        await pilot.pause()
        assert "slow: gave up after" in pane(app, "inference")


def test_a_hanging_tmux_is_a_one_line_error_within_its_deadline(tmp_path):
    fake = tmp_path / "tmux"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    tmux = Tmux(None)
    tmux.binary = str(fake)
    t0 = time.monotonic()
    with pytest.raises(TmuxError, match="slow: gave up after 3 s"):
        tmux.panes()
    assert time.monotonic() - t0 < 6.0


@pytest.mark.skipif(not __import__("shutil").which("tmux"), reason="needs tmux")
def test_a_window_named_with_byte_0xff_does_not_break_tmux_reading(tmp_path):
    sock = f"runtop-ff-{os.getpid()}"
    try:
        subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "run", "-n", "Launcher"], check=True)
        subprocess.run([b"tmux", b"-L", sock.encode(), b"new-window", b"-t", b"run", b"-n", b"bad\xffname"], check=True)
        panes = Tmux(sock).panes()
        assert {p.window for p in panes} >= {"Launcher"} and len(panes) == 2
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


# ---- NVML: a thin seam with the shapes nvidia-ml-py gives -----------------------------
class FakeNvml:
    """nvidia-ml-py's surface, as a lost GPU shows it: GPU 1 raises NVMLError_GpuIsLost."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError_GpuIsLost(Exception):  # noqa: N801 - pynvml's name
        def __str__(self) -> str:
            return "GPU is lost"

    class _Mem:
        used, total = 40 << 30, 80 << 30

    class _Util:
        gpu = 97

    def __init__(self, hang: float = 0.0) -> None:
        self.hang = hang

    def nvmlDeviceGetCount(self):  # noqa: N802
        if self.hang:
            time.sleep(self.hang)
        return 2

    def nvmlSystemGetDriverVersion(self):  # noqa: N802
        return b"550.54.15"

    def nvmlDeviceGetHandleByIndex(self, i):  # noqa: N802
        if i == 1:
            raise self.NVMLError_GpuIsLost()
        return i

    def nvmlDeviceGetName(self, h):  # noqa: N802
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetUtilizationRates(self, h):  # noqa: N802
        return self._Util()

    def nvmlDeviceGetMemoryInfo(self, h):  # noqa: N802
        return self._Mem()

    def nvmlDeviceGetTemperature(self, h, kind):  # noqa: N802
        return 61

    def nvmlDeviceGetPowerUsage(self, h):  # noqa: N802
        return 412000

    def nvmlDeviceGetComputeRunningProcesses(self, h):  # noqa: N802
        return []


def nvml_probe(fake: FakeNvml) -> NvmlProbe:
    probe = NvmlProbe.__new__(NvmlProbe)
    probe._nvml, probe._error = fake, None
    return probe


def test_a_lost_gpu_is_said_on_its_row_and_the_others_are_read():
    snap = nvml_probe(FakeNvml()).read()
    assert snap.error is None and len(snap.gpus) == 2
    assert snap.gpus[0].util_pct == 97 and snap.gpus[0].error is None
    assert snap.gpus[1].error == "NVML: GPU is lost"


@pytest.mark.live
def test_a_hanging_nvml_call_gives_up_and_the_engine_goes_on(simulated):
    from runtop.engine.engine import Engine
    from runtop.frameworks.discovery import discover
    from runtop.probes.runner import Probe

    mon = Engine(discover(simulated("healthy", max_steps=3)), interval=0.2, gpu=nvml_probe(FakeNvml(hang=30)), vllm_url=None, processes=False, disks=False)
    gpu = next(p for p in mon.probes if p.name == "gpu")
    mon.probes[mon.probes.index(gpu)] = Probe("gpu", 0.2, gpu.fn, deadline=0.5)
    t0 = time.monotonic()
    mon.step()
    assert time.monotonic() - t0 < 2.0, "a step never waits on a hanging probe"
    assert mon.state.trainer_step == 3
    time.sleep(0.6)
    mon.step()
    assert "gpu probe slow: gave up after 0.5 s" in mon.system.errors["gpu"]
    # Backed off: the stuck call is not started again beside itself.
    assert threading.active_count() < 50


# ---- another user's processes ---------------------------------------------------------
def test_another_users_processes_are_a_blind_spot_not_a_death(tmp_path, monkeypatch):
    """psutil's AccessDenied on the run's titled processes (runtop run as another user):
    runtop says it cannot inspect them, and process absence alone is no Down."""
    run = tmp_path / "outputs" / "my-run"
    run.mkdir(parents=True)
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, TITLED, *ROLES], cwd=run)
    try:
        sampler = ProcessSampler(str(run), roles=process_roles())
        sample_until(sampler, lambda s: {"inference", "orchestrator", "trainer"} <= set(s.roles()))
        real_cwd = psutil.Process.cwd
        kids = {c.pid for c in psutil.Process(launcher.pid).children(recursive=True)} | {launcher.pid}

        def denied_cwd(self):
            if self.pid in kids:
                raise psutil.AccessDenied(self.pid)
            return real_cwd(self)

        monkeypatch.setattr(psutil.Process, "cwd", denied_cwd)
        fresh = ProcessSampler(str(run), roles=process_roles())
        snap = fresh.sample()
        assert snap.roles() == {}
        user = psutil.Process().username()
        assert sorted(snap.denied[user]) == ["inference", "launcher", "orchestrator", "trainer"]
        state = RunState(path=str(run), framework="prime-rl", processes=snap.roles(), process_denied=snap.denied)
        v = judge(state)
        assert v.verdict != "Down"
        msgs = [a.message for a in v.alerts if a.rule == "process_access"]
        assert msgs and f"cannot inspect 4 process(es) owned by {user}" in msgs[0] and f"run runtop as {user}" in msgs[0]
    finally:
        kill_tree(launcher)
