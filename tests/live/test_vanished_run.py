"""A run killed whole says nothing in its logs: runtop must say Down at once, not after 15
minutes of silence. Real processes: `runtop demo` in its own session, killed with SIGKILL
as a cluster, the OOM killer or a reclaimed pod would; a real process sampler watching."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runtop.engine.engine import Engine
from runtop.engine.snapshot import read_and_judge
from runtop.frameworks.discovery import discover
from runtop.parsers.kernel import oom_kill
from runtop.sources import process_record
from runtop.sources.kernel_log import oom_kills
from runtop.sources.lifetimes import OomKill, ProcessRecord, Seen

RUNTOP = [sys.executable, "-m", "runtop"]


def start_demo(root: Path, *more: str) -> subprocess.Popen:
    """`runtop demo --headless` as a user starts it, in a session of its own (a pod, a job)."""
    return subprocess.Popen([*RUNTOP, "demo", "--headless", "--dir", str(root), "--speed", "200", *more],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def watcher(root: Path) -> Engine:
    return Engine(discover(str(root)), interval=0.2, vllm_url=None, disks=False, gpus=False)


def step_until(engine: Engine, pred, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        engine.step()
        if pred(engine):
            return True
        time.sleep(0.05)
    return False


def live_with_checkpoint(engine: Engine) -> bool:
    s = engine.state
    return bool(s.processes) and len(s.processes) >= 4 and s.last_complete_checkpoint() is not None


def kill_session(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    # Every member of the session is gone (the demo's titled children die with it).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not [p for p in psutil.process_iter(["pid"]) if _sid(p.pid) == proc.pid]:
            return
        time.sleep(0.05)


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


@pytest.fixture
def killed_run(tmp_path):
    """A live demo run, watched by an engine until its processes and a checkpoint are seen,
    then killed whole with SIGKILL."""
    root = tmp_path / "run"
    demo = start_demo(root, "--steps", "500")
    try:
        assert step_until_exists(root)
        engine = watcher(root)
        assert step_until(engine, live_with_checkpoint), "the live demo's processes and a checkpoint were seen"
        assert engine.verdict.verdict == "Healthy"
        kill_session(demo)
        yield root, engine
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)


def test_a_run_killed_whole_is_down_within_two_polls_naming_the_kill(killed_run):
    root, engine = killed_run
    samples = 0
    deadline = time.monotonic() + 10
    while engine.verdict.verdict != "Down" and time.monotonic() < deadline:
        before = engine.lifetimes.gone_samples
        engine.step()
        samples += engine.lifetimes.gone_samples - before
        time.sleep(0.05)
    v = engine.verdict
    assert v.verdict == "Down", v.reasons
    assert engine.lifetimes.gone_samples == 2, "Down at the second sample with no process, not later"
    first = v.alerts[0]
    assert first.rule == "vanished" and first.down
    assert "every process of the run exited at" in v.reasons[0] and "the logs say nothing" in v.reasons[0]
    assert "SIGKILL" in v.reasons[0] and "pod reclaimed or node lost" in v.reasons[0]
    ckpt = engine.state.last_complete_checkpoint()
    assert ckpt is not None and f"last complete checkpoint: step {ckpt.step}" in v.reasons[0]
    assert "trainer" in (first.evidence or "") and "inference" in (first.evidence or "")
    assert not any(f.rule == "stalled" for f in v.alerts), "the vanish is the cause; no stall beside it"


def test_a_fresh_check_after_the_kill_knows_what_the_watcher_saw(killed_run):
    root, engine = killed_run
    assert step_until(engine, lambda e: e.verdict.verdict == "Down", 10)
    record = json.loads((root / ".runtop" / "processes.json").read_text())
    assert record["host"] == socket.gethostname() and record["gone_at"] is not None
    # `runtop check` later, in a process of its own: exit 2 (Down), with the same cause.
    out = subprocess.run([*RUNTOP, "check", str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "every process of the run exited at" in out.stdout
    # With no record, a check says what it rests on instead of a silent Healthy.
    (root / ".runtop" / "processes.json").unlink()
    _, v = read_and_judge(str(root), disks=False, gpus=False)
    assert v.verdict == "Healthy"
    assert v.reasons and v.reasons[0].startswith(f"no process of this run on this host ({socket.gethostname()})")


def test_one_role_killed_is_the_missing_role_not_a_vanished_run(tmp_path):
    root = tmp_path / "run"
    demo = start_demo(root, "--steps", "500")
    try:
        assert step_until_exists(root)
        engine = watcher(root)
        assert step_until(engine, live_with_checkpoint)
        trainer = engine.state.processes["trainer"][0]
        os.kill(trainer, signal.SIGKILL)
        assert step_until(engine, lambda e: e.verdict.verdict == "Down", 10), engine.verdict.reasons
        rules = [f.rule for f in engine.verdict.alerts if f.down]
        assert "role_missing" in rules and "vanished" not in rules
        assert engine.verdict.reasons[0].startswith("trainer process is not running while")
    finally:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait(10)


def test_a_run_that_ends_normally_stays_finished(tmp_path):
    root = tmp_path / "run"
    demo = start_demo(root, "--steps", "6", "--speed", "40")  # slow enough to be seen alive
    try:
        assert step_until_exists(root)
        engine = watcher(root)
        assert step_until(engine, lambda e: bool(e.state.processes))
        # The run ends and its processes exit, the demo itself still up (as a shell would be).
        assert step_until(engine, lambda e: e.verdict.verdict == "Finished" and e.lifetimes.gone_samples >= 3, 60), engine.verdict.reasons
        assert not any(f.rule == "vanished" for f in engine.verdict.alerts)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)


# ---- the record a later runtop reads: untrusted, like everything in the run dir ----------------
def _copy_of_a_dead_run(tmp_path) -> Path:
    """A run's files with no process left (the demo written at once)."""
    root = tmp_path / "run"
    subprocess.run([*RUNTOP, "demo", "--headless", "--dir", str(root), "--steps", "500", "--duration", "3", "--speed", "200"],
                   capture_output=True, timeout=60, check=False)
    assert (root / "logs").is_dir()
    return root


