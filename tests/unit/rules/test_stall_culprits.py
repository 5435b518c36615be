"""What stopped first, named: a rank whose GPU sits idle while its peers spin in the collective
waiting on it, a node whose log stopped a step early, a process whose stack is elsewhere while
the others wait in a collective, a role killed while the others wait; and the faults that are
no stall (NaN in the loss) found all the same (docs/reading.md, "Stalls, at the run's own pace")."""

from __future__ import annotations

import os
import time

import pytest

from runtop.config import Thresholds
from runtop.engine.reader import RunReader
from runtop.frameworks import get
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.playback.replay import Outcome
from runtop.playback.replay_faults import culprit_named
from runtop.rules.health import judge
from runtop.rules.registry import Facts
from tests.replays import replay


def named_after_first(out: Outcome) -> float:
    assert out.fault_at is not None and out.culprit is not None
    first = next(f for f in out.findings if f.at >= out.fault_at and f.label != "info" and f.rule != "training_signal")
    named = next(f for f in out.findings if f.at >= out.fault_at and culprit_named(f.message, out.culprit))
    return named.at - first.at


def test_one_trl_rank_of_four_that_hangs_is_named_by_its_idle_gpu_while_the_other_three_spin():
    out = replay("trl", 130, fault="hang-rank", fault_step=113, ranks=4)
    assert out.culprit == "GPU 2"
    assert named_after_first(out) <= 30.0
    down = next(f for f in out.findings if f.label == "down")
    assert "trainer rank on GPU 2 stopped first: idle holding its memory while GPU 0, 1, 3 spin at full use" in down.message, down.message


@pytest.mark.slow
def test_one_node_of_three_that_hangs_a_step_before_the_others_is_named_when_runtop_says_stalled():
    out = replay("prime-rl", 110, fault="hang-node", fault_step=103, nodes=3)
    assert out.culprit == "node 2"
    assert named_after_first(out) <= 30.0
    stall = next(f for f in out.findings if f.rule == "stalled")
    assert "trainer node 2 stopped first" in stall.message, stall.message


def test_the_orchestrator_killed_while_the_trainer_waits_is_down_within_two_polls_naming_it():
    out = replay("prime-rl", 40, fault="role-death", fault_step=23)
    assert out.fault_at is not None and out.culprit == "orchestrator"
    down = next(f for f in out.findings if f.label == "down")
    assert down.rule == "role_missing" and down.at - out.fault_at <= 2 * 2.0 and "orchestrator process is not running" in down.message, down


def test_a_process_whose_stack_is_elsewhere_while_three_wait_in_a_collective_is_named(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=20, stop_after=9).run()
    now = time.time()
    reader = RunReader(discover(root))
    reader.poll(max_bytes=1 << 24, rescan_every=float("inf"), ckpt_every=float("inf"))
    stacks = ("3 of 4 trainer process(es) in `allreduce` (a collective); pid 2210 in `_next_data`: "
              "/run/.runtop/forensics/20261125T101500Z")
    v = judge(reader.state, Facts(reader.state, now + 240, Thresholds(), forensics=stacks))
    stall = next(f for f in v.alerts if f.rule == "stalled")
    assert "trainer pid 2210 stopped first: in `_next_data` while 3 of 4 wait in a collective" in stall.message, stall.message


def test_nan_in_a_trl_loss_is_said_within_a_step():
    out = replay("trl", 60, scenario="nan-loss", fault="script", after_fault_s=60.0)
    assert out.fault_at is not None
    nan = next(f for f in out.findings if f.rule == "training_signal" and f.at >= out.fault_at)
    assert nan.at - out.fault_at <= 2.0 and "grad_norm, loss is not finite" in nan.message, nan


def _before_first_step(tmp_path, util: float):
    from runtop.sources.gpu import GpuProcess, GpuReading, GpuSnapshot

    root = str(tmp_path / "run")
    get("trl").simulator(root, "healthy", max_steps=20).run(until=5.0)  # launched, no step yet
    now = time.time()
    for d, _, names in os.walk(root):  # sixteen minutes without a write
        for name in names:
            os.utime(os.path.join(d, name), (now - 960, now - 960), follow_symlinks=False)
    reader = RunReader(discover(root))
    reader.poll(max_bytes=1 << 24, rescan_every=float("inf"), ckpt_every=float("inf"))
    reader.state.processes = {"trainer": [4242]}
    gib = 1 << 30
    gpu = GpuSnapshot([GpuReading(0, "H100", util, 60 * gib, 80 * gib, 60.0, 500.0, (GpuProcess(4242, 60 * gib),))], driver="test", taken_at=now)
    return judge(reader.state, Facts(reader.state, now, Thresholds(), gpu=gpu))


def test_a_run_silent_for_sixteen_minutes_before_its_first_step_with_its_gpus_busy_is_warming_up_not_down(tmp_path):
    """`python train.py > log` (8 KB blocks) and a first step of compilation and first rollouts: its GPUs
    at work say it is not hung."""
    v = _before_first_step(tmp_path, 93.0)
    assert v.verdict != "Down", v.reasons
    said = next(f for f in v.alerts if f.rule == "stalled")
    assert said.severity == "info" and "no step yet; GPU 0 busy: warming up" in said.message, said.message


def test_a_run_silent_for_sixteen_minutes_before_its_first_step_with_its_gpus_idle_is_down(tmp_path):
    v = _before_first_step(tmp_path, 0.0)
    assert v.verdict == "Down" and any(f.rule == "stalled" and f.down for f in v.alerts), v.reasons
