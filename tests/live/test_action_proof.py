"""The security cases of sending an action, on a real tmux server: each case sends nothing, or
exactly the vetted text once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from runtop.actions.dispatch import dispatch
from runtop.actions.vetted import ActionError, plan
from runtop.frameworks import process_roles
from tests.live.test_actions import LAUNCH, audit_lines, context, launched, received, stop_run, tmux, wait_for

pytestmark = pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed")


def _partial_step_9(root) -> None:
    os.makedirs(root / "checkpoints" / "step_9" / "trainer")  # no .metadata: a partial save


@pytest.mark.parametrize("twin", ["step_9\n", "step_\u0669", "step_09"])
def test_a_twin_of_a_partial_step_dir_never_resumes_it(live_run, twin):
    root, sock = live_run
    stop_run(root, sock)
    _partial_step_9(root)
    good = root / "checkpoints" / twin
    os.makedirs(good / "trainer")
    (good / "trainer" / ".metadata").write_text("x")
    os.makedirs(good / "orchestrator")
    (good / "orchestrator" / "progress.pt").write_text("x")
    p = plan("resume", context(root, sock))
    if twin == "step_09":
        # Two dirs name step 9: neither is trusted, resume is off and says why.
        assert p.disabled and "ambiguous" in p.disabled and "step_09 and step_9" in p.disabled
    else:
        # Not a step dir at all (a newline, a non-ASCII digit): the last complete one is still 4.
        assert p.disabled is None and p.text.endswith("--resume.step 4")
    assert "--resume.step 9" not in p.text


def test_an_audit_log_that_cannot_be_written_means_nothing_is_sent(live_run):
    root, sock = live_run
    stop_run(root, sock)
    os.unlink(root / ".runtop" / "audit.log")
    os.mkdir(root / ".runtop" / "audit.log")  # a directory: no line can be appended
    ctx = context(root, sock)
    p = plan("resume", ctx)
    with pytest.raises(ActionError, match="nothing sent, the audit log cannot be written"):
        dispatch(p, ctx, confirmation=p.confirm)
    time.sleep(0.5)
    assert received(root) == "" and len(launched(root)) == 1


def test_two_processes_sending_at_once_never_merge_their_lines(live_run):
    """Each `runtop send` holds the run's dispatch lock and sends text and Enter in one tmux
    command list: two at once arrive as two whole lines."""
    root, sock = live_run
    stop_run(root, sock)
    tmux(sock, "send-keys", "-t", "prime-rl:Launcher", "export NOLAUNCH=1", "Enter")  # each resume only records itself
    argv = [sys.executable, "-m", "runtop", "send", "resume", str(root), "--yes", "--tmux-socket", sock, "--launch-cmd", LAUNCH]
    for _ in range(3):
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        for pr in procs:
            assert pr.wait(60) == 0, pr.stderr.read()
    want = LAUNCH + " --resume.step 4"
    assert wait_for(lambda: len(launched(root)) >= 7, 10)
    assert launched(root)[1:] == [want] * 6
    assert [(e["action"], e["outcome"]) for e in audit_lines(root)] == [("stop", "ok")] + [("resume", "ok")] * 6


def test_flag_like_run_names_are_refused(live_run):
    root, sock = live_run
    stop_run(root, sock)
    ctx = context(root, sock, launch_cmd="uv run rl @ configs/rl.toml")
    ctx.state.run_name = "--resume"
    assert "not a plain name" in plan("resume", ctx).disabled


# ---- two runs on one machine --------------------------------------------------------------
@pytest.fixture
def two_runs(tmp_path):
    """RUN_A (alive, `xa/outputs/my-run`) and RUN_B (dead, `xb/outputs/my-run`: the same
    basename), each with its own session and Launcher window, and a third session with an
    unrelated shell. Only A's pane has a live run under it."""
    from runtop.frameworks.primerl.sim import Simulator
    from tests.live.test_actions import shell_rc, start_run

    a = tmp_path / "xa" / "outputs" / "my-run"
    b = tmp_path / "xb" / "outputs" / "my-run"
    for root in (a, b):
        Simulator(str(root), scenario="partial-checkpoint", max_steps=20).run()
    sock = f"runtop-two-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    try:
        start_run(sock, "run-a", a, tmp_path)
        tmux(sock, "new-session", "-d", "-s", "run-b", "-n", "Launcher", "-c", str(b), shell_rc(tmp_path))
        tmux(sock, "new-session", "-d", "-s", "scratch", "-n", "Launcher", "-c", str(tmp_path), shell_rc(tmp_path))
        assert wait_for(lambda: "$" in tmux(sock, "capture-pane", "-p", "-t", "run-b:Launcher")), (
            tmux(sock, "capture-pane", "-p", "-t", "run-b:Launcher"), tmux(sock, "list-panes", "-a", "-F", "#{session_name} #{pane_pid} #{pane_current_command} #{pane_dead}"))
        # B's launch is in its history, with a VAR=value prefix, and it has exited.
        tmux(sock, "send-keys", "-t", "run-b:Launcher", f"NOLAUNCH=1 CUDA_VISIBLE_DEVICES=0,1 {LAUNCH}", "Enter")
        assert wait_for(lambda: launched(b))
        yield a, b, sock
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def test_actions_on_a_dead_run_never_reach_the_live_run_beside_it(two_runs):
    a, b, sock = two_runs
    ctx_b = context(b, sock, launch_cmd=None)
    for name in ("resume", "stop", "restart"):
        p = plan(name, ctx_b)
        assert p.disabled, name
        assert "cannot prove which tmux pane" in p.disabled or "no live process" in p.disabled, p.disabled
    # A's own actions go to A's pane only, and A's resume is refused while it lives.
    ctx_a = context(a, sock)
    stop = plan("stop", ctx_a)
    assert stop.disabled is None and any("target: run-a:0.0" in n for n in stop.notes)
    assert "still running" in plan("resume", ctx_a).disabled
    time.sleep(0.3)
    assert received(a) == "" and len(launched(a)) == 1 and launched(b) == ["uv " + LAUNCH.removeprefix("uv ")]


