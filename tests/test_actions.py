"""Vetted actions against a real tmux server on a private socket, with a fake launcher tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from runtop.actions import ActionError, Context, check_command, dispatch, launch_from_pane, plan, plans
from runtop.simulator.primerl import Simulator
from runtop.snapshot import read_run
from runtop.sources.processes import run_processes
from runtop.sources.tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
FAKE = os.path.join(os.path.dirname(__file__), "fake_launcher.py")
LAUNCH = "uv run rl @ configs/rl.toml --run.name reverse-text"


def tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *args], capture_output=True, text=True, check=True).stdout


def wait_for(pred, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(0.1)


@pytest.fixture
def live_run(tmp_path):
    """A run whose step_6 save is partial (2 and 4 complete), and a tmux session `prime-rl`
    with a Launcher window running the fake launcher in the run dir, and a Logs window."""
    root = tmp_path / "outputs" / "reverse-text"
    Simulator(str(root), scenario="partial-checkpoint", max_steps=20).run()
    sock = f"runtop-test-{uuid.uuid4().hex[:8]}"
    tmux(sock, "new-session", "-d", "-s", "prime-rl", "-n", "Launcher", "-x", "200", "-y", "50", "-c", str(root), f"{sys.executable} {FAKE}")
    tmux(sock, "new-window", "-d", "-t", "prime-rl", "-n", "Logs")
    try:
        assert wait_for(lambda: {"launcher", "trainer", "orchestrator", "inference"} <= set(run_processes(str(root)))), "fake tree did not start"
        yield root, sock
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def context(root, sock: str, **kw) -> Context:
    state = read_run(str(root))
    return Context(state=state, run_root=str(root), tmux=Tmux(sock), **{"launch_cmd": LAUNCH, **kw})


def received(root) -> str:
    path = os.path.join(root, "received.txt")
    return open(path).read() if os.path.exists(path) else ""


def audit_lines(root, *, sending: bool = False) -> list[dict]:
    """The audit log's completed entries (or, with `sending`, every line)."""
    path = os.path.join(root, ".runtop", "audit.log")
    lines = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
    return lines if sending else [e for e in lines if e["outcome"] != "sending"]


def test_resume_sends_the_exact_text_naming_the_last_complete_checkpoint(live_run):
    root, sock = live_run
    ctx = context(root, sock)
    p = plan("resume", ctx)
    assert p.disabled is None and p.confirm == "4"
    assert p.text == "uv run rl @ configs/rl.toml --run.name reverse-text --resume.step 4"
    assert "step 6 is incomplete" in p.notes[0]  # why not 6: prime-rl's bare --resume would pick it
    with pytest.raises(ActionError, match="confirmation"):
        dispatch(p, ctx, confirmation="6")
    assert dispatch(p, ctx, confirmation="4") == "resume: done"
    assert wait_for(lambda: received(root) == p.text + "\n")
    entries = audit_lines(root)
    assert len(entries) == 1 and entries[0]["action"] == "resume" and entries[0]["text"] == p.text and entries[0]["outcome"] == "ok"
    assert entries[0]["pane"].startswith("prime-rl:Launcher %") and entries[0]["user"] and entries[0]["host"]
    # Written before the keys went, then completed with the outcome under the same id.
    assert [e["outcome"] for e in audit_lines(root, sending=True)] == ["sending", "ok"]
    assert len({e["id"] for e in audit_lines(root, sending=True)}) == 1 and entries[0]["run"] == str(root)


def test_stop_sends_c_c_and_waits_for_the_tree_to_exit(live_run):
    root, sock = live_run
    ctx = context(root, sock)
    p = plan("stop", ctx)
    seen = []
    assert dispatch(p, ctx, confirmation="stop", progress=seen.append) == "stop: done"
    assert run_processes(str(root)) == {}
    assert seen[-1] == "the run's processes are gone"
    assert [e["outcome"] for e in audit_lines(root)] == ["ok"]


def test_headless_actions_and_send(live_run):
    root, sock = live_run
    r = subprocess.run([sys.executable, "-m", "runtop", "actions", str(root), "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--resume.step 4" in r.stdout and "disabled" not in r.stdout.split("checkin")[0]
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "add --yes" in r.stderr and received(root) == ""
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--yes", "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: "--resume.step 4" in received(root))
    assert len(audit_lines(root)) == 1


def test_read_only_blocks_every_path(live_run):
    root, sock = live_run
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--yes", "--read-only", "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 4 and "read-only" in r.stderr
    cfg = root / "ro.toml"
    cfg.write_text("[actions]\nread_only = true\n")
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "stop", str(root), "--yes", "--config", str(cfg), "--tmux-socket", sock], capture_output=True, text=True, timeout=60)
    assert r.returncode == 4
    ctx = context(root, sock)
    p = plan("resume", ctx)
    ctx.read_only = True  # a plan made before read-only was switched on still cannot go out
    with pytest.raises(ActionError, match="read-only"):
        dispatch(p, ctx, confirmation=p.confirm)
    assert plans(ctx) == []
    time.sleep(0.5)
    assert received(root) == "" and audit_lines(root) == [] and run_processes(str(root))


