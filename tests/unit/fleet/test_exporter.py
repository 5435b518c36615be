"""runtop's judgment in Prometheus: `runtop export` on a real HTTP endpoint read
by prometheus_client's own parser, the node_exporter textfile, and the contrib dashboard and
alerting rules that use those metrics."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from runtop.fleet.exporter import RunsCollector
from tests.paths import REPO

CONTRIB = REPO / "contrib"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text) for s in fam.samples}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def runs(simulated):
    return simulated("trainer-oom", max_steps=9), simulated("healthy", max_steps=6)


def test_the_endpoint_serves_each_runs_verdict_findings_and_steps(runs):
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "runtop", "export", *runs, "--port", str(port), "--interval", "0.2", "--duration", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got: dict = {}
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                got = samples(urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode())
            except OSError:
                got = {}
            down = got.get(("runtop_verdict", (("run", "run-trainer-oom"), ("verdict", "Down"))))
            if down == 1.0 and got.get(("runtop_verdict", (("run", "run-healthy"), ("verdict", "Finished")))) == 1.0:
                break
            time.sleep(0.2)
        assert got[("runtop_verdict", (("run", "run-trainer-oom"), ("verdict", "Down")))] == 1.0
        assert got[("runtop_verdict", (("run", "run-trainer-oom"), ("verdict", "Healthy")))] == 0.0
        assert got[("runtop_finding", (("rule", "crash"), ("run", "run-trainer-oom"), ("severity", "critical")))] == 1.0
        assert got[("runtop_step", (("role", "trainer"), ("run", "run-healthy")))] == 6.0
        assert got[("runtop_last_complete_checkpoint_step", (("run", "run-healthy"),))] == 6.0
        assert got[("runtop_up", (("run", "run-healthy"),))] == 1.0
        assert ("runtop_metric", (("name", "reward"), ("run", "run-healthy"))) in got
    finally:
        p.terminate()
        p.communicate(timeout=10)


def test_the_textfile_for_node_exporter_is_valid_exposition_format(runs, tmp_path):
    out = tmp_path / "runtop.prom"
    r = subprocess.run([sys.executable, "-m", "runtop", "export", *runs, "--textfile", str(out), "--once"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = samples(out.read_text())
    assert got[("runtop_verdict", (("run", "run-trainer-oom"), ("verdict", "Down")))] == 1.0
    assert not list(tmp_path.glob("*.tmp*"))  # written aside and renamed


def test_a_port_in_use_is_one_line(runs):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "runtop", "export", runs[0], "--port", str(busy), "--duration", "1"],
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and f"cannot listen on 127.0.0.1:{busy}" in r.stderr


def exported_names() -> set[str]:
    return {fam.name for fam in RunsCollector([]).collect()}


def test_the_grafana_dashboard_loads_and_queries_only_what_runtop_exports():
    dash = json.loads((CONTRIB / "grafana-dashboard.json").read_text())
    assert dash["title"] and dash["uid"] and isinstance(dash["schemaVersion"], int) and dash["panels"]
    names = exported_names()
    ids = set()
    for panel in dash["panels"]:
        assert {"id", "type", "title", "gridPos", "targets"} <= panel.keys() and panel["id"] not in ids
        ids.add(panel["id"])
        assert {"x", "y", "w", "h"} <= panel["gridPos"].keys() and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel["targets"]:
            used = set(re.findall(r"runtop_\w+", target["expr"]))
            assert used and used <= names, (panel["title"], used - names)


def test_the_alerting_rules_load_and_use_only_what_runtop_exports():
    doc = yaml.safe_load((CONTRIB / "alertmanager-rules.yml").read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    names = exported_names()
    assert {r["alert"] for r in rules} >= {"RuntopRunDown", "RuntopRunSilent"}
    for r in rules:
        used = set(re.findall(r"runtop_\w+", r["expr"]))
        assert used and used <= names, (r["alert"], used - names)
        assert r["annotations"]["summary"]


def test_a_slurm_runs_job_state_and_time_left_are_exported(tmp_path):
    """Alertmanager can page on a job about to hit its limit before the next checkpoint."""
    from prometheus_client import generate_latest

    from runtop.engine.engine import Engine
    from runtop.fleet.exporter import registry_for
    from runtop.frameworks.discovery import discover
    from runtop.frameworks.primerl.sim import Simulator
    from runtop.parsers.slurm import JobState, SlurmJob
    from runtop.sources.slurm import JobRef, SlurmSnapshot

    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=4).run()
    engine = Engine(discover(root), processes=False, disks=False, gpus=False, vllm_url=None, publishing=False)
    try:
        engine.step()
        engine.state.slurm = SlurmSnapshot(JobRef("4242", "--slurm-job"), SlurmJob("4242", JobState.RUNNING, "RUNNING",
                                           elapsed_s=600.0, limit_s=3600.0), True, "squeue --json + sacct --json")
        got = samples(generate_latest(registry_for([engine])).decode())
        assert got[("runtop_slurm_time_left_seconds", (("job", "4242"), ("run", "run")))] == 3000.0
        assert got[("runtop_slurm_job_state", (("job", "4242"), ("run", "run"), ("state", "RUNNING")))] == 1.0
    finally:
        engine.close()
