"""Every `runtop …` line in the README's code blocks is run for real, as a new user would type
it, and says what the README says it does (its exit code, the shape of its output).

Each command runs in a workspace of its own: `outputs/my-run` (a prime-rl run whose trainer
died of CUDA OOM) and `outputs/other-run` (a finished one) are simulated there, `tests/` leads
to this checkout's (the corpus paths the README names), and `runs.txt` names both runs. The
placeholders become things on this machine: an alert URL (ntfy's, Slack's) is a local `json://`
receiver (and `notify --test` is also run against a port nothing listens on), the heartbeat a
path of the receiver,
`$OUT` the run, a port a free one. Commands that keep running (`watch`, `export`, `serve`,
the TUI) are stopped once they have answered: the TUI in tmux on a private socket, `q`; the
others with ctrl+c (SIGINT). Lines that install (`pip install`) are left to test_readme.py,
which keeps them verbatim.

A README command with no expectation here fails `test_every_readme_command_has_an_expectation`:
a new line in the README is a new line here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtop.frameworks.primerl.sim import Simulator
from tests.alert_server import AlertServer
from tests.paths import REPO

ROOT = REPO
# A fence's `runtop …` lines (a systemd unit's ExecStart too), at the fence's own indentation:
# a TUI screen drawn in a fence (` runtop reverse-text…`) is a picture, not a command.
FENCE = re.compile(r"^( *)```")
COMMAND = re.compile(r"^(?:ExecStart=\S*/bin/)?runtop ")


def readme_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            fence = m.group(1) if fence is None else None
        elif fence is not None and line.startswith(fence) and COMMAND.match(line[len(fence):]):
            text = line[len(fence):]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            out.append(normalise(text))
        i += 1
    return out


def normalise(text: str) -> str:
    """The command as the shell runs it: its comment gone (a `#` after a space), spaces single,
    a trailing `&` dropped, a systemd unit's `%h/…/bin/runtop` made `runtop`."""
    text = re.sub(r"\s#\s.*$", "", text)
    text = re.sub(r"^ExecStart=\S*/bin/runtop ", "runtop ", text).replace("%h/", "")
    return " ".join(text.rstrip(" &").split())


@dataclass(frozen=True)
class Expect:
    code: int  # the exit code (for a command that keeps running: once stopped)
    says: str  # a regex that its output (stdout, then stderr) must match
    face: str = "once"  # once | until (stopped with ctrl+c once `says` appeared) | tui | http
    fresh: bool = False  # run where no run exists yet (the demo lines make them)
    check: Callable[[Path, AlertServer, str], None] | None = None  # what else must be true after


def _json_down(ws: Path, server: AlertServer, out: str) -> None:
    doc = json.loads(out)  # stdout, and nothing on stderr
    assert doc["framework"] == "prime-rl" and doc["health"]["verdict"] == "Down" and doc["alerts"][0]["rule"] == "crash"


def _appended(ws: Path, server: AlertServer, out: str) -> None:
    assert "## " in (ws / "outputs/my-run/STATUS.md").read_text()


def _paged(ws: Path, server: AlertServer, out: str) -> None:
    titles = [m["title"] for m in server.wait_for(1)]
    assert titles[0] == "runtop: my-run is Down", titles


def _delivered(ws: Path, server: AlertServer, out: str) -> None:
    assert server.wait_for(1)[0]["title"].startswith("runtop: test message")


def _heartbeat(ws: Path, server: AlertServer, out: str) -> None:
    beats = [p for p in server.paths() if p.startswith("/hb")]
    assert beats[0] == "/hb/start" and beats[-1] == "/hb/fail", beats


def _paged_with_heartbeat(ws: Path, server: AlertServer, out: str) -> None:
    _paged(ws, server, out)
    _heartbeat(ws, server, out)


def _paged_and_ran(ws: Path, server: AlertServer, out: str) -> None:
    _paged_with_heartbeat(ws, server, out)
    assert (ws / "notified.txt").read_text() == "runtop incident crash\n"


def _textfile(ws: Path, server: AlertServer, out: str) -> None:
    prom = (ws / "runtop.prom").read_text()
    assert 'runtop_verdict{run="my-run",verdict="Down"} 1.0' in prom and 'runtop_verdict{run="other-run",verdict="Finished"} 1.0' in prom


def _forensics(ws: Path, server: AlertServer, out: str) -> None:
    (folder,) = (ws / "outputs/my-run/.runtop/forensics").iterdir()
    assert (folder / "summary.txt").is_file()


def _kept(ws: Path, server: AlertServer, out: str) -> None:
    run = "my-run" if "my-run" in out else "other-run"
    r = subprocess.run([sys.executable, "-m", "runtop", "check", f"outputs/{run}"], cwd=ws, capture_output=True, text=True, timeout=60)
    assert r.stdout.startswith("Down: " if run == "my-run" else "Finished: "), r.stdout + r.stderr


