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

from runtop.actions.dispatch import dispatch
from runtop.actions.vetted import ActionError, Context, check_command, plan, plans
from runtop.engine.snapshot import read_run
from runtop.frameworks import process_roles
from runtop.frameworks.primerl.sim import Simulator
from runtop.sources.processes import run_processes
from runtop.sources.tmux import Tmux
from tests.paths import TESTS

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
FAKE = os.path.join(str(TESTS), "fake_launcher.py")
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


def shell_rc(tmp_path) -> str:
    """A bash whose `uv` is the fake launcher: `uv run rl …` typed at its prompt is recorded
    in `launched.txt` (in the cwd) and starts the fake titled tree in the foreground, as
    `uv run rl` does. With NOLAUNCH set it only records."""
    rc = tmp_path / "bashrc"
    if rc.exists():
        return f"bash --noprofile --rcfile {rc} -i"  # never rewritten: a starting shell may be reading it
    rc.write_text(f"PS1='$ '\nuv() {{ echo \"uv $*\" >> launched.txt; [ -n \"$NOLAUNCH\" ] || {sys.executable} {FAKE}; }}\n")
    return f"bash --noprofile --rcfile {rc} -i"


def start_run(sock: str, session: str, root, tmp_path) -> None:
    tmux(sock, "new-session", "-d", "-s", session, "-n", "Launcher", "-x", "200", "-y", "50", "-c", str(root), shell_rc(tmp_path))
    tmux(sock, "new-window", "-d", "-t", session, "-n", "Logs")
    assert wait_for(lambda: "$" in tmux(sock, "capture-pane", "-p", "-t", f"{session}:Launcher")), "no prompt"
    tmux(sock, "send-keys", "-t", f"{session}:Launcher", LAUNCH, "Enter")
    assert wait_for(lambda: {"launcher", "trainer", "orchestrator", "inference"} <= set(run_processes(str(root), roles=process_roles()))), "fake tree did not start"


@pytest.fixture
def live_run(tmp_path):
    """A run whose step_6 save is partial (2 and 4 complete), and a tmux session `prime-rl`
    whose Launcher window is a shell where `uv run rl …` was typed (the fake launcher tree
    runs in the foreground, in the run dir), and a Logs window."""
    root = tmp_path / "outputs" / "reverse-text"
    Simulator(str(root), scenario="partial-checkpoint", max_steps=20).run()
    sock = f"runtop-test-{uuid.uuid4().hex[:8]}"
    try:
        start_run(sock, "prime-rl", root, tmp_path)
        yield root, sock
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def launched(root) -> list[str]:
    """Every launch command the Launcher's shell ran (the fixture's own first)."""
    path = os.path.join(root, "launched.txt")
    return open(path).read().splitlines() if os.path.exists(path) else []


def stop_run(root, sock: str) -> None:
    ctx = context(root, sock)
    dispatch(plan("stop", ctx), ctx, confirmation="stop")
    assert wait_for(lambda: "$" in tmux(sock, "capture-pane", "-p", "-t", "prime-rl:Launcher").rstrip().splitlines()[-1])


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


def test_resume_is_refused_while_the_run_lives(live_run):
    root, sock = live_run
    p = plan("resume", context(root, sock))
    assert p.disabled and "the run is still running" in p.disabled and "stop it first" in p.disabled
    # A plan made when the run was dead is refused at dispatch if it lives again.
    from runtop.actions.vetted import Plan, Step

    text = LAUNCH + " --resume.step 4"
    p = Plan("resume", "resume", text, [Step("keys", text)], confirm="4")
    ctx = context(root, sock)
    with pytest.raises(ActionError, match="not a shell prompt|still running"):
        dispatch(p, ctx, confirmation=p.confirm)
    assert received(root) == ""


def test_resume_sends_the_exact_text_naming_the_last_complete_checkpoint(live_run):
    root, sock = live_run
    stop_run(root, sock)
    ctx = context(root, sock)
    p = plan("resume", ctx)
    assert p.disabled is None and p.confirm == "4", p.disabled
    assert any("recorded in .runtop/launch.json" in n for n in p.notes) and any("prime-rl:0.0 (%0" in n for n in p.notes)
    assert p.text == "uv run rl @ configs/rl.toml --run.name reverse-text --resume.step 4"
    assert "step 6 is incomplete" in p.notes[0]  # why not 6: prime-rl's bare --resume would pick it
    with pytest.raises(ActionError, match="confirmation"):
        dispatch(p, ctx, confirmation="6")
    assert dispatch(p, ctx, confirmation="4") == "resume: done"
    assert wait_for(lambda: launched(root)[-1:] == [p.text])
    assert received(root) == "", "nothing was typed into a running launcher"
    entries = audit_lines(root)[1:]  # the first is the stop
    assert len(entries) == 1 and entries[0]["action"] == "resume" and entries[0]["text"] == p.text and entries[0]["outcome"] == "ok"
    assert entries[0]["pane"].startswith("prime-rl:Launcher %") and entries[0]["user"] and entries[0]["host"]
    # Written before the keys went, then completed with the outcome under the same id.
    assert [e["outcome"] for e in audit_lines(root, sending=True)][2:] == ["sending", "ok"]
    assert len({e["id"] for e in audit_lines(root, sending=True)[2:]}) == 1 and entries[0]["run"] == str(root)