def _record(root: Path, host: str, procs: list[Seen], gone_at: float | None = None) -> None:
    process_record.save(str(root), ProcessRecord(host, time.time() - 60, tuple(procs), 1, gone_at))


def test_a_record_from_another_host_or_of_live_processes_proves_nothing(tmp_path):
    root = _copy_of_a_dead_run(tmp_path)
    dead = Seen(999_999, 1.0, "trainer", "PRIME-RL::Trainer")
    _record(root, "gpu-node-7", [dead])
    _, v = read_and_judge(str(root), disks=False, gpus=False)
    assert v.verdict != "Down" and "runtop saw them on gpu-node-7" in v.reasons[0]
    # A forged record naming a process that lives (this test's own): never a death.
    me = psutil.Process()
    _record(root, socket.gethostname(), [Seen(me.pid, me.create_time(), "trainer", "python")])
    _, v = read_and_judge(str(root), disks=False, gpus=False)
    assert not any(f.rule == "vanished" and f.down for f in v.alerts)
    # The same host, processes gone: the record speaks.
    _record(root, socket.gethostname(), [dead])
    _, v = read_and_judge(str(root), disks=False, gpus=False)
    assert v.verdict == "Down" and "exited since runtop saw them alive" in v.reasons[0]


@pytest.mark.parametrize("planted", ["garbage", "symlink", "fifo", "huge", "wrong types"])
def test_a_planted_record_is_ignored_quietly(tmp_path, planted):
    root = _copy_of_a_dead_run(tmp_path)
    dot = root / ".runtop"
    dot.mkdir(exist_ok=True)
    path = dot / "processes.json"
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"host": socket.gethostname(), "alive_at": 1.0, "attempt": 1,
                                  "processes": [{"pid": 999_999, "create_time": 1.0, "role": "trainer", "title": "x"}]}))
    # The demo was followed through the engine, which leaves its own record of the processes it
    # saw (as the TUI does): the planted record takes its place.
    path.unlink(missing_ok=True)
    if planted == "garbage":
        path.write_bytes(b"\x00\xff{not json")
    elif planted == "symlink":
        path.symlink_to(secret)
    elif planted == "fifo":
        os.mkfifo(path)
    elif planted == "huge":
        path.write_text(" " * (1 << 20) + secret.read_text())
    else:
        path.write_text(json.dumps({"host": 7, "alive_at": "yesterday", "attempt": 1, "processes": "all"}))
    assert process_record.load(str(root)) is None
    _, v = read_and_judge(str(root), disks=False, gpus=False)
    assert not any(f.rule == "vanished" and f.down for f in v.alerts)