TABLE = r"^verdict +run +framework.*\nDown +my-run +prime-rl .*\nFinished +other-run +prime-rl "
EXPECT: dict[str, Expect] = {
    "runtop demo --scenario trainer-oom --speed 1000 --duration 3 --headless --dir outputs/my-run":
        Expect(0, r"Down: trainer died: torch.OutOfMemoryError[\s\S]*the simulated run is kept in outputs/my-run", fresh=True, check=_kept),
    "runtop demo --speed 1000 --duration 3 --headless --dir outputs/other-run":
        Expect(0, r"step 20/20 \| Finished[\s\S]*the simulated run is kept in outputs/other-run", fresh=True, check=_kept),
    "runtop check tests/corpus/primerl-main-enospc-during-save/run":
        Expect(2, r"^Down: run — trainer died: OSError during checkpoint save \(step 6\) \(\[Errno 28\] No space left on device\)"),
    "runtop outputs/my-run": Expect(0, r"Down +trainer died: torch\.OutOfMemoryError", face="tui"),
    "runtop status outputs/my-run": Expect(0, r"^## \d{4}-\d\d-\d\d \d\d:\d\d UTC\n\n\*\*Step\*\*: trainer 2/9 · rollouts 3\n\*\*Health\*\*: Down — trainer died"),
    "runtop status --json outputs/my-run": Expect(0, r"^\{\n  \"runtop_version\": ", check=_json_down),
    "runtop status outputs/my-run --append": Expect(0, r"runtop: appended a check-in \(Down\) to \S+/outputs/my-run/STATUS\.md", check=_appended),
    "runtop status tests/corpus/holdout/skyrl-newest-training-done/run/logs/gsm8k_small.log --ckpt-dir tests/corpus/holdout/skyrl-newest-training-done/run/ckpts":
        Expect(0, r"\*\*Health\*\*: Finished — finished at step 6 .*last complete checkpoint: step 6"),
    # Each row at whatever width the table has drawn it: the cells between the run and its cause
    # (framework, step, ETA, last write, attempt; under 110 columns the last write alone) vary.
    "runtop outputs/": Expect(0, r"2 runs in outputs/ +· +1 Down +· +1 Finished[\s\S]*Down +my-run +(?:\S+ +){0,6}trainer died[\s\S]*Finished +other-run +(?:\S+ +){0,6}finished at step 3", face="tui"),
    "runtop check --all outputs/": Expect(2, r"^Down: my-run — trainer died: torch\.OutOfMemoryError.*\nFinished: other-run — finished at step 3"),
    # The URL to open, with this start's token; the page it opens (the page without it: 401).
    "runtop serve outputs/my-run": Expect(0, r"^runtop: serving outputs/my-run \(read-only\) on http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}\n"
                                             r"[\s\S]*runtop my-run", face="http"),
    "runtop check outputs/my-run": Expect(2, r"^Down: my-run \(reverse-text--qwen3-0\.6b--sim\) — trainer died.*\ndown +crash +since "),
    "runtop status --all outputs/": Expect(0, TABLE),
    "runtop check --json outputs/my-run": Expect(2, r"^\{\n  \"runtop_version\": ", check=_json_down),
    "runtop watch outputs/my-run --every 1h": Expect(130, r"appended a check-in \(Down\) to \S+/outputs/my-run/STATUS\.md", face="until", check=_appended),
    "runtop notify --test ntfys://my-runs-topic": Expect(0, r"^json://127\.0\.0\.1:\d+/alerts\S*: delivered\n", check=_delivered),
    "runtop watch outputs/my-run --notify ntfys://my-runs-topic": Expect(130, r"alert \(incident\): runtop: my-run is Down", face="until", check=_paged),
    "runtop watch outputs/my-run --notify slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#runs --heartbeat https://hc-ping.com/<uuid> "
    "--on-alert \"notify-send runtop\" --every 1h":
        Expect(130, r"watching \S+/outputs/my-run: alerts to json://127\.0\.0\.1:\d+/alerts\S*; heartbeat http://…; on alert: notify-send runtop\n"
                    r"[\s\S]*alert \(incident\): runtop: my-run is Down", face="until", check=_paged_and_ran),
    "runtop watch \"$OUT\" --notify slack://… --heartbeat https://hc-ping.com/<uuid>":
        Expect(130, r"alert \(incident\): runtop: my-run is Down", face="until", check=_paged_with_heartbeat),
    "runtop watch outputs/my-run --notify ntfys://my-runs-topic --heartbeat https://hc-ping.com/<uuid>":
        Expect(130, r"alert \(incident\): runtop: my-run is Down", face="until", check=_paged_with_heartbeat),
    "runtop tui --runs runs.txt": Expect(0, TABLE),
    "runtop outputs/my-run outputs/other-run": Expect(0, TABLE),
    "runtop status outputs/": Expect(0, TABLE),
    "runtop compare outputs/my-run outputs/other-run": Expect(0, r"^metric +my-run +other-run\nstep +2 +3\nreward +\d\.\d+ [↑↓→] +\d\.\d+ [↑↓→]\n"),
    # At 80 columns (the pane under pytest-xdist) the last write stays and reward alone fits; wider, the rest.
    "runtop outputs/ --columns reward,entropy,step_time": Expect(0, r"reward +(?:entropy +)?[\s\S]*Down +my-run .* \d\.\d{4} ", face="tui"),
    "runtop watch outputs/ --notify ntfys://my-runs-topic": Expect(130, r"my-run: alert \(incident\): runtop: my-run is Down", face="until", check=_paged),
    "runtop export outputs/ --port 9464": Expect(130, r"serving 2 run\(s\) on http://127\.0\.0\.1:\d+/metrics: my-run, other-run", face="until"),
    "runtop export outputs/ --textfile runtop.prom --once": Expect(0, r"^$", check=_textfile),
    "runtop forensics outputs/my-run": Expect(0, r"^forensics \(Down\): ", check=_forensics),
    "runtop actions outputs/my-run --launch-cmd \"uv run rl @ configs/rl.toml --run.name my-run\"":
        Expect(0, r"^resume +\[R\] resume from the last complete checkpoint\n[\s\S]*would send: uv run rl @ configs/rl\.toml --run\.name my-run --resume\.step 2\n"),
    "runtop send resume outputs/my-run --yes": Expect(2, r"runtop: resume is disabled: "),
}
COMMANDS = readme_commands()
UNREACHABLE = "json://127.0.0.1:9/nowhere"  # the discard port: nothing listens there


