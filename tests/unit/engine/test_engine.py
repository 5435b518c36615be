"""One engine for every command: the same facts give the same verdict in the TUI
and in `runtop check`."""

from __future__ import annotations

import time

from runtop.engine.engine import Engine
from runtop.engine.snapshot import read_and_judge
from runtop.frameworks.discovery import discover
from runtop.sources.gpu import RecordedProbe
from runtop.sources.processes import ProcessSnapshot
from runtop.sources.processes import ProcInfo as ProcessInfo
from tests.tui_helpers import FixedProcs

# vLLM's process is up, the trainer and orchestrator wait, and NVML says the engine's
# process holds 0 MiB: its engine died (docs/incidents.md#vllm-dies-silently). Recorded in
# `python -m runtop.sources.gpu`'s shape.
ENGINE_GONE = {
    "driver": "570.86.15",
    "gpus": [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "util_pct": 0, "mem_used": 3 << 20, "mem_total": 80 << 30,
         "temp_c": 33, "power_w": 71.0, "processes": [{"pid": 4242, "used_bytes": 0}]},
        {"index": 1, "name": "NVIDIA H100 80GB HBM3", "util_pct": 88, "mem_used": 61 << 30, "mem_total": 80 << 30,
         "temp_c": 58, "power_w": 455.0, "processes": [{"pid": 4400, "used_bytes": 60 << 30}]},
    ],
}


def _procs() -> FixedProcs:
    t0 = time.time()
    procs = [
        ProcessInfo(4100, t0 - 3600, 1, "uv run rl @ configs/rl.toml", "launcher", "sleeping", 0.0, 80 << 20, 0),
        ProcessInfo(4242, t0 - 3500, 4100, "VLLM::APIServer", "inference", "sleeping", 0.0, 9 << 30, 1),
        ProcessInfo(4300, t0 - 3400, 4100, "PRIME-RL::Orchestrator", "orchestrator", "sleeping", 1.0, 3 << 30, 1),
        ProcessInfo(4400, t0 - 3400, 4100, "PRIME-RL::Trainer", "trainer", "sleeping", 1.0, 30 << 30, 1),
    ]
    return FixedProcs(ProcessSnapshot(procs=procs, taken_at=t0))


def test_vllm_alive_but_holding_no_gpu_memory_is_down_in_check_as_in_the_tui(simulated):
    root = simulated("healthy", max_steps=9, stop_after=5)
    _state, v = read_and_judge(root, gpu=RecordedProbe([ENGINE_GONE]), proc_sampler=_procs(), disks=False)
    assert v.verdict == "Down", v.reasons
    assert "vLLM is running but holds no GPU memory" in v.reasons[0]

    tui = Engine(discover(root), gpu=RecordedProbe([ENGINE_GONE]), proc_sampler=_procs(), vllm_url=None, disks=False)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and tui.verdict.verdict != "Down":
            tui.step()
        assert tui.verdict.verdict == v.verdict and tui.verdict.reasons[0] == v.reasons[0]
    finally:
        tui.close()


def test_with_the_engine_alive_on_its_gpu_both_say_healthy(simulated):
    root = simulated("healthy", max_steps=9, stop_after=5)
    alive = {**ENGINE_GONE, "gpus": [{**ENGINE_GONE["gpus"][0], "processes": [{"pid": 4242, "used_bytes": 70 << 30}]}, ENGINE_GONE["gpus"][1]]}
    _state, v = read_and_judge(root, gpu=RecordedProbe([alive]), proc_sampler=_procs(), disks=False)
    assert v.verdict == "Healthy", v.reasons