def test_the_record_is_never_written_through_a_link(tmp_path):
    root = tmp_path / "run"
    (root / ".runtop").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (root / ".runtop" / "processes.json").symlink_to(victim)
    assert process_record.save(str(root), ProcessRecord("h", 1.0, (Seen(1, 1.0, None, "x"),), 1))
    assert victim.read_text() == "keep me" and not (root / ".runtop" / "processes.json").is_symlink()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    other = tmp_path / "run2"
    other.mkdir()
    (other / ".runtop").symlink_to(outside)
    assert not process_record.save(str(other), ProcessRecord("h", 1.0, (Seen(1, 1.0, None, "x"),), 1))
    assert list(outside.iterdir()) == []


# ---- the kernel's word: the OOM killer --------------------------------------------------------
# Lines as the kernel writes them (mm/oom_kill.c), through /dev/kmsg and dmesg.
KMSG_OOM = ("6,1843,93512345678,-;Out of memory: Killed process 4242 (python3) total-vm:81234560kB, "
            "anon-rss:60123456kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0")
DMESG_CGROUP = ("[93512.345678] Memory cgroup out of memory: Killed process 4243 (pt_main_thread) total-vm:123kB, "
                "anon-rss:100kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:12kB oom_score_adj:0")


def test_the_kernel_log_names_the_oom_killers_victims():
    k = oom_kill(KMSG_OOM)
    assert k is not None and (k.pid, k.name) == (4242, "python3") and k.since_boot_s == pytest.approx(93512.345678)
    k = oom_kill(DMESG_CGROUP)
    assert k is not None and (k.pid, k.name) == (4243, "pt_main_thread")
    assert oom_kill("6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,task=python3,pid=4242,uid=1000") is None
    assert oom_kill("[1.0] EXT4-fs (vda): mounted filesystem") is None


def test_a_saved_kernel_log_gives_only_the_runs_pids(tmp_path):
    log = tmp_path / "dmesg.txt"
    log.write_text("\n".join(["[1.0] boot", DMESG_CGROUP, "[93513.0] Out of memory: Killed process 77 (bash) total-vm:1kB"]) + "\n")
    assert oom_kills({4243, 4242}, str(log)) == (OomKill(4243, "pt_main_thread", pytest.approx(time.time() - time.monotonic() + 93512.345678, abs=1)),)
    assert oom_kills({1}, str(tmp_path / "missing")) == ()


def test_an_oom_kill_of_the_runs_process_is_the_cause(killed_run):
    root, engine = killed_run
    trainer = next(p for p in engine.lifetimes.last_alive if p.role == "trainer")
    line = f"[{time.monotonic() - 1:.6f}] Out of memory: Killed process {trainer.pid} (python3) total-vm:1kB, anon-rss:1kB"
    kmsg = root.parent / "kmsg.txt"
    kmsg.write_text(line + "\n")
    engine.processes_over_time.kernel_log = str(kmsg)  # the kernel's log as `dmesg` saved it
    assert step_until(engine, lambda e: e.verdict.verdict == "Down", 10)
    first = engine.verdict.alerts[0]
    assert first.cause == "OOM killer"
    assert f"the kernel's OOM killer killed python3 pid {trainer.pid} (trainer)" in engine.verdict.reasons[0]


