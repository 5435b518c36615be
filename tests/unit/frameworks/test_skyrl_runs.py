"""Whole SkyRL runs, written by the simulator, read the way a user reads them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from runtop.engine.reader import RunReader
from runtop.engine.snapshot import read_and_judge, read_run
from runtop.frameworks import process_roles
from runtop.frameworks.discovery import DiscoveryError, discover, with_ckpt_dir
from runtop.frameworks.skyrl.sim import RUN_NAME, SkyrlSimulator
from runtop.outputs.report import to_markdown
from runtop.outputs.report_json import to_json


def log_of(root: str) -> str:
    return os.path.join(root, "logs", f"{RUN_NAME}.log")


def runtop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=60)


def test_status_json_on_a_healthy_skyrl_log_has_every_column(skyrl_run):
    root = skyrl_run("healthy", max_steps=4)
    r = runtop("status", "--json", log_of(root))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["framework"], doc["layout"]) == ("skyrl", "driver log")
    assert doc["progress"]["max_steps"] == 4 and doc["progress"]["trainer_step"] == 4
    for row in doc["steps"]:
        for col in ("reward", "loss", "entropy", "clip_ratio", "grad_norm", "seq_len", "step_time_s"):
            assert isinstance(row[col], float), (row["step"], col)
        assert {"generate", "fwd_logprobs_values_reward", "policy_train", "sync_weights"} <= set(row["phases_s"])
        assert row["origin"]["trainer"] == "log+status"
        # SkyRL's rollout side is its generator, named so, never prime-rl's orchestrator.
        assert "generator" in row["origin"] and "orchestrator" not in row["origin"]
    ro = doc["rollouts"]
    assert set(ro["format_failures"]) <= {f"rule_{n}" for n in range(1, 9)} and ro["format_failures"]
    assert 0 < ro["pass_rates"]["ft"] <= 1 and 0 < ro["pass_rates"]["gt"] <= 1
    sc = doc["slow_calls"]
    assert sc["count"] > 0 and sc["timeouts"] >= 0
    assert {f["function"] for f in sc["by_function"]} <= {"advanced_web_search", "query_ensembl", "query_clinvar", "get_rna_seq_archs4", "gget.info"}
    assert isinstance(doc["context_overflows"], int)
    cks = doc["checkpoints"]
    assert [c["step"] for c in cks] == [2, 4] and all(c["complete"] for c in cks)
    assert all(c["bytes"] > 6 << 30 for c in cks)
    assert doc["checkpoint_dir"] == os.path.join(root, "ckpts")
    assert doc["health"]["verdict"] == "Finished"  # its last batch bar reached N/N
    # The infra log the driver named is read too: vLLM's stats come from it.
    assert any(f["path"].startswith("infra-") and f["bytes_read"] > 0 for f in doc["files"])
    assert doc["vllm"]["running"] is not None
    assert "sk-sim" not in r.stdout  # the shell trace's API key never leaves runtop


def test_sigbus_in_a_save_leaves_a_broken_checkpoint_and_runtop_says_which_is_safe(skyrl_run):
    """docs/incidents.md#sigbus-save-core-dumps, attempt #1: SIGBUS in the Megatron save at step 4 leaves
    a 421 KB common.pt."""
    root = skyrl_run("sigbus-checkpoint", max_steps=6, autoretry=False)
    state, verdict = read_and_judge(root, processes=False, disks=False, gpus=False)
    broken, good = state.checkpoints[4], state.checkpoints[2]
    assert not broken.complete and "common.pt" in broken.reason and broken.bytes < 1 << 20
    assert good.complete
    assert state.last_complete_checkpoint().step == 2
    kinds = [e.kind for e in state.errors]
    assert "SIGBUS" in kinds and "WorkerDied" in kinds
    md = to_markdown(state, verdict)
    assert "global_step_4 (421.0 KB) INCOMPLETE" in md and "last complete: global_step_2" in md


def test_autoretry_relaunch_keeps_the_lost_steps_apart(skyrl_run):
    """Attempt #2 resumes from global_step_2: steps 3-4 of attempt #1 are lost, not merged."""
    root = skyrl_run("sigbus-checkpoint", max_steps=6)
    state = read_run(root, processes=False)
    assert [a.number for a in state.attempts] == [1, 2]
    assert state.attempts[1].resumed_from == 2
    assert sorted((r.step, r.attempt) for r in state.lost_steps) == [(3, 1), (4, 1)]
    assert {s: r.attempt for s, r in state.steps.items()} == {1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 6: 2}
    assert state.trainer_step == 6


