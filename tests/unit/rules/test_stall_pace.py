"""Stalls judged at the run's own pace: each story replays a framework's simulated run through
the engine on a simulated clock (`runtop.playback.replay`), with the pauses healthy runs have."""

from __future__ import annotations

import os
import re
import time

import pytest

from runtop.config import Thresholds
from runtop.engine.reader import RunReader
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.playback.replay import Habits, Outcome
from runtop.rules.health import judge
from runtop.rules.registry import Facts
from tests.replays import STALL, replay


def p99(out: Outcome) -> float:
    times = sorted(out.step_times)
    return times[int(0.99 * (len(times) - 1))]


def test_a_trl_run_that_hangs_with_its_processes_alive_is_degraded_within_twice_its_p99_step_and_down_once_its_gpus_sit_idle():
    out = replay("trl", 130, fault="hang", fault_step=113)
    assert out.fault_at is not None
    first = out.caught(STALL)
    assert first is not None, [f.message for f in out.findings]
    limit = max(2 * p99(out), 60.0)
    assert first.at - out.fault_at <= limit + 2 * 2.0, (first.at - out.fault_at, limit, first.message)
    assert re.search(r"no step for \S+ \(\d+\.\d× its p99 step gap, \S+\)", first.message), first.message
    down = next(f for f in out.findings if f.label == "down" and f.at >= out.fault_at)
    assert "GPU 0 idle holding the run's memory" in down.message and down.at - out.fault_at <= limit + 30, down


@pytest.mark.slow
def test_without_nvml_a_hang_stays_degraded_until_nothing_was_written_for_the_silence_limit():
    out = replay("trl", 70, fault="hang", fault_step=53, gpus=False)
    assert out.fault_at is not None
    first = out.caught(STALL)
    assert first is not None and first.label == "warning" and first.at - out.fault_at < 300, first
    down = next(f for f in out.findings if f.label == "down" and f.at >= out.fault_at)
    assert 900 <= down.at - out.fault_at <= 905, down  # the silence limit, 15 min, within two polls
    assert "no log write anywhere for 15m" in down.message


def test_a_run_killed_whole_is_down_within_two_polls():
    out = replay("verl", 40, fault="kill", fault_step=23)
    assert out.fault_at is not None
    down = next(f for f in out.findings if f.label == "down")
    assert down.rule == "vanished" and down.at - out.fault_at <= 2 * 2.0, down


def test_a_straggler_that_slows_every_step_threefold_is_said_within_five_steps():
    out = replay("trl", 90, fault="straggler", fault_step=53)
    assert out.fault_at is not None
    slow = next((f for f in out.findings if f.rule == "slowdown"), None)
    assert slow is not None, [f.message for f in out.findings]
    assert slow.at - out.fault_at <= 5 * 3 * (out.step_median or 15.0), (slow.at - out.fault_at, out.step_median)
    assert re.search(r"steps [23]\.\d× slower over the last 8", slow.message), slow.message


@pytest.mark.slow
def test_evaluations_every_40_steps_are_learned_and_stop_alarming():
    out = replay("trl", 210, habits=Habits(tail_p=0.0, save_steps=(1.0, 1.5)))
    assert out.fault_at is None
    late = [f for f in out.alarms(STALL, False) if f.at > out.seconds * 0.7]
    assert not late, [(round(f.at), f.message) for f in late]
    assert not out.alarms(STALL, True), "no false Down on a healthy run"


def test_a_verl_log_written_in_8k_blocks_half_an_hour_apart_is_recognised_and_never_called_down():
    """`python main_ppo.py > log` without -u: the file grows 8 KB at a time, a block every ~28 min.
    Its silences are its writer's, not a hang: the limit follows its block fill time."""
    out = replay("verl", 70, habits=Habits(buffered=True))
    assert not out.alarms(STALL, True), [(round(f.at), f.message) for f in out.alarms(STALL, True)]


@pytest.mark.slow
def test_a_healthy_run_whose_log_arrives_in_8k_blocks_is_never_called_down():
    out = replay("trl", 200, habits=Habits(buffered=True))
    assert not out.alarms(STALL, True), [(round(f.at), f.message) for f in out.alarms(STALL, True)]


def test_the_node_that_stopped_first_is_named_when_every_node_went_quiet(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=5, nodes=3).run()
    now = time.time()
    for d, _, names in os.walk(root):  # every file quiet for 1000 s …
        for name in names:
            os.utime(os.path.join(d, name), (now - 1000, now - 1000), follow_symlinks=False)
    node_2 = os.path.join(root, "logs", "attempt_1", "trainer", "node_2.log")
    os.utime(node_2, (now - 1060, now - 1060))  # … node 2 a minute longer: the others waited on it
    reader = RunReader(discover(root))
    reader.poll(max_bytes=1 << 24, rescan_every=float("inf"), ckpt_every=float("inf"))
    v = judge(reader.state, Facts(reader.state, now, Thresholds()))
    stall = next(f for f in v.alerts if f.rule == "stalled")
    assert "trainer node 2 stopped first, 1m00s before the others" in stall.message, stall.message


def test_a_silent_run_whose_saved_stacks_wait_in_a_collective_is_down_before_the_silence_limit(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=20, stop_after=9).run()  # between two saves (every 2 steps)
    now = time.time()
    for d, _, names in os.walk(root):  # four minutes of silence: past its pace (~35 s steps), short of 15 min
        for name in names:
            os.utime(os.path.join(d, name), (now - 240, now - 240), follow_symlinks=False)
    reader = RunReader(discover(root))
    reader.poll(max_bytes=1 << 24, rescan_every=float("inf"), ckpt_every=float("inf"))
    alone = next(f for f in judge(reader.state, Facts(reader.state, now, Thresholds())).alerts if f.rule == "stalled")
    assert alone.label == "warning" and "nothing written anywhere since" in alone.message, alone.message
    stacks = "trainer: ProcessGroupNCCL.allreduce (a collective), 3 threads: /run/.runtop/forensics/20261125T101500Z"
    v = judge(reader.state, Facts(reader.state, now, Thresholds(), forensics=stacks))
    down = next(f for f in v.alerts if f.rule == "stalled")
    assert v.verdict == "Down" and down.down and "its stacks wait in a collective" in down.message, down.message
