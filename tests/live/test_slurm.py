"""A run under SLURM: when the scheduler ends the job, runtop says so as the cause,
in every SLURM generation's words. `squeue`/`sacct`/`sbatch` are stand-ins on `PATH`
(`tests/slurm_standin.py`) printing the shapes of real captures of Slurm 23.11, 21.08 and
20.11 (no `--json`)."""

from __future__ import annotations

import json
import os
import stat
import sys
import time

import pytest

from runtop.cli.main import main
from runtop.frameworks.primerl.sim import Simulator
from runtop.parsers.slurm import JobState, duration_s, sacct_json, sacct_parsable, squeue_parsable
from runtop.sources.slurm import SlurmClient, find_job, job_from_dir
from tests.paths import TESTS

HERE = str(TESTS)
VERSIONS = ("23.11", "21.08", "20.11")


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """Stand-in SLURM clients on PATH; `slurm(version, **job)` describes job 4242."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("squeue", "sacct", "sbatch", "scancel"):
        exe = bindir / tool
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE}/slurm_standin.py" {tool} "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    cfg = tmp_path / "slurm.json"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RUNTOP_FAKE_SLURM", str(cfg))

    def describe(version: str = "23.11", **job: object) -> str:
        cfg.write_text(json.dumps({"version": version, "jobs": {"4242": {"name": "rl", "nodes": "gpu-[01-04]", "node_count": 4, **job}}}))
        return str(cfg)

    describe.calls = lambda: [json.loads(ln) for ln in open(str(cfg) + ".calls")] if os.path.exists(str(cfg) + ".calls") else []  # type: ignore[attr-defined]
    return describe


def slurm_run(tmp_path, *, stop_after: int | None = 7, scenario: str = "healthy") -> str:
    """A prime-rl run launched by SLURM: its template writes `job_%j.log` into the run dir."""
    root = str(tmp_path / "run")
    Simulator(root, scenario=scenario, max_steps=20, stop_after=stop_after).run()
    with open(os.path.join(root, "job_4242.log"), "w") as f:
        f.write("Starting PRIME-RL on gpu-[01-04]\n")
    return root


def check(root: str, capsys, *extra: str) -> tuple[int, str]:
    code = main(["check", root, *extra])
    return code, capsys.readouterr().out


KILLS = [
    ({"state": "TIMEOUT", "exit": "0:0", "elapsed": 86400, "limit_min": 1440,
      "steps": [["4242.batch", "CANCELLED"], ["4242.extern", "COMPLETED"], ["4242.0", "CANCELLED"]]},
     "SLURM job 4242 hit its time limit (1-00:00:00)"),
    ({"state": "PREEMPTED", "exit": "0:0", "elapsed": 5000, "limit_min": 1440, "steps": [["4242.batch", "CANCELLED"]]},
     "SLURM job 4242 was preempted"),
    ({"state": "NODE_FAIL", "exit": "0:0", "elapsed": 5000, "limit_min": 1440, "nodes": "gpu-07"},
     "SLURM job 4242 lost a node (NODE_FAIL) on gpu-07"),
    ({"state": "OUT_OF_MEMORY", "exit": "0:125", "elapsed": 5000, "limit_min": 1440, "steps": [["4242.batch", "OUT_OF_MEMORY"]]},
     "SLURM job 4242 was killed for memory (OUT_OF_MEMORY"),
    ({"state": "CANCELLED by 54321", "exit": "0:0", "elapsed": 5000, "limit_min": 1440},
     "SLURM job 4242 was cancelled"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("job", "words"), KILLS, ids=[k[0]["state"].split()[0] for k in KILLS])
def test_a_job_the_scheduler_ended_reads_down_naming_the_slurm_state(tmp_path, capsys, slurm, version, job, words):
    root = slurm_run(tmp_path)
    slurm(version, **job)
    code, out = check(root, capsys)
    first = out.splitlines()[0]
    assert code == 2 and first.startswith("Down:"), out
    assert words in first, first
    assert "at step 7/20; last complete checkpoint: step 6" in first
    if version == "20.11":
        assert "sacct --parsable2 (this SLURM has no --json)" in out  # the fallback is said
    else:
        assert "sacct --json" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_a_running_job_with_time_to_spare_is_healthy_and_shown(tmp_path, capsys, slurm, version):
    root = slurm_run(tmp_path)
    slurm(version, state="RUNNING", elapsed=3600, limit_min=1440)
    code, out = check(root, capsys)
    assert code == 0 and out.startswith("Healthy"), out
    assert main(["status", root, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["slurm"]["job_id"] == "4242" and doc["slurm"]["state"] == "RUNNING" and doc["slurm"]["in_queue"] is True
    assert 22 * 3600 < doc["slurm"]["time_left_s"] <= 23 * 3600 + 5
    assert doc["slurm"]["found_by"] == "job_4242.log in the run dir"


@pytest.mark.parametrize("version", VERSIONS)
def test_walltime_running_out_before_the_next_checkpoint_is_a_warning(tmp_path, capsys, slurm, version):
    root = slurm_run(tmp_path)  # step 7, a checkpoint every 2 steps, ~37 s a step
    slurm(version, state="RUNNING", elapsed=3590, limit_min=60)
    code, out = check(root, capsys)
    assert code == 1 and out.startswith("Degraded"), out
    line = next(ln for ln in out.splitlines() if " walltime " in ln)
    assert "SLURM job 4242 has" in line and "the next checkpoint (step 8) is ~" in line and "since step 6 will be lost" in line


def test_a_completed_job_whose_run_finished_is_finished(tmp_path, capsys, slurm):
    root = slurm_run(tmp_path, stop_after=None)
    slurm("23.11", state="COMPLETED", exit="0:0", elapsed=5000, limit_min=1440)
    code, out = check(root, capsys)
    assert code == 0 and out.startswith("Finished"), out


def test_a_job_that_completed_before_the_run_finished_is_down(tmp_path, capsys, slurm):
    root = slurm_run(tmp_path)
    slurm("21.08", state="COMPLETED", exit="0:0", elapsed=5000, limit_min=1440)
    code, out = check(root, capsys)
    assert code == 2 and "SLURM job 4242 ended COMPLETED (exit 0) but the run never said it finished" in out.splitlines()[0]


def test_a_failed_job_leaves_the_cause_to_the_crash_in_its_log(tmp_path, capsys, slurm):
    root = slurm_run(tmp_path, stop_after=None, scenario="trainer-oom")
    slurm("23.11", state="FAILED", exit="1:0", elapsed=5000, limit_min=1440)
    code, out = check(root, capsys)
    first = out.splitlines()[0]
    assert code == 2 and "trainer died: torch.OutOfMemoryError" in first.split(";")[0], first
    assert "SLURM job 4242 FAILED with exit code 1: the crash above is its cause" in out


def test_a_requeued_job_waiting_in_the_queue_is_degraded_with_its_reason(tmp_path, capsys, slurm):
    root = slurm_run(tmp_path)
    slurm("20.11", state="PENDING", reason="BeginTime", elapsed=0, limit_min=1440)
    code, out = check(root, capsys)
    assert code == 1 and "SLURM job 4242 is PENDING (BeginTime): queued, not running" in out, out


def test_a_slurm_without_json_is_asked_once_then_read_plainly(tmp_path, slurm):
    slurm_run(tmp_path)
    slurm("20.11", state="RUNNING", elapsed=60, limit_min=60)
    client = SlurmClient()
    ref = find_job(str(tmp_path / "run"))
    assert ref is not None
    first, second = client.read(ref), client.read(ref)
    assert first.job is not None and second.job is not None and second.job.state is JobState.RUNNING
    json_asks = [c for c in slurm.calls() if "--json" in c]
    assert json_asks == [["squeue", "--json", "-j", "4242"]]  # refused once: one SLURM, never asked again
    assert second.source == "squeue -o + sacct --parsable2 (this SLURM has no --json)"


def test_no_slurm_clients_or_a_dead_controller_is_said_and_judges_nothing(tmp_path, capsys, slurm, monkeypatch):
    root = slurm_run(tmp_path)
    cfg = slurm("23.11", state="RUNNING", elapsed=60, limit_min=60)
    with open(cfg) as f:
        doc = json.load(f)
    doc["down"] = True
    with open(cfg, "w") as f:
        json.dump(doc, f)
    code, out = check(root, capsys)
    assert code == 0 and "SLURM: squeue failed: squeue: error: Unable to contact slurm controller (connect failure)" in out
    monkeypatch.setenv("PATH", "/nonexistent")
    code, out = check(root, capsys, "--slurm-job", "4242")
    assert code == 0 and "SLURM: squeue and sacct are not on PATH: the job's state is read from its output only" in out
    assert "squeue is not on PATH" not in out


def test_a_bad_job_id_is_one_line(tmp_path, capsys):
    root = slurm_run(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["check", root, "--slurm-job", "4242; rm -rf ~"])
    assert e.value.code == 3 and "is not a SLURM job id" in capsys.readouterr().err


def test_the_newest_job_log_names_the_job_and_the_older_ones_are_earlier_jobs(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    for i, name in enumerate(("job_100.log", "job_205.log", "slurm-150.out", "notes.log")):
        p = root / name
        p.write_text("x")
        os.utime(p, (1000 + i, 1000 + i))
    ref = job_from_dir(str(root))
    assert ref is not None and ref.job_id == "150" and ref.earlier == ("205", "100")


# ---- the parsers on the captures' shapes ------------------------------------------------------
def test_parsable2_reads_the_allocation_line_and_keeps_the_steps():
    # martius-lab/cluster_utils#87 and vcell#1913's shapes, our values.
    text = ("JobID|JobName|State|ExitCode|Elapsed|Timelimit|NNodes|NodeList|Start|End\n"
            "4242|rl|FAILED|1:0|1-02:03:04|2-00:00:00|2|gpu-[01-02]|2026-11-23T08:00:00|2026-11-24T10:03:04\n"
            "4242.batch|batch|FAILED|1:0|1-02:03:04||1|gpu-01||\n"
            "4242.0|python|OUT_OF_MEMORY|0:125|1-02:03:00||2|gpu-[01-02]||\n")
    job = sacct_parsable(text, "4242")
    assert job is not None and job.state is JobState.FAILED and job.exit_code == 1 and job.signal == 0
    assert job.elapsed_s == 93784 and job.limit_s == 172800 and job.node_count == 2
    assert job.worst_step() == ("4242.0", JobState.OUT_OF_MEMORY)
    assert sacct_parsable(text.splitlines()[0] + "\n", "4242") is None  # header only: no such job


def test_squeue_o_reads_a_pending_reason_and_time_left():
    job = squeue_parsable("4242|rl|PENDING|0:00|1-00:00:00|1-00:00:00|4|(Priority)\n", "4242")
    assert job is not None and job.state is JobState.PENDING and job.reason == "Priority" and job.left_s == 86400


def test_sacct_json_in_both_generations_gives_the_same_job():
    new = {"jobs": [{"job_id": 4242, "name": "rl", "state": {"current": ["TIMEOUT"], "reason": "None"},
                     "time": {"elapsed": 3600, "limit": {"set": True, "infinite": False, "number": 60}, "start": 1, "end": 3601},
                     "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "infinite": False, "number": 0},
                                   "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""}},
                     "nodes": "gpu-01", "allocation_nodes": 1, "steps": []}]}
    old = {"jobs": [{"job_id": 4242, "name": "rl", "state": {"current": "TIMEOUT", "reason": "None"},
                     "time": {"elapsed": 3600, "limit": 60, "start": 1, "end": 3601},
                     "exit_code": {"status": "SUCCESS", "return_code": 0}, "nodes": "gpu-01", "allocation_nodes": 1, "steps": []}]}
    a, b = sacct_json(json.dumps(new), "4242"), sacct_json(json.dumps(old), "4242")
    assert a == b and a is not None and a.state is JobState.TIMEOUT and a.limit_s == 3600 and a.time_left() == 0


@pytest.mark.parametrize(("text", "secs"), [("1-02:03:04", 93784), ("02:03:04", 7384), ("03:04", 184), ("UNLIMITED", None),
                                            ("Partition_Limit", None), ("", None), ("12:00.5", 720)])
def test_slurm_durations(text, secs):
    assert duration_s(text) == secs


# ---- the job's own output: what slurmstepd wrote -------------------------------------------
JOB_LOG_ENDS = [
    # (the tail of job_4242.log, in the shapes of genuine job outputs, with our values; the words expected)
    ("srun: Job step aborted: Waiting up to 47 seconds for job step to finish.\n"
     "slurmstepd: error: *** JOB 4242 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 DUE TO TIME LIMIT ***\n"
     "slurmstepd: error: *** STEP 4242.0 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 DUE TO TIME LIMIT ***\n",
     "SLURM job 4242 hit its time limit (its output says so) at step"),  # ZettaAI/zetta_utils#671
    ("slurmstepd-gpu-07: error: *** JOB 4242 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 DUE TO PREEMPTION ***\n",
     "SLURM job 4242 was preempted (its output says so)"),  # the host-prefixed form of DataBiosphere/toil#4706
    ("slurmstepd: *** JOB 4242 CANCELLED AT 2026-11-24T03:00:01 DUE TO NODE FAILURE on gpu-03 ***\n",
     "SLURM job 4242 lost a node (NODE_FAIL) on gpu-03 (its output says so)"),  # marbl/canu#1067's older form
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks have been OOM Killed.\n"
     "srun: error: gpu-07: tasks 0-3: Out Of Memory\nsrun: Terminating StepId=4242.0\n"
     "slurmstepd: error: *** STEP 4242.0 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 ***\n",
     "SLURM job 4242 was killed for memory (OUT_OF_MEMORY: the job's cgroup limit, host RAM, not the GPU's) on gpu-07"),  # chrisknewman/tusas#149
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 4242.batch cgroup. Some of your processes may have been "
     "killed by the cgroup out-of-memory handler.\n",
     "SLURM job 4242 was killed for memory"),  # hafs-community/HAFS#101, lanl/PyBNF#118
    ("slurmstepd: error: *** JOB 4242 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 ***\n",
     "SLURM job 4242 was cancelled (its output says so)"),
]


@pytest.mark.parametrize(("tail", "words"), JOB_LOG_ENDS, ids=["timeout", "preempted", "node-fail-old", "oom", "oom-old", "scancel"])
def test_without_squeue_or_sacct_the_jobs_own_output_names_the_end(tmp_path, capsys, monkeypatch, tail, words):
    root = slurm_run(tmp_path)
    with open(os.path.join(root, "job_4242.log"), "a") as f:
        f.write("[trainer0]: Step 7 | loss 0.1\n" * 3 + tail)
    monkeypatch.setenv("PATH", "/nonexistent")  # a laptop with the run dir copied: no SLURM clients
    code, out = check(root, capsys)
    first = out.splitlines()[0]
    assert code == 2 and words in first, out
    assert "at step 7/20; last complete checkpoint: step 6" in first
    assert "job_4242.log: slurmstepd" in out or "job_4242.log: srun" in out


def test_the_jobs_own_output_is_evidence_beside_sacct(tmp_path, capsys, slurm):
    root = slurm_run(tmp_path)
    with open(os.path.join(root, "job_4242.log"), "a") as f:
        f.write(JOB_LOG_ENDS[0][0])
    slurm("23.11", state="TIMEOUT", exit="0:0", elapsed=86400, limit_min=1440)
    code, out = check(root, capsys)
    assert code == 2 and "hit its time limit (1-00:00:00)" in out.splitlines()[0]
    assert "job_4242.log: slurmstepd: error: *** JOB 4242 ON gpu-07 CANCELLED AT 2026-11-24T03:00:01 DUE TO TIME LIMIT ***" in out


def test_a_job_output_with_no_scheduler_words_says_nothing(tmp_path, capsys, monkeypatch):
    root = slurm_run(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    code, out = check(root, capsys)
    assert code == 0 and out.startswith("Healthy")


def test_the_band_says_how_a_slurm_run_resumes(tmp_path, slurm):
    from runtop.engine.snapshot import read_and_judge
    from runtop.rules.advice import advise

    root = slurm_run(tmp_path)
    slurm("23.11", state="TIMEOUT", exit="0:0", elapsed=86400, limit_min=1440)
    state, verdict = read_and_judge(root, processes=False, disks=False)
    advice = advise(state, verdict)
    assert advice is not None and advice.text == "resubmit its batch script from step 6 (last complete)" and advice.action == "resume"


def test_a_silent_run_whose_job_still_runs_is_called_hung_not_gone(tmp_path, capsys, slurm):
    """Seen in tmux on a login node: "no run process alive: the pod or job may be gone" beside
    a SLURM job squeue calls RUNNING. The processes are on the job's nodes, not here."""
    root = slurm_run(tmp_path)
    old = time.time() - 3600
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))
    slurm("23.11", state="RUNNING", elapsed=4000, limit_min=1440)
    code, out = check(root, capsys)
    first = out.splitlines()[0]
    assert code == 2 and "no log write anywhere for 1h00m; SLURM job 4242 is still RUNNING on gpu-[01-04]: hung?" in first, first
    assert "the pod or job may be gone" not in first