def test_stop_sends_c_c_and_waits_for_the_tree_to_exit(live_run):
    root, sock = live_run
    ctx = context(root, sock)
    p = plan("stop", ctx)
    seen = []
    assert dispatch(p, ctx, confirmation="stop", progress=seen.append) == "stop: done"
    assert run_processes(str(root), roles=process_roles()) == {}
    assert seen[-1] == "the run's processes are gone"
    assert [e["outcome"] for e in audit_lines(root)] == ["ok"]


def test_headless_actions_and_send(live_run):
    root, sock = live_run
    r = subprocess.run([sys.executable, "-m", "runtop", "actions", str(root), "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "the run is still running" in r.stdout.split("\nstop ")[0]
    assert "target: prime-rl:0.0" in r.stdout.split("\nstop ")[1]
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "stop", str(root), "--yes", "--tmux-socket", sock], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: "$" in tmux(sock, "capture-pane", "-p", "-t", "prime-rl:Launcher").rstrip().splitlines()[-1])
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "add --yes" in r.stderr and len(launched(root)) == 1
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--yes", "--step", "6", "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--step 6 is not the last complete checkpoint" in r.stderr and len(launched(root)) == 1
    r = subprocess.run([sys.executable, "-m", "runtop", "send", "resume", str(root), "--yes", "--step", "4", "--tmux-socket", sock, "--launch-cmd", LAUNCH], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "sending resume (step 4) to prime-rl:0.0" in r.stderr
    assert wait_for(lambda: launched(root)[-1].endswith("--resume.step 4"))
    assert [e["action"] for e in audit_lines(root)] == ["stop", "resume"]


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
    assert received(root) == "" and audit_lines(root) == [] and run_processes(str(root), roles=process_roles())


def test_injection_never_reaches_the_pane(live_run):
    root, sock = live_run
    stop_run(root, sock)
    # A crafted checkpoint dir: not a step, so never named.
    os.makedirs(root / "checkpoints" / "step_9; touch PWNED" / "trainer")
    # A crafted run name, and crafted launch commands.
    ctx = context(root, sock, launch_cmd="uv run rl @ configs/rl.toml")
    ctx.state.run_name = "x; touch PWNED"
    assert "not a plain name" in plan("resume", ctx).disabled
    for bad in ("uv run rl; touch PWNED", "uv run rl $(touch PWNED)", "uv run rl `touch PWNED`", "uv run rl && touch PWNED", "uv run rl\ntouch PWNED"):
        p = plan("resume", context(root, sock, launch_cmd=bad))
        assert p.disabled and "runtop will not send" in p.disabled or "control characters" in (p.disabled or "")
    # The pane's screen is never read for a command (tests/live/test_trust.py): a run can print a prompt.
    with pytest.raises(ActionError):
        check_command("uv run rl @ x.toml; touch PWNED")
    for homoglyph in ("uv run rl @ c.toml --resume.step \u0669", "uv run rl\u00a0@ c.toml", "uv run rl @ c.toml\u0085", "uv run rl @ c.toml\u3000x"):
        with pytest.raises(ActionError):
            check_command(homoglyph)
    p = plan("resume", context(root, sock))
    assert p.text.endswith("--resume.step 4")
    time.sleep(0.5)
    assert received(root) == "" and len(launched(root)) == 1 and not os.path.exists(root / "PWNED")


def test_no_tmux_no_session_no_window_are_disabled_with_a_reason(live_run, monkeypatch):
    root, sock = live_run
    assert "no tmux session 'nope'" in plan("stop", context(root, sock, session="nope")).disabled
    # A dead run with nothing recorded: no pane is guessed, whatever window is called Launcher.
    stop_run(root, sock)
    os.unlink(root / ".runtop" / "launch.json")
    assert "cannot prove which tmux pane launched this run" in plan("resume", context(root, sock)).disabled
    assert "has no 'Driver' window" in plan("resume", context(root, sock, session="prime-rl", window="Driver")).disabled
    assert "no tmux server is running" in plan("stop", context(root, "runtop-test-absent")).disabled
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "tmux is not installed" in plan("stop", context(root, sock)).disabled


async def open_modal(pilot, key: str) -> None:
    """Press an action key and wait for its confirmation modal (planning runs in a worker)."""
    from runtop.tui.confirm_screen import ConfirmScreen

    await pilot.press(key)
    for _ in range(50):
        await pilot.pause(0.1)
        if isinstance(pilot.app.screen, ConfirmScreen):
            return


async def test_tui_resume_shows_the_text_cancel_first_then_typed_confirmation(live_run):
    from runtop.tui.confirm_screen import ConfirmScreen
    from tests.tui_helpers import make_app, settle

    root, sock = live_run
    stop_run(root, sock)
    app = make_app(str(root), fixed=False, processes=False, disks=False, interval=0.3)
    app.action_options = {"tmux": Tmux(sock), "launch_cmd": LAUNCH}
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await open_modal(pilot, "R")
        screen = app.screen
        assert isinstance(screen, ConfirmScreen) and screen.plan.text.endswith("--resume.step 4")
        assert app.focused.id == "token"  # the typed token goes to the input
        await pilot.press("enter")  # Enter with no token cancels
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmScreen) and len(launched(root)) == 1
        await open_modal(pilot, "R")
        await pilot.press("6", "enter")  # a wrong token cancels too
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmScreen) and len(launched(root)) == 1
        await open_modal(pilot, "R")
        await pilot.press("4", "enter")
        assert wait_for(lambda: launched(root)[-1].endswith("--resume.step 4"), 10)
        assert [e["action"] for e in audit_lines(root)] == ["stop", "resume"]