def test_disk_full_save_is_down_with_no_space_left(skyrl_run):
    root = skyrl_run("disk-full", max_steps=6)
    doc = to_json(*read_and_judge(root, processes=False, disks=False, gpus=False))
    assert doc["health"]["verdict"] == "Down"
    assert any("No space left on device" in e["message"] for e in doc["errors"])
    assert [(c["step"], c["complete"]) for c in doc["checkpoints"]] == [(2, True), (4, False)]


def test_markdown_check_in_has_the_step_table_kept_by_hand(skyrl_run):
    root = skyrl_run("healthy", max_steps=3)
    md = runtop("status", root).stdout
    assert "| step | reward | policy loss | clip ratio | entropy | grad norm | response length | step time |" in md
    assert md.count("\n| 1 |") == 1 and "\n| 3 |" in md
    assert "ft_reward pass" in md and "format failures Rule" in md and "slow tool calls" in md
    assert "orchestrator" not in md


def test_a_directory_holding_several_logs_picks_the_newest_skyrl_log(skyrl_run, tmp_path):
    root = skyrl_run("healthy", max_steps=2)
    older = os.path.join(root, "logs", "debug_ckpt_shm512g_5.log")
    shutil.copy(log_of(root), older)
    os.utime(older, (1, 1))
    with open(os.path.join(root, "logs", "notes.log"), "w") as f:
        f.write("just notes\n")
    lay = discover(root)
    assert lay.framework == "skyrl" and lay.logs[0].path == log_of(root)
    assert "debug_ckpt_shm512g_5.log" in lay.notes[0]


def test_ckpt_dir_flag_and_a_dir_not_on_this_machine(skyrl_run, tmp_path):
    root = skyrl_run("healthy", max_steps=2)
    moved = os.path.join(tmp_path, "elsewhere")
    shutil.move(os.path.join(root, "ckpts"), moved)
    state = read_run(log_of(root), processes=False)
    assert not state.checkpoints
    assert any("not on this machine; give --ckpt-dir" in n for n in state.notes)
    state = read_run(log_of(root), processes=False, ckpt_dir=moved)
    assert sorted(state.checkpoints) == [2]
    with pytest.raises(DiscoveryError, match="no such directory"):
        with_ckpt_dir(discover(root), os.path.join(tmp_path, "nope"))
    r = runtop("status", root, "--ckpt-dir", os.path.join(tmp_path, "nope"))
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_a_live_log_read_as_it_is_written(tmp_path):
    """The reader follows the log while the simulator writes it: phases and batch progress move."""
    root = str(tmp_path / "live")
    sim = SkyrlSimulator(root, max_steps=3)
    script = sim.script()
    at, act = next(script)
    act()
    reader = RunReader(discover(log_of(root)))
    seen_phases = set()
    for _at, act in script:
        act()
        reader.poll(rescan_every=float("inf"), ckpt_every=0)
        phase = reader.state.current_phase()
        if phase:
            seen_phases.add(phase.split()[0])
    assert {"generate", "policy_train", "save_checkpoints"} <= seen_phases or {"generate", "policy_train"} <= seen_phases
    assert reader.state.trainer_step == 3
    assert reader.state.batch is not None and reader.state.batch.total == 20


def test_a_relaunch_that_truncates_the_log_opens_a_new_attempt(skyrl_run):
    """`bash run.sh &> logs/x.log` again: the log starts over, resuming from the last checkpoint."""
    root = skyrl_run("healthy", max_steps=4, autoretry=False)
    reader = RunReader(discover(log_of(root)))
    reader.poll()
    assert reader.state.trainer_step == 4
    with open(log_of(root), "w") as f:
        f.write(
            "\x1b[36m(skyrl_entrypoint pid=9)\x1b[0m 2026-02-20 08:00:00.000 | INFO     | skyrl_train.trainer:load_checkpoints:640 - Resuming from global_step: 4\n"
        )
    reader.poll()
    assert reader.state.attempt == 2 and reader.state.attempts[1].resumed_from == 4
    assert not reader.state.lost_steps  # steps 1-4 are in the checkpoint: nothing was lost


