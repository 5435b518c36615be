"""The run's Ray cluster: when the log says only `ActorDiedError`, Ray's state API
says which actor died and why, and that becomes the cause. The answers are recorded from a real
cluster (`tests/recordings/ray_state_2.60.json`: ray 2.60.0, `ray start --head` plus a second
node on one machine; an actor SIGKILLed as the kernel's OOM killer does, one `ray.kill`ed, one
whose `__init__` raised, and a node whose raylet was killed with an actor on it)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from runtop.engine.snapshot import read_and_judge
from runtop.sources.ray_state import RayClient, address_of, snapshot
from tests.paths import TESTS

HERE = str(TESTS)
RECORDED = json.load(open(os.path.join(HERE, "recordings", "ray_state_2.60.json")))
CASE = os.path.join(HERE, "corpus", "skyrl-ray-actor-died-no-cause", "run")


class Recorded:
    """The state API's answers, as recorded (or edited per test); counts the calls."""

    def __init__(self, nodes=None, actors=None) -> None:
        self.nodes = copy.deepcopy(RECORDED["nodes"] if nodes is None else nodes)
        self.actors = copy.deepcopy(RECORDED["actors"] if actors is None else actors)
        self.calls: list[str] = []

    def list_nodes(self, address: str) -> list[dict]:
        self.calls.append(address)
        return self.nodes

    def list_actors(self, address: str) -> list[dict]:
        return self.actors


def as_this_runs_worker(api: Recorded) -> Recorded:
    """The recorded SIGKILLed actor, as the run's own FSDPPolicyWorkerBase (the pid and ip
    its log's ActorDiedError names)."""
    dead = next(a for a in api.actors if a["class_name"] == "AsyncVLLMInferenceEngine")
    dead["class_name"], dead["pid"], dead["name"] = "FSDPPolicyWorkerBase", 4388, ""
    dead["death_cause"]["actor_died_error_context"].update(pid=4388, node_ip_address="10.0.0.1", class_name="FSDPPolicyWorkerBase")
    return api


def judge(root: str, api: Recorded, address: str | None = "127.0.0.1:6379"):
    return read_and_judge(root, processes=False, disks=False, ray=RayClient(api), ray_address=address)


@pytest.fixture
def run(tmp_path) -> str:
    root = str(tmp_path / "run")
    shutil.copytree(CASE, root)
    return root


def test_the_recorded_cluster_reads_as_ray_wrote_it():
    snap = snapshot("auto", "test", RECORDED["nodes"], RECORDED["actors"])
    reasons = {a.class_name: a.reason for a in snap.dead}
    assert reasons["AsyncVLLMInferenceEngine"] == "WORKER_DIED" and reasons["ActorModelRayActorBOX"] == "NODE_DIED"
    assert reasons["Broken"] == "CREATION_TASK_ERROR"
    assert sorted(a.reason for a in snap.dead if a.class_name == "WorkerDict") == ["OWNER_DIED", "RAY_KILL"]
    broken = next(a for a in snap.dead if a.class_name == "Broken")
    assert broken.message == "RuntimeError: CUDA error: an illegal memory access was encountered"
    lost = snap.lost_nodes()
    assert len(lost) == 1 and lost[0].gpus == 2 and "missing too many heartbeats" in lost[0].message
    assert snap.alive_actors == 0 and snap.gpus() == 0  # the head node has no GPU; the driver had exited (its actors OWNER_DIED)


def test_an_actor_died_wrapper_gets_its_cause_from_the_state_api(run):
    _state, verdict = judge(run, as_this_runs_worker(Recorded()))
    assert verdict.verdict == "Down"
    first = verdict.reasons[0]
    assert first.startswith("Ray actor FSDPPolicyWorkerBase pid 4388 on 10.0.0.1 died: WORKER_DIED, its worker process died"), first
    assert first.endswith("the log reports it as ray.exceptions.ActorDiedError")
    assert "SIGKILL" not in first  # Ray lists possible causes; runtop claims none of them
    assert any("ActorDiedError" in r for r in verdict.reasons[1:])  # the log's own words follow