async def test_tui_read_only_has_no_action_keys(live_run):
    from runtop.tui.confirm_screen import ConfirmScreen
    from tests.screen_text import screen_text
    from tests.tui_helpers import make_app, settle

    root, sock = live_run
    app = make_app(str(root), fixed=False, processes=False, disks=False, interval=0.3)
    app.action_options = {"tmux": Tmux(sock), "launch_cmd": LAUNCH}
    app.read_only = True
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("R", "X", "T", "s")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "read-only: actions are off" in app.toasts
        app.action_act("resume")  # even called directly
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "Resume" not in screen_text(app).splitlines()[-1]
    assert received(root) == "" and audit_lines(root) == [] and not os.path.exists(root / "STATUS.md")


def test_launcher_pane_lines_reach_the_logs_tail(live_run):
    """Launcher-only messages (`Trainer failed with exit code 1`) are read from the pane."""
    from runtop.engine.engine import Engine
    from runtop.frameworks.discovery import discover

    root, sock = live_run
    t = Tmux(sock)
    pane = t.launcher_pane("Launcher", "prime-rl")
    mon = Engine(discover(str(root)), interval=0.2, processes=False, disks=False, vllm_url=None, launcher=lambda: t.capture(pane, 60))
    mon.step()
    tail = [ln for ln in mon.live.tail.lines() if ln.source == "launcher"]
    assert any("fake launcher ready" in ln.text for ln in tail)
    n = len(tail)
    mon.live.tail.add_screen("launcher", [*(ln.text for ln in tail), "Trainer failed with exit code 1"])
    new = [ln for ln in mon.live.tail.lines() if ln.source == "launcher"][n:]
    assert [(ln.text, ln.level) for ln in new] == [("Trainer failed with exit code 1", "ERROR")]
    mon.close()


def test_action_keys_are_defined_once_and_destructive_alone_decides_the_typed_token(monkeypatch):
    """The key bar, the help screen and the read-only guard come from the action
    registry; a destructive action always asks for a typed token, a harmless one never."""
    from types import SimpleNamespace

    from runtop.actions import vetted as actions
    from runtop.tui.keys import KEYS
    from runtop.tui.vetted import READ_ONLY_KEYS

    keys = [a.key for a in actions.REGISTRY]
    assert len(set(keys)) == len(keys) and READ_ONLY_KEYS == set(keys)
    assert set(keys) <= {k.key for k in KEYS}
    forgot = actions.ActionSpec("stop", "X", "stop", True, lambda ctx: actions.Plan("stop", "stop", "C-c"))
    chatty = actions.ActionSpec("open-logs", "O", "logs", False, lambda ctx: actions.Plan("open-logs", "logs", "select", confirm="yes"))
    monkeypatch.setitem(actions.BY_NAME, "stop", forgot)
    monkeypatch.setitem(actions.BY_NAME, "open-logs", chatty)
    ctx = SimpleNamespace(read_only=False)
    assert actions.plan("stop", ctx).confirm == "stop"  # type: ignore[arg-type]
    assert actions.plan("open-logs", ctx).confirm is None  # type: ignore[arg-type]
