"""Files that are not what they are named: a FIFO, a directory or `/dev/zero` where a log should
be, a 3 GB line, a directory 1000 levels deep, names with newlines, an exception that says
`@everyone`. None of them hangs a command, takes memory without bound, forges a line of output
or pages a whole chat server; each is said, naming the path and what it is.

Every command runs as the user runs it (a child process, a real tmux pane, a real local
receiver of notifications) against a real FIFO that no writer ever opens.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from runtop.frameworks.primerl.sim import Simulator
from tests.alert_server import AlertServer

PY = sys.executable
TRAINER = os.path.join("logs", "attempt_1", "trainer.log")
FIFO_SAID = "unreadable: logs/attempt_1/trainer.log (trainer) is a FIFO, not a regular file"


def runtop(*args: str, timeout: float = 60, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """`runtop ARGS` as a child; a hang fails the test at `timeout` instead of hanging it."""
    return subprocess.run([PY, "-m", "runtop", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, HOME=cwd or os.environ.get("HOME", "/tmp")))


def make_run(root: str, **kw: object) -> str:
    Simulator(root, scenario=str(kw.pop("scenario", "healthy")), **kw).run()  # type: ignore[arg-type]
    return root


def replace_with(path: str, what: str) -> None:
    """Put a FIFO, a directory or a link to /dev/zero where the file `path` was."""
    os.remove(path)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "dir":
        os.mkdir(path)
    else:
        os.symlink("/dev/zero", path)


@pytest.fixture
def fifo_run(tmp_path):
    """A finished run whose trainer.log is now a FIFO no one writes: opening it blocks for ever."""
    root = make_run(str(tmp_path / "fifo-run"), max_steps=8)
    replace_with(os.path.join(root, TRAINER), "fifo")
    return root


# ---- a FIFO named like a log ------------------------------------------------------------
def test_status_and_check_on_a_fifo_end_at_once_and_say_what_it_is(fifo_run):
    """The run finished, but runtop cannot vouch for a log it cannot read: Degraded, never
    Finished, and the FIFO named (before: `status` and `check` blocked in open() for ever)."""
    t0 = time.monotonic()
    status = runtop("status", fifo_run, timeout=30)
    check = runtop("check", fifo_run, timeout=30)
    assert time.monotonic() - t0 < 30
    assert status.returncode == 0 and "**Health**: Degraded — " + FIFO_SAID in status.stdout, status.stdout + status.stderr
    assert check.returncode == 1, check.stdout + check.stderr
    first = check.stdout.splitlines()[0]
    assert first.startswith("Degraded: fifo-run") and FIFO_SAID in first
    assert any(ln.startswith("warning  unreadable") and "is a FIFO" in ln for ln in check.stdout.splitlines())


def test_check_all_reads_the_other_runs_and_names_the_fifo(tmp_path):
    fleet = tmp_path / "runs"
    make_run(str(fleet / "fine"), max_steps=8)
    bad = make_run(str(fleet / "piped"), max_steps=8)
    replace_with(os.path.join(bad, TRAINER), "fifo")
    r = runtop("check", "--all", str(fleet), timeout=60)
    lines = r.stdout.splitlines()
    assert r.returncode == 1, r.stdout + r.stderr
    assert lines[0].startswith("Degraded: piped — " + FIFO_SAID), lines
    assert lines[1].startswith("Finished: fine — finished at step 8"), lines


def test_watch_with_a_fifo_ends_at_its_duration_and_says_it(fifo_run):
    t0 = time.monotonic()
    r = runtop("watch", fifo_run, "--duration", "3", "--interval", "0.5", timeout=40)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert took < 30, f"watch --duration 3 took {took:.0f} s"
    assert f"Degraded: {FIFO_SAID}" in r.stdout, r.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_export_with_a_fifo_answers_its_scrapes_and_ends(fifo_run):
    port = free_port()
    proc = subprocess.Popen([PY, "-m", "runtop", "export", fifo_run, "--port", str(port), "--duration", "6", "--interval", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        scraped, deadline = "", time.monotonic() + 30
        while time.monotonic() < deadline and "runtop_up" not in scraped:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                    scraped = resp.read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'runtop_finding{rule="unreadable",run="fifo-run",severity="warning"} 1.0' in scraped, scraped
        assert 'runtop_verdict{run="fifo-run",verdict="Degraded"} 1.0' in scraped
        assert proc.wait(timeout=40) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_the_tui_on_a_fifo_shows_it_and_q_quits(fifo_run, tmp_path):
    sock = f"rt-fifo-{os.getpid()}-{time.monotonic_ns()}"
    rc = tmp_path / "rc.txt"
    shell = f"env HOME={shlex.quote(str(tmp_path))} {shlex.quote(PY)} -m runtop tui {shlex.quote(fifo_run)}; echo $? > {shlex.quote(str(rc))}; sleep 30"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "45", shell], check=True)
    try:
        screen, deadline = "", time.monotonic() + 60
        while time.monotonic() < deadline and "is a FIFO" not in screen:
            time.sleep(0.3)
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout
        assert "Degraded" in screen and "unreadable: logs/attempt_1/trainer.log" in screen and "is a FIFO" in screen, screen
        subprocess.run([*tmux, "send-keys", "q"], check=True)
        deadline = time.monotonic() + 15
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rc.exists(), "q did not quit the TUI within 15 s"
        assert rc.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


@pytest.mark.parametrize("what, said", [("dir", "is a directory"), ("zero", "is a character device (a link to /dev/zero)")])
def test_a_directory_or_dev_zero_at_a_role_log_blocks_healthy(tmp_path, what, said):
    """Skipped before, it hid the role's death: a run whose trainer is gone read Finished."""
    root = make_run(str(tmp_path / "run"), max_steps=8)
    replace_with(os.path.join(root, TRAINER), what)
    r = runtop("check", root, timeout=30)
    assert r.returncode == 1, r.stdout + r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("Degraded: run (") and f" — unreadable: logs/attempt_1/trainer.log (trainer) {said}, not a regular file" in first, first


