"""The process pane's source on real processes: a fake PRIME-RL tree with real titles (setproctitle)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from runtop.frameworks import process_roles
from runtop.sources.processes import ProcessSampler, ProcessSnapshot, run_processes

TITLED = "import setproctitle, sys, time; setproctitle.setproctitle(sys.argv[1]); time.sleep(120)"
# The launcher starts its children, as `uv run rl` does, then waits (without reaping them).
LAUNCHER = (
    "import setproctitle, subprocess, sys, time; setproctitle.setproctitle('PRIME-RL::Launcher');"
    "kids = [subprocess.Popen([sys.executable, '-c', sys.argv[1], t]) for t in sys.argv[2:]];"
    "time.sleep(120)"
)
ROLES = ("VLLM::APIServer", "PRIME-RL::Orchestrator", "PRIME-RL::Trainer")


def sample_until(sampler: ProcessSampler, pred, timeout: float = 10.0) -> ProcessSnapshot:
    """Sample until `pred(snapshot)` holds (children set their titles a moment after they start)."""
    deadline = time.monotonic() + timeout
    while True:
        snap = sampler.sample()
        if pred(snap) or time.monotonic() > deadline:
            return snap
        time.sleep(0.05)


def spawn(title: str, cwd) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", TITLED, title], cwd=cwd)


def kill_tree(proc: subprocess.Popen) -> None:
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    for k in kids:
        try:
            k.kill()
        except psutil.Error:
            continue
    proc.kill()
    proc.wait()


@pytest.fixture
def fake_run(tmp_path):
    """A run dir and a launcher (cwd in the run dir) with three titled children."""
    run = tmp_path / "outputs" / "my-run"
    run.mkdir(parents=True)
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, TITLED, *ROLES], cwd=run)
    sampler = ProcessSampler(str(run), roles=process_roles())
    try:
        snap = sample_until(sampler, lambda s: {"inference", "orchestrator", "trainer"} <= set(s.roles()))
        assert {"inference", "orchestrator", "trainer"} <= set(snap.roles()), "the fake tree never showed its roles"
        yield run, launcher, sampler
    finally:
        kill_tree(launcher)


def test_roles_are_recognised_by_title_in_tree_order(fake_run):
    run, launcher, sampler = fake_run
    snap = sampler.sample()
    by_pid = {p.pid: p for p in snap.procs}
    assert by_pid[launcher.pid].role == "launcher" and by_pid[launcher.pid].depth == 0
    assert snap.procs[0].pid == launcher.pid  # parents come before children
    kids = [p for p in snap.procs if p.ppid == launcher.pid]
    assert sorted(p.title for p in kids) == sorted(ROLES)
    assert all(p.depth == 1 and p.rss for p in kids)
    # CPU% needs two samples of the same process: this (second) sample has it.
    assert all(p.cpu_pct is not None for p in snap.procs)
    assert not snap.missing and not snap.zombie_roles


def test_only_this_runs_tree_is_shown(fake_run, tmp_path):
    run, launcher, sampler = fake_run
    other = tmp_path / "outputs" / "other-run"
    other.mkdir()
    stranger = spawn("PRIME-RL::Trainer", other)
    try:
        theirs = ProcessSampler(str(other), roles=process_roles())
        sample_until(theirs, lambda s: "trainer" in s.roles())
        assert stranger.pid not in {p.pid for p in sampler.sample().procs}
    finally:
        kill_tree(stranger)


def test_a_killed_role_turns_red_while_the_others_run(fake_run):
    """The inference server dies while the trainer waits: reported missing (or zombie), not alive."""
    run, launcher, sampler = fake_run
    vllm = next(p for p in sampler.sample().procs if p.title.startswith("VLLM::"))
    os.kill(vllm.pid, 9)
    # The launcher does not reap it, so it lingers as a zombie: that must not count as alive.
    snap = sample_until(sampler, lambda s: "inference" in s.missing or "inference" in s.zombie_roles)
    assert "inference" in snap.missing or "inference" in snap.zombie_roles
    assert any(p.pid == vllm.pid and p.zombie for p in snap.procs) or vllm.pid not in {p.pid for p in snap.procs}
    assert "inference" not in snap.roles() and {"orchestrator", "trainer"} <= set(snap.roles())
    assert "inference" not in run_processes(str(run), roles=process_roles())


def test_a_reused_pid_is_a_new_process(tmp_path):
    """A trainer dies and the kernel hands its PID to a newcomer: not the same process."""
    last_pid = "/proc/sys/kernel/ns_last_pid"
    if not os.access(last_pid, os.W_OK):
        pytest.skip("cannot choose the next PID here (writing ns_last_pid needs root)")
    run = tmp_path / "run"
    run.mkdir()
    sampler = ProcessSampler(str(run), roles=process_roles())
    first = spawn("PRIME-RL::Trainer", run)
    try:
        snap = sample_until(sampler, lambda s: "trainer" in s.roles())
        sampler.sample()  # a second sample: the first process now has a CPU interval
        old = next(p for p in snap.procs if p.pid == first.pid)
    finally:
        first.kill()
        first.wait()  # reaped: its PID is free
    newcomer = None
    for _ in range(20):
        with open(last_pid, "w") as f:
            f.write(str(old.pid - 1))
        cand = spawn("PRIME-RL::Trainer", run)
        if cand.pid == old.pid:
            newcomer = cand
            break
        cand.kill()
        cand.wait()
    if newcomer is None:
        pytest.skip("another process took the PID first")
    try:
        snap = sample_until(sampler, lambda s: any(p.pid == old.pid and p.role == "trainer" for p in s.procs))
        again = next(p for p in snap.procs if p.pid == old.pid)
        assert again.create_time != old.create_time
        assert again.cpu_pct is None  # nothing carried over from the dead process
    finally:
        newcomer.kill()
        newcomer.wait()


# ---- ownership by identity -------------------------------------------------------------------
ARGV_ONLY = "import sys, time; time.sleep(120)"


def test_a_run_with_the_same_name_elsewhere_is_not_this_run(tmp_path):
    """`…/xa/outputs/my-run` and `…/xb/outputs/my-run`: a basename proves nothing."""
    a = tmp_path / "xa" / "outputs" / "my-run"
    b = tmp_path / "xb" / "outputs" / "my-run"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    theirs = subprocess.Popen([sys.executable, "-c", LAUNCHER, TITLED, *ROLES], cwd=b)
    # Named by a relative path from its own cwd: proof that it is B's, not A's.
    by_argv = subprocess.Popen([sys.executable, "-c", ARGV_ONLY, "--output-dir", "outputs/my-run"], cwd=tmp_path / "xb")
    try:
        sample_until(ProcessSampler(str(b), roles=process_roles()), lambda s: {"inference", "orchestrator", "trainer"} <= set(s.roles()))
        mine = ProcessSampler(str(a), roles=process_roles()).sample()
        assert mine.procs == [] and mine.roles() == {}
        pids_b = {p.pid for p in ProcessSampler(str(b), roles=process_roles()).sample().procs}
        assert by_argv.pid in pids_b and theirs.pid in pids_b
    finally:
        kill_tree(theirs)
        by_argv.kill()
        by_argv.wait()


def test_a_tmux_server_or_shell_naming_the_run_is_not_the_run(tmp_path):
    """`tmux new-session "runtop RUN"` and `bash -c '… RUN …'` mention the run dir; neither
    they nor the panes under them belong to it."""
    run = tmp_path / "outputs" / "my-run"
    run.mkdir(parents=True)
    shell = subprocess.Popen(["bash", "-c", f"sleep 120; echo {run}"])
    child = None
    try:
        time.sleep(0.2)
        child = psutil.Process(shell.pid).children()
        snap = ProcessSampler(str(run), roles=process_roles()).sample()
        assert shell.pid not in {p.pid for p in snap.procs}
        assert not ({c.pid for c in child} & {p.pid for p in snap.procs})
    finally:
        shell.kill()
        shell.wait()
        for c in child or []:
            try:
                c.kill()
            except psutil.Error:
                continue