def test_a_lost_node_with_the_runs_actor_on_it_is_named(run):
    api = Recorded()
    api.actors = [a for a in api.actors if a["class_name"] == "ActorModelRayActorBOX"]
    api.actors[0]["pid"] = 4388  # the run's worker was the actor on the lost node
    lost = next(n for n in api.nodes if n["state"] == "DEAD")
    lost["end_time_ms"] = int(time.time() * 1000)  # lost during this run
    _state, verdict = judge(run, api)
    assert "Ray actor ActorModelRayActorBOX 'policy-rank1' pid 4388" in verdict.reasons[0] and "NODE_DIED, its node died" in verdict.reasons[0]
    node = next(a for a in verdict.alerts if a.rule == "ray" and "lost node" in a.message)
    assert "Ray lost node 192.0.2.2 (2 GPUs): Unexpected termination: health check failed" in node.message and node.severity == "critical"


def test_a_specific_death_in_the_log_stays_the_cause(tmp_path):
    root = str(tmp_path / "run")
    shutil.copytree(os.path.join(HERE, "corpus", "verl-worker-oom-actor-died", "run"), root)
    _state, verdict = judge(root, Recorded())
    assert "OutOfMemoryError" in verdict.reasons[0]
    assert any(a.rule == "ray" and a.severity == "info" and "(the crash above is the cause)" in a.message for a in verdict.alerts)


def test_dead_actors_with_no_death_in_the_log_never_judge_the_run(tmp_path):
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=4).run()
    api = Recorded()
    for n in api.nodes:
        if n["state"] == "DEAD":
            n["end_time_ms"] = int((time.time() - 86400) * 1000)  # lost a day before this run began
    _state, verdict = judge(root, api)
    assert verdict.verdict == "Healthy"
    assert not any("lost node" in a.message for a in verdict.alerts)
    assert any(a.rule == "ray" and a.severity == "info" and "an earlier job's?" in a.message for a in verdict.alerts)


def test_no_cluster_tied_to_the_run_is_never_asked_not_even_runtops_own_ray_address(run, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6379")  # runtop's environment: maybe another cluster
    api = Recorded()
    _state, verdict = judge(run, api, address=None)
    assert api.calls == [] and not any(a.rule == "ray" for a in verdict.alerts)


def test_the_address_comes_from_a_run_process_environment():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env={**os.environ, "RAY_ADDRESS": "10.0.0.1:6379"})
    try:
        deadline = time.monotonic() + 10  # the child's environment is its own once it has exec'd
        while address_of(None, [child.pid], False) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert address_of(None, [child.pid], False) == ("10.0.0.1:6379", f"RAY_ADDRESS of the run's pid {child.pid}")
        assert address_of(None, [], True) == ("auto", "the run's own Ray processes on this machine")
        assert address_of("10.0.0.2:6379", [child.pid], True) == ("10.0.0.2:6379", "--ray-address")
    finally:
        child.kill()
        child.wait()


def test_a_cluster_that_does_not_answer_is_said_not_a_traceback(run):
    class Down(Recorded):
        def list_nodes(self, address: str) -> list[dict]:
            raise ConnectionError("Failed to connect to API server")

    _state, verdict = judge(run, Down())
    assert verdict.verdict == "Down" and "ActorDiedError" in verdict.reasons[0]  # the log alone still judges


@pytest.mark.skipif(shutil.which("ray") is None, reason="ray is not installed (pip install '.[ray]')")
def test_a_real_cluster():
    """`ray start --head`, an actor SIGKILLed, read through the real state API."""
    import tempfile

    tmp_path = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "RAY_TMPDIR": tmp_path}
    subprocess.run(["ray", "start", "--head", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={tmp_path}"],
                   check=True, capture_output=True, env=env, timeout=120)
    try:
        script = ("import os, signal, time, ray\nray.init(address='auto')\n@ray.remote(num_cpus=0)\nclass W:\n"
                  "    def pid(self): return os.getpid()\nw = W.remote()\nos.kill(ray.get(w.pid.remote()), signal.SIGKILL)\ntime.sleep(3)\n")
        subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120, capture_output=True)
        snap = RayClient().read("auto", "test")
        assert any(a.class_name == "W" and a.reason == "WORKER_DIED" for a in snap.dead)
        assert snap.nodes and all(n.alive for n in snap.nodes)
    finally:
        subprocess.run(["ray", "stop", "--force"], capture_output=True, env=env, timeout=120)
        shutil.rmtree(tmp_path, ignore_errors=True)