def test_a_command_stuck_in_a_read_is_ended_by_its_watchdog(tmp_path):
    """Where a read cannot be bounded (a file on a hung NFS server), the command's own end still
    comes: a child blocked for ever opening a FIFO is ended by its watchdog with one line."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    code = (
        "from runtop.sources.deadline import Watchdog\n"
        "Watchdog(1.0, 'watch: still running past --duration; stopped', 3)\n"
        f"open({str(fifo)!r}).read()\n"
    )
    t0 = time.monotonic()
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and r.stderr == "runtop: watch: still running past --duration; stopped\n"
    assert time.monotonic() - t0 < 10


# ---- bounded children and trees ------------------------------------------------------------
BACKFILL_RSS = """
import json, resource, sys, time
from runtop.frameworks.discovery import discover
from runtop.engine.live import LiveRun
live = LiveRun(discover(sys.argv[1]), poll=True)
deadline = time.monotonic() + 240
while live.backfill_progress() < 1.0 and time.monotonic() < deadline:
    live.step()
    time.sleep(0.05)
live.step()
errors = [e.message for e in live.state.errors]
live.close()
print(json.dumps({"done": live.backfill_progress() >= 1.0, "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
                  "errors": errors}))
"""


def test_a_sparse_3gb_line_is_backfilled_with_a_bounded_grep_child(tmp_path):
    """`truncate -s 3G`: one line of NULs, no disk used. The grep child of the backfill held the
    whole line (5 GB RSS); its memory is capped now, and the line after it is still read."""
    root = make_run(str(tmp_path / "run"), max_steps=8)
    inference = os.path.join(root, "logs", "attempt_1", "inference.log")
    with open(inference, "ab") as f:
        f.truncate(os.path.getsize(inference) + (3 << 30))
    with open(inference, "ab") as f:
        f.write(b"\n(APIServer pid=7) ERROR 08-21 14:20:00 [engine.py:1] after the long line\n")
    assert os.stat(inference).st_blocks * 512 < 64 << 20  # sparse: the test takes no disk
    r = subprocess.run([PY, "-c", BACKFILL_RSS, root], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["done"] and "after the long line" in got["errors"], got
    assert 0 < got["child_rss_mb"] < 400, f"the grep child peaked at {got['child_rss_mb']} MB"


def chain(base: str, depth: int, make: bool) -> None:
    """Make (or remove) `base/d/d/…/d`, `depth` levels, by relative steps: the whole path is
    longer than PATH_MAX, and Python's own rmtree recurses (pytest's clean-up of it would too)."""
    fds = [os.open(base, os.O_RDONLY)]
    try:
        for _ in range(depth):
            if make:
                os.mkdir("d", dir_fd=fds[-1])
            try:
                fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        while not make and len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


def test_a_directory_1000_levels_deep_in_a_checkpoint_is_listed_not_fatal(tmp_path):
    root = make_run(str(tmp_path / "run"), max_steps=8)
    d = os.path.join(root, "checkpoints", "step_8", "trainer")
    chain(d, 1000, make=True)
    try:
        r = runtop("check", root, timeout=60)
        assert r.returncode == 0 and "internal error" not in r.stderr, r.stdout + r.stderr
        assert "last complete checkpoint: step 8" in r.stdout
    finally:
        chain(d, 1000, make=False)


# ---- names that would forge a line ---------------------------------------------------------
FORGED = "evil\nHealthy   forged-row        prime-rl          8 of 8      0s  all good"


def test_a_newline_in_a_run_dirs_name_forges_no_row_of_status_all(tmp_path):
    fleet = tmp_path / "runs"
    make_run(str(fleet / "fine"), max_steps=8)
    make_run(str(fleet / FORGED), max_steps=8)
    r = runtop("status", "--all", str(fleet), timeout=60)
    rows = r.stdout.splitlines()
    assert r.returncode == 0 and len(rows) == 3, r.stdout  # the header and two runs
    assert not any(row.startswith("Healthy") for row in rows)
    assert any(row.startswith("Finished  evil\\nHealthy") for row in rows), rows


def test_a_newline_in_a_log_name_forges_no_line_of_status_md(tmp_path):
    root = make_run(str(tmp_path / "run"), max_steps=8)
    env = os.path.join(root, "logs", "attempt_1", "envs", "train", "bad\nFinished: forged.log")
    os.mkfifo(env)  # unreadable: the finding names it, in STATUS.md too
    r = runtop("status", "--append", root, timeout=60)
    assert r.returncode == 0, r.stderr
    status = open(os.path.join(root, "STATUS.md"), encoding="utf-8").read()
    assert not any(line.startswith("Finished: forged") for line in status.splitlines())
    assert "unreadable: logs/attempt_1/envs/train/bad\\nFinished: forged.log (env server) is a FIFO" in status


def test_a_newline_in_a_run_name_stays_in_the_title_of_its_notification(tmp_path):
    server = AlertServer()
    try:
        root = make_run(str(tmp_path / "evil\nrun is Healthy"), max_steps=8)
        r = runtop("watch", root, "--notify", server.url(), "--duration", "2", "--interval", "0.5", timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        (msg,) = server.wait_for(1)
        assert msg["title"] == "runtop: evil\\nrun is Healthy finished"
        assert "\n" not in msg["title"] and "evil\\nrun is Healthy at " in msg["message"]
    finally:
        server.close()


def test_two_runs_named_alike_export_distinct_label_sets(tmp_path):
    a = make_run(str(tmp_path / "team-a" / "run"), max_steps=8)
    b = make_run(str(tmp_path / "team-b" / "run"), max_steps=8, scenario="trainer-oom")
    odd = make_run(str(tmp_path / "odd\nname"), max_steps=8)
    prom = tmp_path / "runtop.prom"
    r = runtop("export", a, b, odd, "--once", "--textfile", str(prom), timeout=120)
    assert r.returncode == 0, r.stderr
    text = prom.read_text()
    up = sorted(ln for ln in text.splitlines() if ln.startswith("runtop_up{"))
    assert up == ['runtop_up{run="odd\\\\nname"} 1.0', 'runtop_up{run="team-a/run"} 1.0', 'runtop_up{run="team-b/run"} 1.0'], up
    assert 'runtop_verdict{run="team-b/run",verdict="Down"} 1.0' in text
    assert 'runtop_verdict{run="team-a/run",verdict="Finished"} 1.0' in text


def test_an_exception_saying_everyone_pings_no_one(tmp_path):
    """A traceback quoting `@everyone` reached a Discord webhook as it was: every member paged."""
    root = make_run(str(tmp_path / "run"), max_steps=9, scenario="trainer-oom")
    trainer = os.path.join(root, TRAINER)
    text = open(trainer, encoding="utf-8").read()
    assert "CUDA out of memory." in text
    with open(trainer, "w", encoding="utf-8") as f:
        f.write(text.replace("CUDA out of memory.", "CUDA out of memory. @everyone <!channel> @here look"))
    server = AlertServer()
    try:
        r = runtop("watch", root, "--notify", server.url(), "--duration", "3", "--interval", "0.3", timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        (msg,) = server.wait_for(1)
        body = msg["message"]
        assert "out of memory. @\u200beveryone <\u200b!channel> @\u200bhere look" in body, body
        for mention in ("@everyone", "<!channel>", "@here"):
            assert mention not in body and mention not in msg["title"]
    finally:
        server.close()


# ---- many idle files ---------------------------------------------------------------------
def idle_env_logs(root: str, n: int) -> str:
    """`n` env logs last written an hour ago; the directory they are in."""
    envs = os.path.join(root, "logs", "attempt_1", "envs", "train")
    old = time.time() - 3600
    for i in range(n):
        path = os.path.join(envs, f"env_{i}.log")
        with open(path, "w", encoding="utf-8") as f:
            f.write("14:09:01    INFO env worker ready\n")
        os.utime(path, (old, old))
    return envs


def test_idle_env_logs_are_looked_at_in_turns_and_a_new_line_is_never_missed(tmp_path):
    """600 idle env logs are not all opened every poll (20k cost `watch` a third of a core), yet
    a crash written to one of them is read within one round of turns, and at once when the
    file watcher names the file."""
    from runtop.engine.reader import TURN, RunReader
    from runtop.frameworks.discovery import discover

    root = make_run(str(tmp_path / "run"), max_steps=8)
    envs = idle_env_logs(root, 600)
    reader = RunReader(discover(root))
    reader.poll(seen=set())
    for name, seen in (("env_7.log", False), ("env_401.log", True)):
        path = os.path.join(envs, name)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"14:20:02   ERROR {name} crashed: boom\n")
        polls = 0
        while not any(e.message == f"{name} crashed: boom" for e in reader.state.errors):
            assert polls <= -(-600 // TURN), f"{name} not read after {polls} polls"
            reader.poll(seen={path} if seen else set())
            polls += 1
        if seen:
            assert polls == 1


def test_a_live_run_with_many_idle_logs_reads_a_crash_in_one_of_them_at_once(tmp_path):
    from runtop.engine.live import LiveRun
    from runtop.frameworks.discovery import discover

    root = make_run(str(tmp_path / "run"), max_steps=8)
    envs = idle_env_logs(root, 600)
    live = LiveRun(discover(root), interval=0.2)
    try:
        assert live.waiter.mode == "watchfiles"
        live.step()
        time.sleep(0.5)  # the watcher is watching
        live.step()
        with open(os.path.join(envs, "env_599.log"), "a", encoding="utf-8") as f:
            f.write("14:20:02   ERROR env_599 crashed: boom\n")
        deadline = time.monotonic() + 5
        while not any(e.message == "env_599 crashed: boom" for e in live.state.errors):
            assert time.monotonic() < deadline, "the crash was not read within 5 s"
            live.wait(0.2)
            live.step()
    finally:
        live.close()