def test_each_runs_process_pane_holds_its_own_processes_only(two_runs):
    from runtop.engine.snapshot import read_run
    from runtop.rules.health import judge
    from runtop.sources.processes import ProcessSampler

    a, b, sock = two_runs
    assert ProcessSampler(str(b), roles=process_roles()).sample().procs == [], "no tmux server, shell or process of A in B's pane"
    mine_a = ProcessSampler(str(a), roles=process_roles()).sample()
    assert {"launcher", "trainer", "orchestrator", "inference"} <= set(mine_a.roles())
    assert all("tmux" not in p.title and not p.title.startswith("bash") for p in mine_a.procs)
    # B died of its partial save's cause long ago: its processes are none, whatever A does.
    state = read_run(str(b))
    v = judge(state)
    assert state.processes == {} and v.verdict == "Down" and "no run process alive" in v.reasons[0], v.reasons


def test_tmux_target_names_the_pane_but_its_history_is_no_launch_command(two_runs):
    """B's launch is on its pane's screen, but a line there may be one the run printed: with
    no live launcher and no record, the plan asks for --launch-cmd; given, it goes to B only."""
    a, b, sock = two_runs
    ctx = context(b, sock, launch_cmd=None, target="run-b:Launcher.0")
    p = plan("resume", ctx)
    assert p.disabled and "no launch command: give --launch-cmd" in p.disabled, p.disabled
    ctx = context(b, sock, launch_cmd=f"NOLAUNCH=1 CUDA_VISIBLE_DEVICES=0,1 {LAUNCH}", target="run-b:Launcher.0")
    p = plan("resume", ctx)
    assert p.text == "NOLAUNCH=1 CUDA_VISIBLE_DEVICES=0,1 uv run rl @ configs/rl.toml --run.name reverse-text --resume.step 4"
    assert any("named with --tmux-target" in n and "run-b:0.0" in n for n in p.notes)
    dispatch(p, ctx, confirmation="4")
    assert wait_for(lambda: launched(b)[-1:] == ["uv run rl @ configs/rl.toml --run.name reverse-text --resume.step 4"])
    assert len(launched(a)) == 1 and received(a) == ""


def test_a_pane_running_a_program_is_not_typed_into(two_runs):
    a, b, sock = two_runs
    tmux(sock, "send-keys", "-t", "scratch:Launcher", "sleep 30", "Enter")
    assert wait_for(lambda: "sleep" in tmux(sock, "display", "-p", "-t", "scratch:Launcher", "#{pane_current_command}"))
    ctx = context(b, sock, target="scratch:Launcher.0")
    p = plan("resume", ctx)
    with pytest.raises(ActionError, match="running sleep, not a shell prompt"):
        dispatch(p, ctx, confirmation=p.confirm)
    assert [e["outcome"] for e in audit_lines(b)][-1].startswith("error")


def test_a_step_that_changes_between_plan_and_dispatch_sends_nothing(live_run):
    root, sock = live_run
    stop_run(root, sock)
    ctx = context(root, sock)
    p = plan("resume", ctx)
    assert p.confirm == "4"
    # A save completes while the modal is open: step 8 is now the last complete one.
    good = root / "checkpoints" / "step_8"
    os.makedirs(good / "trainer")
    (good / "trainer" / ".metadata").write_text("x")
    os.makedirs(good / "orchestrator")
    (good / "orchestrator" / "progress.pt").write_text("x")
    with pytest.raises(ActionError, match="now step 8, not the confirmed 4"):
        dispatch(p, ctx, confirmation="4")
    time.sleep(0.3)
    assert len(launched(root)) == 1


def test_the_launchers_argv_and_its_launch_variables_make_the_launch_command(tmp_path):
    """A real launcher started from a shell with `CUDA_VISIBLE_DEVICES=0,1` before it: the
    pane's history is gone (cleared), the argv and environment still say what ran."""
    from runtop.actions.launcher import launcher_argv
    from runtop.sources.tmux import Pane

    shell = subprocess.Popen(["bash", "-c", f"CUDA_VISIBLE_DEVICES=0,1 {sys.executable} -c 'import time; time.sleep(30)' --output-dir x; true"])
    try:
        assert wait_for(lambda: __import__("psutil").Process(shell.pid).children())
        child = __import__("psutil").Process(shell.pid).children()[0]
        argv = launcher_argv(Pane("s", "Launcher", "%0", shell.pid, "bash"), [child.pid])
        assert argv == ["CUDA_VISIBLE_DEVICES=0,1", sys.executable, "-c", "import time; time.sleep(30)", "--output-dir", "x"]
    finally:
        for c in __import__("psutil").Process(shell.pid).children():
            c.kill()
        shell.kill()
        shell.wait()


def test_restart_stops_waits_for_the_prompt_then_resumes(live_run):
    root, sock = live_run
    ctx = context(root, sock)
    p = plan("restart", ctx)
    assert p.disabled is None and p.confirm == "4" and p.text == f"C-c, then: {LAUNCH} --resume.step 4"
    seen: list[str] = []
    assert dispatch(p, ctx, confirmation="4", progress=seen.append) == "restart: done"
    assert wait_for(lambda: launched(root)[-1:] == [f"{LAUNCH} --resume.step 4"])
    assert "the run's processes are gone" in seen and received(root) == ""