def test_every_readme_command_has_an_expectation():
    assert len(COMMANDS) >= 25
    missing = [c for c in COMMANDS if c not in EXPECT]
    assert not missing, f"README commands with no expectation in {__name__}: {missing}"
    stale = [c for c in EXPECT if c not in COMMANDS]
    assert not stale, f"expectations of commands the README no longer has: {stale}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def workspace(tmp_path: Path, fresh: bool) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tests").symlink_to(ROOT / "tests")
    if not fresh:
        Simulator(str(ws / "outputs/my-run"), scenario="trainer-oom", max_steps=9).run()
        Simulator(str(ws / "outputs/other-run"), scenario="healthy", max_steps=3).run()
        (ws / "runs.txt").write_text("# my runs\noutputs/my-run\noutputs/other-run\n")
    # `--on-alert "notify-send runtop"`: a desktop's notify-send, as a script that writes down
    # how runtop ran it (this machine may have no desktop).
    (ws / "bin").mkdir()
    (ws / "bin/notify-send").write_text(f'#!/bin/sh\necho "$* $RUNTOP_EVENT $RUNTOP_RULE" >> {shlex.quote(str(ws / "notified.txt"))}\n')
    (ws / "bin/notify-send").chmod(0o755)
    return ws


def argv_of(command: str, server: AlertServer, ws: Path) -> tuple[list[str], str | None]:
    """The command's argv with its placeholders made real, and the port it serves on (if any)."""
    argv = shlex.split(command.replace("$OUT", "outputs/my-run"))
    assert argv[0] == "runtop"
    real = {"ntfys://my-runs-topic": server.url(), "https://hc-ping.com/<uuid>": server.url("/hb", "http")}
    argv = [real.get(a, server.url() if a.startswith("slack://") else a) for a in argv[1:]]
    port = None
    if "--port" in argv:
        port = str(free_port())
        argv[argv.index("--port") + 1] = port
    elif argv[0] == "serve":
        port = str(free_port())
        argv += ["--port", port]
    return [sys.executable, "-m", "runtop", *argv], port


def environment(ws: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "RUNTOP_"))}
    env["HOME"] = str(ws)  # no config of this machine's user: the README's defaults
    env["PATH"] = f"{ws / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_once(argv: list[str], ws: Path) -> tuple[int, str]:
    r = subprocess.run(argv, cwd=ws, env=environment(ws), capture_output=True, text=True, timeout=90)
    return r.returncode, r.stdout + r.stderr