@pytest.mark.parametrize("framework", ["skyrl", "verl", "trl", "openrlhf", "nemo-rl"])
def test_every_frameworks_demo_killed_whole_is_down_within_two_polls(tmp_path, framework):
    """The same death in every framework's shape of processes (Ray actors, a driver writing
    its log, vLLM beside the trainer)."""
    root = tmp_path / "run"
    demo = start_demo(root, "--framework", framework, "--steps", "400", "--speed", "100")
    try:
        assert step_until_exists(root)
        engine = watcher(root)
        assert step_until(engine, lambda e: bool(e.state.processes) and e.state.step is not None), engine.state.processes
        kill_session(demo)
        assert step_until(engine, lambda e: e.verdict.verdict == "Down", 10), engine.verdict.reasons
        assert engine.lifetimes.gone_samples == 2
        assert engine.verdict.alerts[0].rule == "vanished" and "the logs say nothing" in engine.verdict.reasons[0]
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)


def step_until_exists(root: Path, timeout: float = 30.0) -> bool:
    """The run's first log is there (each framework lays its files out its own way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if root.is_dir() and any(p.suffix in (".log", ".jsonl") or p.name.endswith(".log") for p in root.rglob("*") if p.is_file()):
            time.sleep(1.0)  # the rest of its files a moment later
            return True
        time.sleep(0.1)
    return False


def test_the_launcher_shells_word_names_the_signal(tmp_path):
    """Launched in a tmux Launcher pane, the run's foreground job is killed whole: bash prints
    `Killed`, and runtop's cause says so (SIGKILL), not only a guess among kills."""
    from runtop.frameworks.primerl.sim import Simulator
    from runtop.sources.tmux import Tmux
    from tests.live.test_actions import start_run

    root = tmp_path / "outputs" / "reverse-text"
    Simulator(str(root), scenario="stalled", max_steps=20).run()
    sock = f"runtop-test-{os.getpid()}-vanish"
    try:
        start_run(sock, "prime-rl", root, tmp_path)
        t = Tmux(sock)
        pane = t.launcher_pane("Launcher", "prime-rl")
        engine = Engine(discover(str(root)), interval=0.2, vllm_url=None, disks=False, gpus=False,
                        launcher=lambda: t.capture(pane, 60))
        assert step_until(engine, lambda e: len(e.state.processes or {}) >= 4)
        job = next(c for c in psutil.Process(pane.pid).children())
        os.killpg(os.getpgid(job.pid), signal.SIGKILL)
        assert step_until(engine, lambda e: e.verdict.verdict == "Down" and "SIGKILL" in e.verdict.reasons[0], 15), engine.verdict.reasons
        assert "the Launcher pane's shell says 'Killed' (SIGKILL): killed outright" in engine.verdict.reasons[0]
        assert engine.verdict.alerts[0].cause == "SIGKILL"
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def test_watch_pages_a_run_killed_whole_within_two_polls(tmp_path):
    """`runtop watch` beside the run, as a user leaves it in a tmux window: the kill is its
    next line, and one alert, within two polls of its interval."""
    root = tmp_path / "run"
    demo = start_demo(root, "--steps", "500", "--speed", "40")
    out = tmp_path / "watch.txt"
    watch = None
    try:
        assert step_until_exists(root)
        engine = watcher(root)
        assert step_until(engine, live_with_checkpoint)
        with open(out, "w") as f:
            watch = subprocess.Popen([*RUNTOP, "watch", str(root), "--interval", "1"], stdout=f, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while " Healthy" not in out.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert " Healthy" in out.read_text(), out.read_text()
        time.sleep(1.5)  # a poll that sees the processes alive
        kill_session(demo)
        killed = time.monotonic()
        while "Down: every process of the run exited at" not in out.read_text() and time.monotonic() - killed < 15:
            time.sleep(0.1)
        took = time.monotonic() - killed
        text = out.read_text()
        assert "Down: every process of the run exited at" in text and "alert (incident): runtop: run is Down" in text, text
        assert took < 2 * 1 + 3, f"{took:.1f} s after the kill (two polls of 1 s, and the time to start a poll)"
    finally:
        if watch is not None:
            watch.terminate()
            watch.wait(10)
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)
