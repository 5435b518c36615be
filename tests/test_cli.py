"""`runtop` as a user types it: exit codes, one-line errors, JSON on stdout, secrets hidden."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def runtop(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("setup", ["missing", "empty", "junk"])
def test_bad_paths_exit_2_with_one_line_and_no_traceback(tmp_path, setup):
    path = tmp_path / "x"
    if setup != "missing":
        path.mkdir()
    if setup == "junk":
        (path / "readme.txt").write_text("hello")
    r = runtop("status", str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("runtop: ")
    assert "Traceback" not in r.stderr and "expected a prime-rl run directory" in r.stderr


def test_status_json_of_a_simulated_crash(simulated):
    r = runtop("status", "--json", simulated("trainer-oom", max_steps=20, fail_step=6))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["framework"] == "prime-rl" and doc["layout"] == "main"
    assert doc["health"]["verdict"] == "Down"
    assert doc["progress"]["trainer_step"] == 5 and doc["progress"]["max_steps"] == 20


def test_secrets_in_logs_never_reach_the_output(simulated):
    root = simulated("healthy", max_steps=3)
    with open(os.path.join(root, "logs/attempt_1/orchestrator.log"), "a") as f:
        f.write("14:59:00   ERROR + export WANDB_API_KEY=sk-live-1234567890\n")
    for args in (("status", root), ("status", "--json", root)):
        r = runtop(*args)
        assert r.returncode == 0 and "sk-live-1234567890" not in r.stdout and "WANDB_API_KEY=***" in r.stdout


def test_runtop_path_follows_and_demo_rejects_unknown_scenarios(tmp_path):
    r = runtop("demo", "--scenario", "meteor")
    assert r.returncode == 2 and "unknown scenario" in r.stderr
    r = runtop(str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such file or directory" in r.stderr


def test_demo_runs_a_live_simulated_run_headless():
    r = runtop("demo", "--scenario", "trainer-oom", "--speed", "1000", "--steps", "9", "--duration", "2.5", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    assert "Down" in r.stdout.splitlines()[-1]


def test_demo_simulates_a_skyrl_run_too():
    r = runtop("demo", "--framework", "skyrl", "--scenario", "disk-full", "--speed", "5000", "--steps", "5", "--duration", "3", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    assert "simulating a skyrl run (disk-full)" in r.stderr
    last = r.stdout.splitlines()[-1]
    assert "Down" in last and "save_checkpoints" in last
    r = runtop("demo", "--framework", "skyrl", "--scenario", "trainer-oom")
    assert r.returncode == 2 and "unknown scenario 'trainer-oom' for skyrl" in r.stderr