def run_until(argv: list[str], ws: Path, says: str, port: str | None) -> tuple[int, str]:
    """Start it, wait for `says` in its output (and for /metrics to answer, where it serves),
    then ctrl+c."""
    out_path = ws / "out.txt"
    ctrl_c_reaches_children()
    with open(out_path, "w") as out:
        proc = subprocess.Popen(argv, cwd=ws, env=environment(ws), stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not re.search(says, out_path.read_text()) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if port is not None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                metrics = resp.read().decode()
            assert 'runtop_up{run="my-run"} 1.0' in metrics and 'runtop_up{run="other-run"} 1.0' in metrics
    finally:
        code = interrupt(proc)
    return code, out_path.read_text()


def run_http(argv: list[str], ws: Path, port: str) -> tuple[int, str]:
    """`serve`: it prints the URL to open, with its token; that URL's page answers (the bare
    port refuses), then ctrl+c. What it printed, then the page."""
    err_path = ws / "err.txt"
    ctrl_c_reaches_children()
    with open(err_path, "w") as err:
        proc = subprocess.Popen(argv, cwd=ws, env=environment(ws), stdout=subprocess.DEVNULL, stderr=err)
    page = ""
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(rf"on (http://127\.0\.0\.1:{port}/\?token=\S+)", err_path.read_text())
            url = m.group(1) if m else None
            time.sleep(0.1)
        assert url is not None, err_path.read_text()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert refused.value.code == 401
        with urllib.request.urlopen(url, timeout=10) as resp:
            page = resp.read().decode()
    finally:
        code = interrupt(proc)
    return code, err_path.read_text() + page


def ctrl_c_reaches_children() -> None:
    """A shell that starts the suite in the background (`cmd &`) ignores SIGINT, and a child
    inherits an ignored signal: the faces below would never see the ctrl+c a user's terminal
    sends. The suite's own handler goes back in place, so its children start with the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def interrupt(proc: subprocess.Popen) -> int | None:
    """ctrl+c, as a user stops a long-running face; killed if it will not stop (None then),
    after its threads' stacks are printed (py-spy), so a face that hangs on ctrl+c says where."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if os.path.exists(spy):
            dump = subprocess.run([spy, "dump", "--pid", str(proc.pid)], capture_output=True, text=True, timeout=60, check=False)
            print(f"{proc.args} did not stop 30 s after ctrl+c; its stacks:\n{dump.stdout}{dump.stderr}")
        proc.kill()
        proc.wait()
        return None


def run_tui(argv: list[str], ws: Path, says: str) -> tuple[int, str]:
    """The TUI in a tmux pane of a private server: wait for `says` on the screen, press q, and
    read the exit code the shell wrote."""
    sock = f"rt-readme-{os.getpid()}-{time.monotonic_ns()}"
    rc = ws / "rc.txt"
    shell = f"cd {shlex.quote(str(ws))} && env HOME={shlex.quote(str(ws))} {shlex.join(argv)}; echo $? > {shlex.quote(str(rc))}; sleep 30"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "40", shell], check=True, env=environment(ws))
    screen = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not re.search(says, screen):
            time.sleep(0.3)
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout
        subprocess.run([*tmux, "send-keys", "q"], check=True)
        deadline = time.monotonic() + 30
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return int(rc.read_text()), screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def slow_if_it_waits(command: str) -> object:
    """The demo lines wait out their `--duration` (3 s each, more under load): `slow`, run by CI
    and by the README's test command, left out by `-m "not slow"`."""
    return pytest.param(command, marks=pytest.mark.slow) if command.startswith("runtop demo ") else command


@pytest.mark.parametrize("command", [slow_if_it_waits(c) for c in COMMANDS])
def test_the_readme_command_does_what_the_readme_says(tmp_path, command):
    expect = EXPECT.get(command)
    if expect is None:
        pytest.fail(f"no expectation for the README's {command!r}")
    if expect.face == "tui" and shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    ws = workspace(tmp_path, expect.fresh)
    server = AlertServer()
    try:
        argv, port = argv_of(command, server, ws)
        if expect.face == "until":
            code, out = run_until(argv, ws, expect.says, port)
        elif expect.face == "tui":
            code, out = run_tui(argv, ws, expect.says)
        elif expect.face == "http":
            assert port is not None
            code, out = run_http(argv, ws, port)
        else:
            code, out = run_once(argv, ws)
        assert re.search(expect.says, out, re.M), f"{command}\n{out}"
        assert code == expect.code, f"{command}: exit {code}\n{out}"
        if expect.check is not None:
            expect.check(ws, server, out)
    finally:
        server.close()


def test_runtop_notify_test_says_when_a_message_did_not_arrive(tmp_path):
    """The README: `runtop notify --test …` exits 1 if the message does not arrive."""
    (command,) = [c for c in COMMANDS if c.startswith("runtop notify --test ")]
    ws = workspace(tmp_path, fresh=True)
    argv = [a.replace("ntfys://my-runs-topic", UNREACHABLE) for a in shlex.split(command)][1:]
    code, out = run_once([sys.executable, "-m", "runtop", *argv], ws)
    assert code == 1 and out.startswith("json://127.0.0.1:9/nowhere") and ": NOT delivered: " in out, out
