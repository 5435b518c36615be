"""`runtop check` exit codes, `status --append` (STATUS.md, concurrent writers), `watch --every`."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from runtop.outputs.checkin import append_checkin


def runtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=timeout)


def test_check_exit_codes(simulated, tmp_path):
    """0 Healthy or Finished, 1 Degraded, 2 Down, 3 cannot read, 4 Unknown."""
    r = runtop("check", simulated("healthy", max_steps=4))
    assert r.returncode == 0 and r.stdout.startswith("Finished:")
    empty = tmp_path / "booting"
    (empty / "logs" / "attempt_1").mkdir(parents=True)
    (empty / "logs" / "attempt_1" / "orchestrator.log").write_text("14:00:00    INFO Starting orchestrator (algorithm: grpo)\n")
    r = runtop("check", str(empty))
    assert r.returncode == 4 and r.stdout.startswith("Unknown:"), r.stdout
    r = runtop("check", simulated("rollouts-hung"))
    assert r.returncode == 1 and r.stdout.startswith("Degraded:") and "rollouts_hung" in r.stdout
    r = runtop("check", simulated("trainer-oom", max_steps=9))
    assert r.returncode == 2 and r.stdout.startswith("Down:") and "torch.OutOfMemoryError" in r.stdout
    r = runtop("check", str(tmp_path / "nope"))
    assert r.returncode == 3 and r.stderr.count("\n") == 2 and "\n  hint: " in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[health]\nnope = 1\n")
    r = runtop("check", simulated("healthy", max_steps=2), "--config", str(bad))
    assert r.returncode == 3 and "unknown key health.nope" in r.stderr


def test_check_json_is_the_status_document_with_every_finding(simulated):
    r = runtop("check", "--json", simulated("trainer-oom", max_steps=9))
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["health"]["verdict"] == "Down"
    crash = next(a for a in doc["alerts"] if a["rule"] == "crash")
    assert set(crash) == {"rule", "severity", "message", "evidence", "since", "down", "cause", "wrapper", "phase"}
    assert crash["severity"] == "critical" and crash["down"] and crash["cause"] == "torch.OutOfMemoryError"
    assert doc["health"]["cause"] == "torch.OutOfMemoryError"
    assert "steps" in doc and "checkpoints" in doc


def test_status_append_creates_then_appends_and_never_truncates(simulated):
    root = simulated("healthy", max_steps=5, stop_after=3)
    path = os.path.join(root, "STATUS.md")
    assert not os.path.exists(path)
    assert runtop("status", root, "--append").returncode == 0
    first = open(path).read()
    assert first.startswith("## ") and "**Health**: Healthy" in first and "| step |" in first
    with open(path, "a") as f:
        f.write("Hand-written note, keep me.")  # no trailing newline
    assert runtop("status", root, "--append").returncode == 0
    text = open(path).read()
    assert text.startswith(first) and "Hand-written note, keep me.\n\n## " in text
    assert text.count("**Health**") == 2


def _writer(path: str, tag: str, n: int) -> None:
    for i in range(n):
        body = "\n".join(f"{tag} entry {i} line {k} " + "x" * 200 for k in range(40))  # ~9 KB: over PIPE_BUF
        append_checkin(path, f"## {tag} {i}\n{body}\n")


def test_two_writers_never_interleave(tmp_path):
    path = str(tmp_path / "STATUS.md")
    with open(path, "w") as f:
        f.write("# Training Monitor Report\n")
    procs = [multiprocessing.Process(target=_writer, args=(path, tag, 30)) for tag in ("cron", "tui")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    text = open(path).read()
    assert text.startswith("# Training Monitor Report\n")
    entries = text.split("\n## ")[1:]
    assert len(entries) == 60
    for e in entries:
        head, *lines = [ln for ln in e.split("\n") if ln]
        tag, i = head.split()
        assert len(lines) == 40 and all(ln.startswith(f"{tag} entry {i} line ") for ln in lines)


def test_watch_appends_on_a_cadence(simulated):
    root = simulated("healthy", max_steps=3)
    r = runtop("watch", root, "--every", "1s", "--count", "2", "--interval", "0.2", timeout=60)
    assert r.returncode == 0, r.stderr
    assert open(os.path.join(root, "STATUS.md")).read().count("**Health**") == 2
    r = runtop("watch", root, "--every", "soon")
    assert r.returncode == 2 and "--every: 'soon' is not a duration" in r.stderr


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_watch_stopped_by_ctrl_c_or_systemd_ends_at_once_and_says_so(simulated, sig, code):
    """ctrl+c in its tmux window, or `systemctl --user stop`: the watch ends between two polls,
    with the signal's exit code, having handed on what it queued (SIGTERM used to skip that)."""
    root = simulated("healthy", max_steps=3)
    proc = subprocess.Popen([sys.executable, "-m", "runtop", "watch", root, "--interval", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    assert "watching" in proc.stdout.readline()
    proc.stdout.readline()  # the verdict: the loop is running
    proc.send_signal(sig)
    started = time.monotonic()
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == code, out
    assert time.monotonic() - started < 3, "ends between two polls, not after its 5 s interval"
    assert "Traceback" not in out


def _check_as_unprivileged(root: str) -> tuple[int, str]:
    """`runtop check root` as a user whom file permissions bind (root reads through them):
    in a forked child that drops to `nobody` when we are root, in-process otherwise."""
    import contextlib
    import io

    from runtop.cli import main as cli

    if os.geteuid() != 0:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = cli.main(["check", root])
        return code, buf.getvalue()
    import pwd

    nobody = pwd.getpwnam("nobody")
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["check", root])  # every lazy import done here: the child cannot read /root
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code, out = 70, ""
        try:
            os.close(rfd)
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = cli.main(["check", root])
            out = buf.getvalue()
        finally:
            os.write(wfd, f"{code}\n{out}".encode())
            os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        data = f.read()
    os.waitpid(pid, 0)
    code_text, _, out = data.partition("\n")
    return int(code_text), out


def test_an_unreadable_log_never_leaves_a_run_healthy():
    """`chmod 000` on trainer.log mid-run once left a dead run Healthy, the error only in
    a note. runtop names the file and the error, and says Degraded at best (exit 1)."""
    import shutil
    import tempfile

    from runtop.cli import main as cli
    from runtop.frameworks.primerl.sim import Simulator

    base = tempfile.mkdtemp(prefix="runtop-unreadable-", dir="/tmp")
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base, "run")
        Simulator(root, scenario="healthy", max_steps=8, stop_after=5).run()
        assert _check_as_unprivileged(root)[0] == 0  # readable: Healthy (and every import warm)
        trainer = os.path.join(root, "logs", "attempt_1", "trainer.log")
        os.chmod(trainer, 0)
        code, out = _check_as_unprivileged(root)
        first = out.splitlines()[0]
        assert code == 1 and first.startswith("Degraded:"), out
        assert "cannot read logs/attempt_1/trainer.log (trainer): Permission denied" in first
        assert cli.CHECK_EXIT["Degraded"] == 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_checkin_sent_as_an_action_writes_the_verdict_the_engine_judged(simulated):
    """The TUI's `s`, `runtop send checkin` and the MCP proposal write the verdict one engine
    judged with every probe's facts, not a second judgment of the state without them; with no
    verdict at hand nothing is appended."""
    from runtop.actions.dispatch import dispatch
    from runtop.actions.vetted import ActionError, Context, plan
    from runtop.engine.snapshot import read_and_judge
    from runtop.rules.health import Verdict

    root = simulated("healthy", max_steps=4)
    state, _ = read_and_judge(root, processes=False, disks=False, gpus=False)
    seen = Verdict("Degraded", ["vLLM is alive but holds no GPU memory (what only the GPU probe saw)"])
    ctx = Context.for_run(state, socket=f"runtop-none-{os.getpid()}", verdict=seen)
    dispatch(plan("checkin", ctx), ctx, confirmation=None)
    written = open(os.path.join(root, "STATUS.md")).read()
    assert "**Health**: Degraded" in written and "holds no GPU memory (what only the GPU probe saw)" in written

    blind = Context.for_run(state, socket=f"runtop-none-{os.getpid()}")
    with pytest.raises(ActionError, match="no verdict"):
        dispatch(plan("checkin", blind), blind, confirmation=None)
    assert open(os.path.join(root, "STATUS.md")).read() == written
