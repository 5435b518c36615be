"""Hangs the logs do not show: a GPU holding the run's memory at 0 % while no step
completes, and the env server's event loop lagging."""

from __future__ import annotations

import copy

from runtop.config import Thresholds
from runtop.engine.engine import Engine
from runtop.engine.snapshot import read_run_reader
from runtop.frameworks.discovery import discover
from runtop.parsers.primerl import parse_record
from runtop.parsers.records import RecordAssembler
from runtop.rules.health import judge
from runtop.rules.registry import Facts
from runtop.sources.gpu import RecordedProbe
from tests.live.test_alerting import Clock, poll
from tests.tui_helpers import FIXED_MTIME, H100, FixedDisks, FixedProcs, freeze_mtimes, healthy_tree


def nvml(util: float, trainer_holds: int) -> dict:
    """The probe's JSON (`python -m runtop.sources.gpu`): GPU 1 with the trainer's memory."""
    r = copy.deepcopy(H100)
    r["gpus"][1].update(util_pct=util, mem_used=trainer_holds + (1 << 30), processes=[{"pid": 4400, "used_bytes": trainer_holds}])
    return r


def test_a_gpu_holding_the_runs_memory_at_0_percent_with_no_step_for_10_minutes(simulated):
    """A rank stuck in a collective: its GPU sits at 0 % with 70 GiB held while the run's logs
    may still print. Degraded after `gpu_idle_s`, naming the GPU and how to get the stacks."""
    root = simulated("healthy", max_steps=9, stop_after=4)
    freeze_mtimes(root)
    clock = Clock(FIXED_MTIME + 30)
    readings = [nvml(95, 70 << 30)] + [nvml(0, 70 << 30)] * 50
    engine = Engine(discover(root), interval=0.05, gpu=RecordedProbe(readings), vllm_url=None, clock=clock,
                    proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)), disk_sampler=FixedDisks(), publishing=False,
                    thresholds=Thresholds(silence_s=10**6, stall_min_s=10**6))  # the silence rule is not what this tests
    poll(engine, 3)  # busy, then idle from here
    clock.t += 5 * 60
    poll(engine)
    assert not [f for f in engine.verdict.alerts if f.rule == "gpu_idle"]  # five minutes: a long save, an eval
    clock.t += 6 * 60
    poll(engine)
    (idle,) = [f for f in engine.verdict.alerts if f.rule == "gpu_idle"]
    assert idle.message.startswith("GPU 1 idle with 70.0 GB held for 11m") and "stuck in a collective" in idle.message
    assert engine.verdict.verdict == "Degraded" and idle.severity == "warning"
    engine.close()


def test_an_idle_gpu_the_run_does_not_hold_is_no_hang(simulated):
    root = simulated("healthy", max_steps=9, stop_after=4)
    freeze_mtimes(root)
    clock = Clock(FIXED_MTIME + 30)
    engine = Engine(discover(root), interval=0.05, gpu=RecordedProbe([nvml(0, 0)] * 20), vllm_url=None, clock=clock,
                    proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)), disk_sampler=FixedDisks(), publishing=False,
                    thresholds=Thresholds(silence_s=10**6, stall_min_s=10**6))
    poll(engine, 2)
    clock.t += 3600
    poll(engine)
    assert not [f for f in engine.verdict.alerts if f.rule == "gpu_idle"]
    engine.close()


def test_the_env_servers_event_loop_lag_warns_above_its_threshold(simulated):
    """v0.6's env router block, in the shape docs/formats.md gives (`Active tasks: …` then
    `  Server | Lag: min=… p99=… max=… (n=…)`), with our values."""
    root = simulated("healthy", max_steps=9, stop_after=4)
    state = read_run_reader(root).state
    block = [
        "2026-06-25 14:01:33 - verifiers.envs.EnvRouter - INFO - Active tasks: 128 (W0: 64, W1: 64)",
        "  Server | Lag: min=40ms mean=900ms median=700ms p90=2100ms p99=3400ms max=5200ms (n=100)",
        "  W0 | Lag: min=1ms mean=2ms median=1ms p90=4ms p99=11ms max=18ms (n=100)",
        "2026-06-25 14:01:43 - verifiers.envs.EnvRouter - INFO - Active tasks: 128 (W0: 64, W1: 64)",
    ]
    for rec in RecordAssembler().feed(block):
        for ev in parse_record(rec, "env"):
            state.apply(ev, "logs/env.log")
    assert state.env.lag_ms["p99"] == 3400
    v = judge(state, Facts(state, FIXED_MTIME + 30, Thresholds()))
    (lag,) = [f for f in v.alerts if f.rule == "env_lag"]
    assert lag.message.startswith("env server event loop lagging: p99 3.4 s (max 5.2 s) > 1 s")
    v = judge(state, Facts(state, FIXED_MTIME + 30, Thresholds(env_lag_p99_ms=5000)))
    assert not [f for f in v.alerts if f.rule == "env_lag"]
