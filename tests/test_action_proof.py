"""Issue 11's security list, on a real tmux server: each case sends nothing, or exactly
the vetted text once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from runtop.actions import ActionError, dispatch, plan
from tests.test_actions import LAUNCH, audit_lines, context, launched, live_run, received, stop_run, tmux, wait_for  # noqa: F401 - live_run is a fixture

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
