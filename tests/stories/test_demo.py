"""The demo shows everything working: the simulated run starts real processes
with a real run's titles, in its directory, that live and die as its logs say, and a GPU
reading marked simulated that follows them."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from runtop.frameworks import get, process_roles
from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from runtop.simulator.gpu import SimulatedGpuProbe
from runtop.sources.processes import ProcessSampler
from tests.live.test_processes import sample_until


def wait_script(sim, timeout: float = 20.0) -> None:
    sim._thread.join(timeout)
    assert not sim._thread.is_alive(), "the script did not end"


def test_the_inference_engine_dies_in_the_demo_while_the_trainer_waits(tmp_path):
    """The run's tree is there while it runs; when vLLM's engine dies its process goes, the
    trainer and orchestrator wait on (a hang outlives the script); the GPUs say the same."""
    sim = Simulator(str(tmp_path / "run"), scenario="inference-death", max_steps=6)
    sim.start_processes()
    sampler = ProcessSampler(sim.root, roles=process_roles(get("prime-rl")))
    try:
        snap = sample_until(sampler, lambda s: len(s.roles()) == 4)
        assert set(snap.roles()) == {"launcher", "inference", "orchestrator", "trainer"}
        assert any(p.title.startswith("PRIME-RL::Trainer") for p in snap.procs)
        sim.run()  # the script, at once: the engine dies in it
        snap = sample_until(sampler, lambda s: "inference" in s.missing)
        assert snap.missing == ["inference"] and {"trainer", "orchestrator"} <= set(snap.roles())
        gpus = SimulatedGpuProbe(sim.procs).read()
        assert gpus.simulated and all("simulated" in g.name for g in gpus.gpus)
        by_holder = {p.pid: g for g in gpus.gpus for p in g.processes}
        trainer_gpu = by_holder[snap.roles()["trainer"][0]]
        assert trainer_gpu.util_pct > 80
        idle = [g for g in gpus.gpus if not g.processes]
        assert len(idle) == 1 and idle[0].util_pct == 0  # the dead engine's GPU
        pids = [p for ps in sim.procs.pids().values() for p in ps]
    finally:
        sim.stop()
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
    assert sim.procs.pids() == {}


def test_a_finished_or_crashed_demo_run_leaves_no_process(tmp_path):
    sim = Simulator(str(tmp_path / "run"), scenario="trainer-oom", speed=2000, max_steps=6)
    sim.start(processes=True)  # paced, in its thread, as `runtop demo` plays it
    try:
        wait_script(sim)
        assert sim.procs.pids() == {}  # the trainer died; the launcher tore the rest down
    finally:
        sim.stop()


def test_the_skyrl_demo_relaunches_its_processes_with_the_retry(tmp_path):
    root = str(tmp_path / "sky")
    sim = SkyrlSimulator(root, scenario="sigbus-checkpoint", speed=5000)
    ended: list[str] = []
    real_end = sim.ended
    sim.ended = lambda *r: (ended.append("end"), real_end(*r))[1]  # count the crash
    sim.start_processes()
    try:
        sampler = ProcessSampler(sim.root, roles=process_roles(get("skyrl")))
        snap = sample_until(sampler, lambda s: "trainer" in s.roles())
        assert any(p.title.startswith("ray::skyrl_entrypoint") for p in snap.procs)
        sim.run()
        assert ended and sim.procs.pids() == {}
    finally:
        sim.stop()


def test_paced_and_written_at_once_runs_start_no_process(tmp_path):
    """Tests write runs at once (`run()`): no process is started behind their back."""
    sim = Simulator(str(tmp_path / "run"), scenario="healthy", max_steps=3)
    sim.run()
    assert sim.procs is None
    assert not [p for p in psutil.process_iter(["cwd"]) if (p.info.get("cwd") or "").startswith(os.path.realpath(sim.root))]
    time.sleep(0)


SELF_PANE = """
import sys, time
from runtop.actions.vetted import ActionError, Context
from runtop.frameworks.primerl.sim import Simulator
from runtop.engine.snapshot import read_run
from runtop.sources.tmux import Tmux