def test_skyrl_processes_are_found_from_the_driver_writing_the_log(skyrl_run, tmp_path):
    """A live SkyRL run: the driver writes the log and starts Ray (`ray.init()`: a raylet as its
    child, the `ray::` actors under it). Without its driver, none of them is this run's."""
    from runtop.sources.processes import run_processes
    from tests.launch_shapes import Shapes, pids_titled, settle, tree

    root = skyrl_run("healthy", max_steps=1)
    log = log_of(root)
    shapes = Shapes(tmp_path / "machine")
    try:
        with open(log, "a") as out:
            driver = shapes.start(["python3", "-m", "skyrl_train.entrypoints.main_base"], tmp_path, stdout=out)
        titles = ("ray::skyrl_entrypoint", "ray::FSDPPolicyWorkerBase", "ray::AsyncVLLMInferenceEngine")
        assert settle(lambda: all(pids_titled(driver.pid, t) for t in titles))
        trainer = pids_titled(driver.pid, titles[0]) | pids_titled(driver.pid, titles[1])
        want = {"launcher": [driver.pid], "trainer": sorted(trainer), "inference": sorted(pids_titled(driver.pid, titles[2]))}
        settle(lambda: run_processes(root, [log], roles=process_roles()) == want)
        assert run_processes(root, [log], roles=process_roles()) == want
        under = tree(driver.pid)[1:]
        shapes.loose += [p.pid for p in under]
        driver.kill()
        driver.wait()
        # Its raylet and actors, orphaned, are no run's (Ray tears them down a moment later).
        assert any(p.is_running() for p in under)
        assert run_processes(root, [log], roles=process_roles()) == {}
    finally:
        shapes.stop()


@pytest.mark.parametrize("wrapper_first", [False, True], ids=["dump-then-wrapper", "wrapper-then-dump"])
def test_sigbus_during_save_is_named_whichever_order_ray_printed_it(skyrl_run, wrapper_first):
    """The SIGBUS of docs/incidents.md#sigbus-save-core-dumps as Ray prints it: the driver's
    ActorDiedError before or after the worker's own `*** SIGBUS received` (docs/formats.md, "What
    genuine output adds"). The expert's reading: the worker died of SIGBUS during save_checkpoints;
    look at /dev/shm."""
    root = skyrl_run("sigbus-checkpoint", max_steps=6, autoretry=False, wrapper_first=wrapper_first)
    state, v = read_and_judge(root, processes=False, disks=False, gpus=False)
    crash = next(a for a in v.alerts if a.rule == "crash")
    assert (crash.cause, crash.phase, crash.wrapper) == ("SIGBUS", "save_checkpoints", "ActorDiedError")
    assert crash.message.startswith("trainer died: SIGBUS during save_checkpoints")
    assert "MegatronPolicyWorkerBase pid 67012" in crash.message and "/dev/shm" in crash.message
    doc = to_json(state, v)
    assert (doc["health"]["cause"], doc["health"]["phase"], doc["health"]["wrapper"]) == ("SIGBUS", "save_checkpoints", "ActorDiedError")


def test_upstream_skyrl_without_global_step_lines_keeps_every_steps_numbers(skyrl_run):
    """Upstream SkyRL prints no `global_step: N`: the step is known from the status dict's
    `trainer/global_step`, the `Step N:` dump or the batch bar, and no number is dropped."""
    biomni = read_run(skyrl_run("healthy", max_steps=4, stop_after=3), processes=False)
    up = read_run(skyrl_run("format-rising", max_steps=4, stop_after=3, upstream=True), processes=False)
    assert up.trainer_step == 3 and sorted(up.steps) == [1, 2, 3]
    for row in up.rows():
        for name in ("loss", "entropy", "grad_norm", "clip_ratio", "step_time_s", "reward"):
            assert row.value(name) is not None, (row.step, name)
        assert {"generate", "fwd_logprobs_values_reward", "policy_train"} <= set(row.phases_s), row.phases_s
    assert sorted(biomni.steps) == sorted(up.steps)