def test_injection_never_reaches_the_pane(live_run):
    root, sock = live_run
    # A crafted checkpoint dir: not a step, so never named.
    os.makedirs(root / "checkpoints" / "step_9; touch PWNED" / "trainer")
    # A crafted run name, and crafted launch commands.
    ctx = context(root, sock, launch_cmd="uv run rl @ configs/rl.toml")
    ctx.state.run_name = "x; touch PWNED"
    assert "not a plain name" in plan("resume", ctx).disabled
    for bad in ("uv run rl; touch PWNED", "uv run rl $(touch PWNED)", "uv run rl `touch PWNED`", "uv run rl && touch PWNED", "uv run rl\ntouch PWNED"):
        p = plan("resume", context(root, sock, launch_cmd=bad))
        assert p.disabled and "runtop will not send" in p.disabled or "control characters" in (p.disabled or "")
    # The Launcher pane's history: a typed command is found; a log line that looks like one is refused.
    assert launch_from_pane(["ubuntu@h100:~/prime-rl$ uv run rl @ configs/rl.toml --run.name x", "14:00:01 INFO Starting"]) == "uv run rl @ configs/rl.toml --run.name x"
    # Output lines are never commands (issue 11), whatever they say.
    assert launch_from_pane(["14:00:01 INFO uv run rl @ x.toml; touch PWNED"]) is None
    assert launch_from_pane(["[info] next: bash evil.sh", "user@h:~$ echo waiting for rl trainer to finish"]) is None
    assert launch_from_pane(["user@h:~$ CUDA_VISIBLE_DEVICES=0,1 uv run rl @ c.toml"]) == "CUDA_VISIBLE_DEVICES=0,1 uv run rl @ c.toml"
    with pytest.raises(ActionError):
        check_command("uv run rl @ x.toml; touch PWNED")
    for homoglyph in ("uv run rl @ c.toml --resume.step \u0669", "uv run rl\u00a0@ c.toml", "uv run rl @ c.toml\u0085", "uv run rl @ c.toml\u3000x"):
        with pytest.raises(ActionError):
            check_command(homoglyph)
    p = plan("resume", context(root, sock))
    assert p.text.endswith("--resume.step 4")
    time.sleep(0.5)
    assert received(root) == "" and not os.path.exists(root / "PWNED")


def test_no_tmux_no_session_no_window_are_disabled_with_a_reason(live_run, monkeypatch):
    root, sock = live_run
    assert "no tmux session 'nope'" in plan("stop", context(root, sock, session="nope")).disabled
    assert "has no 'Driver' window" in plan("stop", context(root, sock, window="Driver")).disabled
    assert "no tmux server is running" in plan("stop", context(root, "runtop-test-absent")).disabled
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "tmux is not installed" in plan("stop", context(root, sock)).disabled


async def test_tui_resume_shows_the_text_cancel_first_then_typed_confirmation(live_run):
    from runtop.tui.confirm_screen import ConfirmScreen
    from tests.tui_helpers import make_app, settle

    root, sock = live_run
    app = make_app(str(root), fixed=False, processes=False, disks=False, interval=0.3)
    app.action_options = {"tmux": Tmux(sock), "launch_cmd": LAUNCH}
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        for _ in range(50):
            await pilot.pause(0.1)
            if isinstance(app.screen, ConfirmScreen):
                break
        screen = app.screen
        assert isinstance(screen, ConfirmScreen) and screen.plan.text.endswith("--resume.step 4")
        assert app.focused.id == "cancel"
        await pilot.press("enter")  # Enter on the open modal is Cancel
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmScreen) and received(root) == ""
        await pilot.press("R")
        for _ in range(50):
            await pilot.pause(0.1)
            if isinstance(app.screen, ConfirmScreen):
                break
        app.screen.query_one("#token").focus()
        await pilot.press("4", "enter")
        assert wait_for(lambda: received(root).strip().endswith("--resume.step 4"), 10)
        assert [e["action"] for e in audit_lines(root)] == ["resume"]


async def test_tui_read_only_has_no_action_keys(live_run):
    from runtop.tui.confirm_screen import ConfirmScreen
    from tests.tui_helpers import make_app, settle
    from tests.screen_text import screen_text

    root, sock = live_run
    app = make_app(str(root), fixed=False, processes=False, disks=False, interval=0.3)
    app.action_options = {"tmux": Tmux(sock), "launch_cmd": LAUNCH}
    app.read_only = True
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("R", "X", "T", "s")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        app.action_act("resume")  # even called directly
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "Resume" not in screen_text(app).splitlines()[-1]
    assert received(root) == "" and audit_lines(root) == [] and not os.path.exists(root / "STATUS.md")


def test_launcher_pane_lines_reach_the_logs_tail(live_run):
    """Launcher-only messages (`Trainer failed with exit code 1`) are read from the pane."""
    from runtop.discovery import discover
    from runtop.tui.monitor import Monitor

    root, sock = live_run
    t = Tmux(sock)
    pane = t.launcher_pane("Launcher", "prime-rl")
    mon = Monitor(discover(str(root)), interval=0.2, processes=False, disks=False, vllm_url=None, launcher=lambda: t.capture(pane, 60))
    mon.step()
    tail = [ln for ln in mon.state.log_tail if ln.source == "launcher"]
    assert any("fake launcher ready" in ln.text for ln in tail)
    n = len(tail)
    mon._add_launcher_lines([*(ln.text for ln in tail), "Trainer failed with exit code 1"])
    new = [ln for ln in mon.state.log_tail if ln.source == "launcher"][n:]
    assert [(ln.text, ln.level) for ln in new] == [("Trainer failed with exit code 1", "ERROR")]
    mon.close()
