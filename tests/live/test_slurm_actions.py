"""Resume and stop of a SLURM run, typed into a real tmux Launcher pane on a private
socket: `sbatch` of the run's own batch script once its job has ended, `scancel` of its own job
while it runs, and nothing where runtop cannot prove the script is this run's."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid

import pytest

from tests.live.test_actions import tmux, wait_for
from tests.live.test_slurm import slurm, slurm_run  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


@pytest.fixture
def launcher(tmp_path):
    """A tmux session `slurmrun` whose Launcher window is a shell in the run dir (a login node's)."""
    sock = f"runtop-slurm-{uuid.uuid4().hex[:8]}"
    try:
        yield sock
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def open_launcher(sock: str, root: str) -> None:
    tmux(sock, "new-session", "-d", "-s", "slurmrun", "-n", "Launcher", "-x", "200", "-y", "50", "-c", root,
         "bash --noprofile --norc -i")
    tmux(sock, "send-keys", "-t", "slurmrun:Launcher", "PS1='$ '", "Enter")
    assert wait_for(lambda: "$" in tmux(sock, "capture-pane", "-p", "-t", "slurmrun:Launcher")), "no prompt"


def runtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=90)


def write_script(root: str, output: str = "job_%j.log") -> str:
    path = f"{root}/rl.sbatch"
    with open(path, "w") as f:
        f.write(f"#!/bin/bash\n#SBATCH --job-name=reverse-text\n#SBATCH --output={root}/{output}\n#SBATCH --time=24:00:00\n"
                f"uv run rl @ {root}/rl.toml\n")
    return path


def test_a_timed_out_job_is_resumed_by_sbatch_of_its_own_script(tmp_path, slurm, launcher):  # noqa: F811
    root = slurm_run(tmp_path)
    script = write_script(root)
    slurm("23.11", state="TIMEOUT", exit="0:0", elapsed=86400, limit_min=1440)
    open_launcher(launcher, root)
    opts = ["--tmux-socket", launcher, "--tmux-session", "slurmrun"]
    r = runtop("actions", root, *opts)
    resume = r.stdout.split("\nstop ")[0]
    assert f"sends: sbatch {script}" in resume and "confirm by typing: 6" in resume, r.stdout
    assert "SLURM job 4242 ended TIMEOUT; its batch script rl.sbatch writes job_4242.log" in resume
    assert "has nothing to stop (state TIMEOUT)" in r.stdout  # stop: nothing is running
    r = runtop("send", "resume", root, "--yes", "--step", "6", *opts)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: "Submitted batch job 4243" in tmux(launcher, "capture-pane", "-p", "-t", "slurmrun:Launcher"))
    assert ["sbatch", script] in slurm.calls()


def test_a_running_job_is_stopped_by_scancel_and_never_submitted_twice(tmp_path, slurm, launcher):  # noqa: F811
    root = slurm_run(tmp_path)
    write_script(root)
    slurm("21.08", state="RUNNING", elapsed=600, limit_min=1440)
    open_launcher(launcher, root)
    opts = ["--tmux-socket", launcher, "--tmux-session", "slurmrun"]
    r = runtop("actions", root, *opts)
    assert "SLURM job 4242 is RUNNING: a second sbatch would start a second copy of this run" in r.stdout
    assert "sends: scancel 4242" in r.stdout and "a SLURM run restarts in two steps" in r.stdout
    r = runtop("send", "resume", root, "--yes", *opts)
    assert r.returncode == 2 and not any(c[0] == "sbatch" for c in slurm.calls())
    r = runtop("send", "stop", root, "--yes", *opts)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: ["scancel", "4242"] in slurm.calls())


def test_without_a_script_that_writes_this_runs_job_log_nothing_is_planned(tmp_path, slurm, launcher):  # noqa: F811
    root = slurm_run(tmp_path)
    write_script(root, output="other_%j.log")  # a script in the run dir, but it writes another log
    slurm("20.11", state="PREEMPTED", exit="0:0", elapsed=600, limit_min=1440)
    open_launcher(launcher, root)
    r = runtop("actions", root, "--tmux-socket", launcher, "--tmux-session", "slurmrun")
    assert "disabled: no batch script in the run dir whose #SBATCH --output names job_4242.log" in r.stdout, r.stdout
