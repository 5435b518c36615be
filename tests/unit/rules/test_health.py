"""Each incident of docs/incidents.md, reproduced by the simulators, caught by its rule with its cause;
and a long healthy run that raises nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from runtop.config import ConfigError, Thresholds, load
from runtop.engine.snapshot import read_and_judge, read_run
from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from runtop.rules.findings import Finding
from runtop.rules.health import HealthTracker, judge
from runtop.rules.registry import Facts
from runtop.sources.disk import DiskSnapshot, DiskUsage

TITLED = "import setproctitle, sys, time; setproctitle.setproctitle(sys.argv[1]); time.sleep(120)"


def findings(verdict, rule: str) -> list:
    return [a for a in verdict.alerts if a.rule == rule]


def serious(verdict) -> list:
    return [a for a in verdict.alerts if a.severity in ("warning", "critical")]


def test_a_long_healthy_run_raises_nothing(tmp_path):
    root = str(tmp_path / "prime")
    Simulator(root, scenario="healthy", max_steps=80, stop_after=60).run()
    _state, verdict = read_and_judge(root)
    assert verdict.verdict == "Healthy" and serious(verdict) == []
    sky = str(tmp_path / "sky")
    SkyrlSimulator(sky, max_steps=12, stop_after=10).run()
    _state, verdict = read_and_judge(sky)
    assert verdict.verdict == "Healthy" and serious(verdict) == []


def test_a_run_that_ended_normally_is_finished_not_stalled_or_down(tmp_path):
    """docs/formats.md: `Orchestrator finished.` / `RL trainer finished!` / SkyRL's last batch bar.
    Hours later, with every file old and no process alive, it is still Finished."""
    root = str(tmp_path / "prime")
    Simulator(root, scenario="healthy", max_steps=6).run()
    sky = str(tmp_path / "sky")
    SkyrlSimulator(sky, max_steps=4).run()
    for path in (root, sky):
        state = read_run(path)
        v = judge(state, Facts(state, time.time() + 6 * 3600, Thresholds()))
        assert v.verdict == "Finished" and serious(v) == [], (path, v.reasons)
        assert v.reasons[0].startswith(f"finished at step {state.trainer_step} after ")
        assert f"last complete checkpoint: step {state.last_complete_checkpoint().step}" in v.reasons[0]


def test_sigbus_in_a_save_leaves_only_common_pt(tmp_path):
    """docs/incidents.md#sigbus-save-core-dumps, attempt #1: SIGBUS in the Megatron save; `policy/` holds a
    421 KB common.pt."""
    root = str(tmp_path / "run")
    SkyrlSimulator(root, scenario="sigbus-checkpoint", max_steps=6, autoretry=False).run()
    _state, v = read_and_judge(root)
    assert v.verdict == "Down"
    crash = findings(v, "crash")[0]
    assert crash.severity == "critical" and "SIGBUS" in crash.message and crash.since
    ck = findings(v, "checkpoint_incomplete")[0]
    assert ck.severity == "critical" and "step 4" in ck.message and "common.pt" in ck.message and "last complete: step 2" in ck.message


def test_core_dumps_fill_the_disk_then_the_next_save_hits_enospc(tmp_path):
    """docs/incidents.md#sigbus-save-core-dumps, attempt #3: 49 GB of core dumps, then `No space left on
    device` in the save."""
    root = str(tmp_path / "run")
    SkyrlSimulator(root, scenario="disk-full", max_steps=6).run()
    _state, v = read_and_judge(root)
    assert v.verdict == "Down"
    assert "No space left on device" in findings(v, "crash")[0].message
    dumps = [a for a in findings(v, "disk_pressure") if "core dump" in a.message]
    assert dumps and dumps[0].severity == "warning" and "9.0 GB" in dumps[0].message
    assert any("common.pt" in a.message for a in findings(v, "checkpoint_incomplete"))


def test_a_disk_over_85_percent_and_one_full_before_the_next_checkpoint(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=8, stop_after=6).run()
    state = read_run(root, processes=False)
    disk = DiskSnapshot(
        disks=[
            DiskUsage(("root", "output dir"), "/", 369 << 30, 338 << 30, 31 << 30, None, None),
            DiskUsage(("/dev/shm",), "/dev/shm", 512 << 30, 200 << 30, 312 << 30, 4 << 30, 50.0),
        ]
    )
    v = HealthTracker().evaluate(Facts(state, time.time(), Thresholds(), disk=disk))
    msgs = [a.message for a in findings(v, "disk_pressure")]
    assert any("root, output dir is 92% full" in m for m in msgs)
    assert any("/dev/shm will be full in 50s, before the next checkpoint" in m for m in msgs)
    assert v.verdict == "Degraded"


def test_inference_dies_silently_while_the_trainer_waits(tmp_path):
    """docs/incidents.md#vllm-dies-silently: vLLM is gone, nothing in its log; the trainer and orchestrator
    still run."""
    root = tmp_path / "outputs" / "run"
    sim = Simulator(str(root), scenario="healthy", max_steps=20)
    sim.run(until=sim.START + 200)
    procs = [subprocess.Popen([sys.executable, "-c", TITLED, t], cwd=root) for t in ("PRIME-RL::Trainer", "PRIME-RL::Orchestrator")]
    try:
        deadline = time.monotonic() + 10
        while True:
            state, v = read_and_judge(str(root))
            if {"trainer", "orchestrator"} <= set(state.processes or {}) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert v.verdict == "Down"
        dead = findings(v, "inference_dead")[0]
        assert dead.severity == "critical" and "vLLM" in dead.message and "orchestrator and trainer wait" in dead.message
        r = subprocess.run([sys.executable, "-m", "runtop", "check", str(root)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "vLLM (inference) process is gone" in r.stdout
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_rollouts_hung_at_zero_with_the_max_tokens_error(tmp_path):
    """docs/incidents.md#max-tokens-stuck-rollouts: batches stay at 0/N because max_tokens exceeds the
    context."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="rollouts-hung").run()
    _state, v = read_and_judge(root)
    hung = findings(v, "rollouts_hung")[0]
    assert hung.severity == "critical" and "0/128" in hung.message and "max_tokens" in hung.message
    assert any("ulimit" in a.message for a in findings(v, "environment"))


def test_rollouts_hung_and_silent_lead_with_the_rejection_not_the_silence(tmp_path):
    """vLLM rejects every request (max_tokens beyond the context) and the run goes silent: the
    verdict is Down and its first line names the rejection and the setting that fits; the
    silence is the evidence, not a second headline."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="rollouts-hung").run()
    state = read_run(root, processes=False)
    v = judge(state, Facts(state, max(state.write_times()) + 20 * 60, Thresholds()))
    assert v.verdict == "Down"
    assert v.reasons[0].startswith("rollouts hung at 0/128: vLLM rejects requests") and "max_tokens ≤ 2799" in v.reasons[0]
    lead = v.alerts[0]
    assert lead.rule == "rollouts_hung" and lead.down and "no log write anywhere for 20m" in (lead.evidence or "")
    assert not findings(v, "stalled")
    # Before the silence lasts, the same rejection is the headline of a Degraded run.
    v = judge(state, Facts(state, max(state.write_times()) + 60, Thresholds()))
    assert v.verdict == "Degraded" and v.reasons[0].startswith("rollouts hung at 0/128")


def test_a_pod_vanishes_and_nothing_writes_any_more(tmp_path):
    """docs/incidents.md#vllm-dies-silently: the spot pod is reclaimed; the logs simply stop."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="stalled", max_steps=20).run()
    old = time.time() - 2 * 3600
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (old, old), follow_symlinks=False)
    _state, v = read_and_judge(root)
    stall = findings(v, "stalled")[0]
    assert v.verdict == "Down" and stall.severity == "critical"
    assert "no log write anywhere for 2h00m" in stall.message and "no run process alive" in stall.message


def test_a_quiet_run_in_its_grace_period_is_not_stalled(tmp_path):
    root = str(tmp_path / "run")
    sim = Simulator(root, scenario="healthy", max_steps=20)
    sim.run(until=sim.START + 3)  # launched, no step yet
    _state, v = read_and_judge(root)
    assert v.verdict == "Unknown" and not findings(v, "stalled") and not findings(v, "role_missing")


def test_entropy_sliding_step_after_step(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="entropy-collapse", max_steps=12, fail_step=4, stop_after=10).run()
    _state, v = read_and_judge(root)
    slide = [a for a in findings(v, "training_signal") if "entropy falling" in a.message]
    assert slide and slide[0].severity == "warning" and "%/step for 4 steps" in slide[0].message
    assert v.verdict == "Degraded"


def test_format_failures_rising(tmp_path):
    root = str(tmp_path / "run")
    SkyrlSimulator(root, scenario="format-rising", max_steps=6, fail_step=3).run()
    _state, v = read_and_judge(root)
    q = findings(v, "rollout_quality")[0]
    assert q.severity == "warning" and "format failures in" in q.message and "Rule 3" in q.message


def test_findings_keep_their_start_across_evaluations(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="rollouts-hung").run()
    state = read_run(root, processes=False)
    tracker = HealthTracker()
    first = tracker.evaluate(Facts(state, 1000.0, Thresholds()))
    again = tracker.evaluate(Facts(state, 2000.0, Thresholds()))
    assert {a.key for a in first.new} >= {a.key for a in first.alerts}
    assert again.new == [] and [a.since for a in again.alerts] == [a.since for a in first.alerts]


def test_config_file_overrides_and_bad_keys(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("[health]\nentropy_floor = 0.5\nbell = false\n")
    t = load(str(cfg))
    assert t.entropy_floor == 0.5 and t.bell is False and t.stall_k == 3.0
    cfg.write_text("[health]\nentropy_flor = 0.5\n")
    with pytest.raises(ConfigError, match="unknown key health.entropy_flor"):
        load(str(cfg))
    cfg.write_text('[health]\nstall_k = "three"\n')
    with pytest.raises(ConfigError, match="health.stall_k must be a number"):
        load(str(cfg))
    with pytest.raises(ConfigError, match="no such file"):
        load(str(tmp_path / "missing.toml"))


def test_vllm_alive_but_holding_no_gpu_memory(tmp_path):
    """docs/incidents.md#vllm-dies-silently: the API server process lingers, its GPU is at ~0 MiB: the
    engine is gone."""
    from runtop.sources.gpu import GpuProcess, GpuReading, GpuSnapshot

    root = str(tmp_path / "run")
    sim = Simulator(root, scenario="healthy", max_steps=20)
    sim.run(until=sim.START + 200)
    state = read_run(root, processes=False)
    state.processes = {"inference": [4242], "trainer": [4300], "orchestrator": [4400]}
    gpus = GpuSnapshot(gpus=[
        GpuReading(0, "H100", 0.0, 3 << 20, 80 << 30, 30.0, 70.0, (GpuProcess(4242, 2 << 20),)),
        GpuReading(1, "H100", 98.0, 70 << 30, 80 << 30, 66.0, 600.0, (GpuProcess(4300, 69 << 30),)),
    ])
    v = HealthTracker().evaluate(Facts(state, time.time(), Thresholds(), gpu=gpus))
    dead = findings(v, "inference_dead")[0]
    assert v.verdict == "Down" and "holds no GPU memory" in dead.message


def test_a_backfill_that_failed_is_said_not_swallowed():
    """`backfill_error` was once set and never shown. The history behind the live tail
    could not be read: the verdict says so (never better than Degraded)."""
    from runtop.state.run import RunState

    state = RunState(backfill_error="backfill stopped: [Errno 5] Input/output error")
    v = judge(state)
    assert v.verdict == "Degraded" and "history was not all read" in v.reasons[0] and "Errno 5" in v.reasons[0]


def test_a_stall_is_one_incident_however_long_it_lasts(simulated):
    """The stall's message carries its growing duration; each poll used to be a
    "new" critical finding (a toast and a bell each). One incident, announced once, whose
    `since` is the last write (when the silence began), not when runtop noticed it."""
    import os

    root = simulated("healthy", max_steps=9, stop_after=4)
    state = read_run(root, processes=False)
    newest = max(state.write_times())
    state.processes = {"trainer": [4400], "orchestrator": [4300], "inference": [4242]}
    tracker = HealthTracker()
    announced = []
    for poll in range(60):
        v = tracker.evaluate(Facts(state, newest + 3600 + 30 * poll, Thresholds()))
        announced += [f for f in v.new if f.rule == "stalled"]
    stall = findings(v, "stalled")[0]
    assert stall.severity == "critical" and "no log write anywhere for 1h" in stall.message
    # Its processes are up (an NCCL hang keeps them so): silent this long, it is Down all the same.
    assert stall.down and "alive but silent" in stall.message and v.verdict == "Down"
    assert len(announced) == 1
    # On the logs' clock (the one the Logs pane shows): the newest log's last line.
    ref = max((f for f in state.files.values() if f.kind == "log" and f.last_time), key=lambda f: f.mtime)
    assert abs(newest - ref.mtime) < 0.5 and stall.since == ref.last_time
    assert os.path.exists(root)


def test_alerts_speak_the_logs_clock_even_when_the_pod_logs_in_another_zone(simulated):
    """A crash's time once came from its log line and a stall's from runtop's own clock:
    two clocks in one column, hours apart on a pod that logs in UTC. Every `since` is put on
    the logs' clock, read against the newest log's last line and its modification time."""
    import datetime as dt

    state = read_run(simulated("trainer-oom", max_steps=9), processes=False)
    ref = max((f for f in state.files.values() if f.kind == "log" and f.last_time), key=lambda f: f.mtime)
    tracker = HealthTracker()
    v = tracker.evaluate(Facts(state, ref.mtime + 40, Thresholds()))
    crash = findings(v, "crash")[0]
    fatal = next(f.fatal for f in state.files.values() if f.fatal is not None)
    assert crash.since == fatal.time and crash.since  # the traceback's own line
    # A finding runtop dates itself (first seen now, or a wall time it began): the same clock.
    shifted = ref.mtime + 5 * 3600  # runtop's wall clock is five hours from the logs'
    assert dt.datetime.fromtimestamp(shifted).strftime("%H:%M:%S") != state.log_clock(shifted)
    seen = [Finding("disk", "warning", "disk filling"), Finding("stalled", "critical", "quiet", since_ts=ref.mtime - 60)]
    tracker = HealthTracker()
    tracker.track([], ref.mtime, state)  # the first look: nothing wrong
    tracked, _ = tracker.track(seen, ref.mtime + 40, state)
    assert [f.since for f in tracked] == [log_clock_plus(ref.last_time, 40), log_clock_plus(ref.last_time, -60)]
    # Already there at a first look (a fresh `check`), with no time of its own: when it began is
    # not known, and not said to be now (later than the last log line).
    tracked, _ = HealthTracker().track(seen, ref.mtime + 40, state)
    assert [f.since for f in tracked] == [None, log_clock_plus(ref.last_time, -60)]


def log_clock_plus(hms: str, seconds: int) -> str:
    h, m, s = (int(x) for x in hms.split(":"))
    t = (h * 3600 + m * 60 + s + seconds) % 86400
    return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def test_a_warning_that_turns_critical_is_announced_once_more():
    """The same incident escalating (a checkpoint first incomplete, then its save failed) is
    news; the same severity with new numbers is not."""
    from runtop.rules.findings import Finding

    def f(sev: str, pct: int) -> Finding:
        return Finding("disk_pressure", sev, f"/dev/shm is {pct}% full (2G free)", "/dev/shm")

    tracker = HealthTracker()
    first = tracker.track([f("warning", 86)], 0.0)[1]
    again = tracker.track([f("warning", 88)], 1.0)[1]
    worse = tracker.track([f("critical", 96)], 2.0)[1]
    still = tracker.track([f("critical", 97)], 3.0)[1]
    assert (len(first), len(again), len(worse), len(still)) == (1, 0, 1, 0)


def test_the_same_stuck_run_a_few_minutes_in_is_degraded_at_once(tmp_path):
    from runtop.parsers.events import RolloutFailed
    from runtop.state.run import RunState

    state = RunState()
    for k in range(10):
        state.apply(RolloutFailed("ProviderError", "upstream returned 503", f"10:0{k // 6}:{(k * 10) % 60:02d}"))
    v = judge(state)
    assert v.verdict == "Degraded" and "10 of the last 10 rollouts failed with ProviderError" in v.reasons[0]
    state.apply(RolloutFailed("ProviderError", "upstream returned 503", "10:12:00"))
    assert judge(state).verdict == "Down"  # past the stall time (10 min) with nothing moving