root, sock, out = sys.argv[1:4]
sim = Simulator(root, scenario="stalled", max_steps=6)
sim.start_processes()  # as `runtop demo` does: the run's processes are this process's children
sim.run()
state = read_run(root)
try:
    pane = Context(state=state, run_root=root, tmux=Tmux(sock)).pane()
    said = f"PANE {pane.pane_id}"
except ActionError as e:
    said = f"REFUSED {e}"
open(out, "w").write(f"{sorted(state.processes or {})} {said}")
sim.ended()
time.sleep(30)
"""


@pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_the_demo_never_takes_its_own_pane_for_the_runs_launcher(tmp_path):
    """The demo's processes descend from runtop's own pane: typing a resume there would land
    in runtop, not a shell (seen in tmux: the Logs pane showed runtop's own screen)."""
    import subprocess
    import sys

    sock = f"rt-self-{os.getpid()}"
    out = tmp_path / "said.txt"
    script = tmp_path / "self_pane.py"
    script.write_text(SELF_PANE)
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "80", "-y", "24",
                    f"{sys.executable} {script} {tmp_path / 'run'} {sock} {out}"], check=True)
    try:
        deadline = time.monotonic() + 20
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        said = out.read_text()
        assert said.startswith("['inference', 'launcher', 'orchestrator', 'trainer'] REFUSED"), said
        assert "the one runtop runs in" in said
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


# Checked in a static read at these real seconds of a demo at the default speed. `stalled` is
# silence, judged against the clock: tests/unit/cli/test_cli.py plays it live.
DEMO_SPEED = 20.0
LOOKS_S = (15.0, 30.0, 45.0, 55.0)


def _scenarios() -> list[tuple[str, str]]:
    from runtop.frameworks import simulated

    return [(fw.name, s) for fw in simulated() for s in fw.scenarios if s not in ("healthy", "stalled")]


@pytest.mark.parametrize(("framework", "scenario"), _scenarios(), ids=[f"{f}-{s}" for f, s in _scenarios()])
def test_every_failure_scenario_shows_its_incident_within_a_minute_of_the_demo(tmp_path, framework, scenario):
    """SkyRL's failure scenarios stayed Healthy for three minutes at 20×: its steps take about
    nine simulated minutes and the faults land at step 4's save. The demo now joins such a run
    later in its timeline (LEAD_IN_S); the rules are unchanged. Each scenario's run, written as
    far as the demo has played it at each look, is judged as `runtop check` judges it."""
    from runtop.engine.snapshot import read_and_judge
    from runtop.frameworks import get as get_framework

    def judged(name: str, real_s: float) -> tuple[str, str]:
        sim = get_framework(framework).simulator(str(tmp_path / f"{name}-{real_s:g}"), name)
        sim.run(until=sim.START + sim.LEAD_IN_S + real_s * DEMO_SPEED)
        _state, verdict = read_and_judge(sim.root, processes=False, disks=False)
        return verdict.verdict, (verdict.reasons or [""])[0]

    seen = []
    for real_s in LOOKS_S:
        word, why = judged(scenario, real_s)
        seen.append((real_s, word, why))
        # Its incident, not what the healthy run shows at that moment too (an early
        # small-sample warning both have is no scenario's incident).
        if word in ("Down", "Degraded") and (word, why) != judged("healthy", real_s):
            return
    pytest.fail(f"{framework} {scenario}: no incident within a minute at {DEMO_SPEED:g}x: {seen}")


def test_a_skyrl_demo_joins_its_run_with_steps_already_written(tmp_path):
    """The lead-in is written at once: the demo opens on a run with its first steps in the log,
    and its fault still lies ahead of it (the demo shows it happen, not its aftermath)."""
    sim = SkyrlSimulator(str(tmp_path / "r"), scenario="disk-full")
    sim.run(until=sim.START + sim.LEAD_IN_S)
    text = open(os.path.join(sim.root, sim.log), encoding="utf-8").read()
    assert "Step 2: " in text and "No space left on device" not in text
