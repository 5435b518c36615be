"""An AI agent babysitting a run asks `runtop mcp` over the SDK's own stdio client, and reads what
`runtop status --json` says: the same verdict, cause and step; each incident once when it begins
and once when it clears; a vetted plan it can only propose, never send (docs/mcp.md)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec

import pytest

from runtop.frameworks import process_roles
from runtop.frameworks.primerl.sim import Simulator
from tests.paths import TESTS

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

needs_sdk = pytest.mark.skipif(find_spec("mcp") is None, reason="the MCP SDK is not installed: pip install -e '.[test]' (the test extra has mcp)")
CORPUS = TESTS / "corpus"
TOOLS = {"list_runs", "run_status", "findings", "metrics", "logs", "checkpoints", "processes", "gpus", "disk", "forensics", "propose_action"}


@contextlib.asynccontextmanager
async def served(*argv: str):
    """`runtop mcp ARGV…` started by the SDK's stdio client, as an MCP client starts it."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "runtop", "mcp", "--interval", "0.5", *argv], env={**os.environ, "TZ": "UTC"})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session, tool: str, **args) -> dict:
    res = await session.call_tool(tool, args)
    text = res.content[0].text if res.content else ""
    assert not res.is_error, f"{tool}: {text}"
    return json.loads(text)


def status_json(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "runtop", "status", "--json", *argv], capture_output=True, text=True, check=True, env={**os.environ, "TZ": "UTC"})
    return json.loads(out.stdout)


def same_reading(got: dict, want: dict) -> None:
    assert got["health"]["verdict"] == want["health"]["verdict"]
    assert got["health"]["cause"] == want["health"]["cause"]
    assert got["health"]["reasons"][:1] == want["health"]["reasons"][:1]
    assert got["progress"]["step"] == want["progress"]["step"]
    assert got["last_complete_checkpoint"] == want["last_complete_checkpoint"]
    assert (got["next"] or {}).get("text") == (want["next"] or {}).get("text")


@needs_sdk
async def test_an_agent_reads_a_dead_run_as_status_json_does_with_every_tool(tmp_path):
    """The trainer died of CUDA OOM: every tool answers, and run_status names the same death,
    step and checkpoint as `runtop status --json`."""
    root = str(tmp_path / "oom-run")
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    want = status_json(root)
    async with served(root) as s:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        got = await call(s, "run_status")
        same_reading(got, want)
        assert got["health"]["verdict"] == "Down" and "OutOfMemoryError" in got["health"]["reasons"][0] and got["run"] == "oom-run"
        assert got["backfill"] == 1.0

        runs = (await call(s, "list_runs"))["runs"]
        assert [(r["run"], r["verdict"], r["step"]) for r in runs] == [("oom-run", "Down", want["progress"]["step"])]
        assert runs[0]["cause"] == want["health"]["reasons"][0]

        found = await call(s, "findings", since=0)
        crash = [e for e in found["events"] if e["incident"]["rule"] == "crash"]
        assert [e["event"] for e in crash] == ["begun"] and crash[0]["incident"]["down"]

        m = await call(s, "metrics", names=["reward", "loss"], last_n=2)
        rows = [r for r in want["steps"] if not r.get("superseded")][-2:]
        assert [(r["step"], r["reward"], r["loss"]) for r in m["steps"]] == [(r["step"], r["reward"], r["loss"]) for r in rows]
        assert set(m["trends"]) == {"reward", "loss"} and m["trends"]["reward"]["last"] == rows[-1]["reward"]
        bad = await s.call_tool("metrics", {"names": ["no_such_metric"]})
        assert not bad.is_error and "no_such_metric" in json.loads(bad.content[0].text)["unknown"]

        logs = await call(s, "logs", query="OutOfMemoryError", limit=5)
        assert logs["entries"] and any("OutOfMemoryError" in line for e in logs["entries"] for line in e["lines"])
        # The traceback whole, as the Logs pane's Enter shows it: not its first line alone.
        assert any(len(e["lines"]) > 3 and any(ln.startswith("Traceback") for ln in e["lines"]) for e in logs["entries"])

        ck = await call(s, "checkpoints")
        assert ck["last_complete_checkpoint"] == want["last_complete_checkpoint"] and ck["checkpoints"] == want["checkpoints"]
        procs = await call(s, "processes")
        assert procs["processes"] == {} and procs["error"] is None  # nothing of the run lives
        gpus = await call(s, "gpus")
        assert "gpus" in gpus and (gpus["gpus"] or gpus["error"])  # this machine's GPUs, or why NVML gave none
        disk = await call(s, "disk")
        assert any("output dir" in d["labels"] for d in disk["disks"])
        fx = await call(s, "forensics")
        assert fx["started"] and os.path.isdir(fx["folder"]) and fx["folder"].startswith(root)

        unknown = await s.call_tool("run_status", {"run": "elsewhere"})
        assert unknown.is_error and "no run 'elsewhere' here" in unknown.content[0].text and "Traceback" not in unknown.content[0].text

        resources = (await s.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["runtop://runs/oom-run/checkin"]
        md = (await s.read_resource(resources[0].uri)).contents[0].text
        assert md.startswith("## ") and "Down" in md and "OutOfMemoryError" in md
        prompt = await s.get_prompt("check_in", {"run": "oom-run"})
        text = prompt.messages[0].content.text
        assert "run_status" in text and "findings" in text and "propose_action" in text


@needs_sdk
async def test_a_corpus_case_reads_the_same_over_mcp_as_status_json(tmp_path):
    """A real shape (torchrun's SIGKILL with no Python traceback): the agent's verdict, cause and
    step are `runtop status --json`'s."""
    case = CORPUS / "primerl-main-torchrun-sigkill"
    exp = tomllib.loads((case / "expected.toml").read_text())
    run = tmp_path / "run"
    shutil.copytree(case / "run", run, symlinks=True)
    when = time.time() - float(exp.get("age_s", 0))
    for dirpath, _dirs, names in os.walk(run):
        for n in names:
            os.utime(os.path.join(dirpath, n), (when, when), follow_symlinks=False)
    want = status_json(str(run))
    async with served(str(run)) as s:
        got = await call(s, "run_status")
    same_reading(got, want)
    assert got["health"]["verdict"] == exp["verdict"] and got["health"]["cause"] == exp["cause"]


def step_line(step: int, grad_norm: float) -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M:%S')} INFO step {step}/100 | loss: 0.5{step % 10} | grad_norm: {grad_norm} | reward: 0.3{step % 10}\n"


async def wait_for_event(s, since: int, rule: str, event: str, timeout: float = 30.0) -> tuple[list[dict], int]:
    """Poll `findings` as an agent does, until `rule` has the `event`; every event seen meanwhile."""
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = await call(s, "findings", since=since)
        seen += got["events"]
        since = got["cursor"]
        if any(e["incident"]["rule"] == rule and e["event"] == event for e in seen):
            return seen, since
        await _sleep(0.3)
    raise AssertionError(f"no {event} {rule} within {timeout:g} s: {seen}")


async def _sleep(s: float) -> None:
    import asyncio

    await asyncio.sleep(s)


@needs_sdk
async def test_findings_says_a_new_incident_once_and_its_clearing_once(tmp_path):
    """A grad-norm spike lands while the agent polls with its cursor: it reads the spike once, and
    once more when a calm step clears it; polls in between say nothing new."""
    log = tmp_path / "run" / "train.log"
    log.parent.mkdir()
    log.write_text("".join(step_line(i, 1.0 + i / 100) for i in range(1, 9)))
    async with served(str(log.parent)) as s:
        first = await call(s, "findings", since=0)
        assert not any(e["incident"]["rule"] == "training_signal" for e in first["events"])
        with log.open("a") as f:
            f.write(step_line(9, 40.0))
        seen, cursor = await wait_for_event(s, first["cursor"], "training_signal", "begun")
        spike = [e for e in seen if e["incident"]["rule"] == "training_signal"]
        assert len(spike) == 1 and "grad norm spike: 40 at step 9" in spike[0]["incident"]["message"]
        assert spike[0]["cursor"] > first["cursor"]
        await _sleep(1.5)  # the engine steps on; the incident stays open and is not said again
        again = await call(s, "findings", since=cursor)
        assert not [e for e in again["events"] if e["incident"]["rule"] == "training_signal"]
        assert any(i["rule"] == "training_signal" for i in again["open"])
        with log.open("a") as f:
            f.write(step_line(10, 1.1))
        seen, cursor = await wait_for_event(s, again["cursor"], "training_signal", "cleared")
        assert [e["event"] for e in seen if e["incident"]["rule"] == "training_signal"] == ["cleared"]
        await _sleep(1.5)
        assert not [e for e in (await call(s, "findings", since=cursor))["events"] if e["incident"]["rule"] == "training_signal"]
        # From the start, the whole story: begun once, cleared once.
        story = [e["event"] for e in (await call(s, "findings", since=0))["events"] if e["incident"]["rule"] == "training_signal"]
        assert story == ["begun", "cleared"]
        status = await call(s, "run_status")
        assert status["progress"]["step"] == 10 and status["health"]["verdict"] == status_json(str(log.parent))["health"]["verdict"]


@needs_sdk
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
async def test_propose_action_gives_the_plan_and_types_nothing_into_the_launcher(live_run):
    """The run lives in its tmux Launcher pane: the agent gets the stop plan (C-c, its pane and
    why, the token) and how a person confirms it, and nothing reaches the pane; under
    --read-only the tool says actions are off."""
    from runtop.sources.processes import run_processes
    from tests.live.test_actions import LAUNCH, launched, received, tmux

    root, sock = live_run
    before = tmux(sock, "capture-pane", "-p", "-t", "prime-rl:Launcher")
    async with served(str(root), "--tmux-socket", sock, "--launch-cmd", LAUNCH) as s:
        stop = await call(s, "propose_action", action="stop")
        resume = await call(s, "propose_action", action="resume")
        bad = await s.call_tool("propose_action", {"action": "rm -rf"})
    assert stop["executed"] is False and stop["disabled"] is None and stop["text"] == "C-c" and stop["confirm"] == "stop"
    assert stop["target"].startswith("prime-rl:") and "started the run's processes" in stop["target_proof"]
    assert stop["confirm_with"]["command"].startswith(f"runtop send stop {root}") and stop["confirm_with"]["command"].endswith("--yes")
    assert "press X" in stop["confirm_with"]["tui"]
    assert "still running" in resume["disabled"] and resume["executed"] is False
    assert bad.is_error and "unknown action" in bad.content[0].text
    time.sleep(1.0)
    assert received(root) == "" and launched(root) == [LAUNCH]  # nothing typed, nothing launched again
    assert {"launcher", "trainer"} <= set(run_processes(str(root), roles=process_roles()))  # no C-c reached the run
    assert tmux(sock, "capture-pane", "-p", "-t", "prime-rl:Launcher") == before
    assert not os.path.exists(os.path.join(root, ".runtop", "audit.log"))  # nothing dispatched

    async with served(str(root), "--tmux-socket", sock, "--read-only") as s:
        off = await call(s, "propose_action", action="stop")
    assert off["actions"] == "off" and "read-only" in off["disabled"] and off["executed"] is False


def test_logs_are_whole_records_redacted_without_the_sdk(tmp_path):
    """The tools are plain functions over an engine's view: a traceback comes whole, and a key
    a shell trace printed is hidden, as in every other face."""
    from runtop.engine.engine import Engine
    from runtop.frameworks.discovery import discover
    from runtop.mcp.logs import logs
    from runtop.mcp.runs import Served
    from runtop.mcp.tools import gpus, run_status
    from runtop.sources.gpu import GpuProcess, GpuReading, GpuSnapshot

    log = tmp_path / "run" / "train.log"
    log.parent.mkdir()
    t = time.strftime("%Y-%m-%d %H:%M:%S")
    log.write_text(
        "".join(step_line(i, 1.0) for i in range(1, 4))
        + f"{t} INFO export WANDB_API_KEY=0123456789abcdef0123456789abcdef\n"
        + f"{t} ERROR training failed\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
        + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    class OneH100:
        """A GPU reading as NVML gives one (the engine takes any probe with `read`, as the demo's)."""

        def read(self) -> GpuSnapshot:
            return GpuSnapshot([GpuReading(0, "NVIDIA H100 80GB HBM3", 0.0, 61 << 30, 80 << 30, 41.0, 118.5, (GpuProcess(4242, 60 << 30),))],
                               driver="550.54.15", taken_at=time.time())

    run = Served("run", str(log.parent), Engine(discover(str(log.parent)), interval=0.5, vllm_url=None, publishing=True, gpu=OneH100()))
    run.start()
    try:
        got_gpus = gpus([run])
        assert got_gpus["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and got_gpus["gpus"][0]["processes"] == [{"pid": 4242, "used_bytes": 60 << 30}]
        assert json.loads(json.dumps(got_gpus)) == got_gpus  # plain JSON, as the SDK sends it
        got = logs(run, query="illegal memory access")
        assert len(got["entries"]) == 1
        lines = got["entries"][0]["lines"]
        assert lines[0].startswith("Traceback") and '  File "train.py", line 3, in <module>' in lines and lines[-1].startswith("RuntimeError: CUDA error")
        secret = logs(run, query="WANDB_API_KEY")["entries"]
        assert secret and "0123456789abcdef" not in json.dumps(secret)
        assert logs(run, query="0123456789abcdef")["entries"] == []  # a secret cannot be found by guessing it
        assert run_status(run)["progress"]["step"] == 3
    finally:
        run.close()


def test_without_the_sdk_runtop_mcp_says_how_to_install_it(tmp_path, simulated):
    """An install without the extra: one line naming the extra, exit 2, no traceback; a path
    runtop cannot read is one line too."""
    hide = tmp_path / "no-sdk"
    hide.mkdir()
    (hide / "mcp.py").write_text("raise ImportError(\"No module named 'mcp'\")\n")  # what Python says where mcp is not installed
    run = simulated("healthy", max_steps=3)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-m", "runtop", "mcp", run], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == ["runtop: runtop mcp needs the MCP SDK: pip install 'runtop-rl[mcp]' (or `pip install '.[mcp]'` in runtop's checkout)"]
    if find_spec("mcp") is not None:
        missing = subprocess.run([sys.executable, "-m", "runtop", "mcp", str(tmp_path / "nowhere")], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        # One short line, and a hint line where there is one (as every face says a bad path).
    assert missing.returncode == 3 and "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) <= 2


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_sdk
async def test_over_http_the_agent_needs_the_token_and_this_servers_name(tmp_path, simulated):
    """`--http 127.0.0.1:PORT` is serve's door: no token, a wrong one, another Host or Origin are
    refused with the reason; the token from --token-file opens it, and the answers are stdio's.
    Another machine's address is refused before anything listens."""
    import urllib.error
    import urllib.request

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    run = simulated("trainer-oom", max_steps=9)
    port, token_file = free_port(), tmp_path / "token"
    proc = subprocess.Popen([sys.executable, "-m", "runtop", "mcp", run, "--http", f"127.0.0.1:{port}", "--token-file", str(token_file)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not token_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        token = token_file.read_text().strip()
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        url = f"http://127.0.0.1:{port}/mcp"

        def refused(headers: dict[str, str]) -> tuple[int, str]:
            req = urllib.request.Request(url, data=b"{}", headers={"content-type": "application/json", **headers}, method="POST")
            for _ in range(100):
                try:
                    urllib.request.urlopen(req, timeout=10)
                except urllib.error.HTTPError as e:
                    return e.code, e.read().decode()
                except urllib.error.URLError:
                    time.sleep(0.1)  # not listening yet
                    continue
                return 200, "opened"
            raise AssertionError("never listened")

        assert refused({}) == (401, "runtop mcp: no token: send Authorization: Bearer TOKEN (the token runtop mcp printed or wrote to --token-file)\n")
        assert refused({"authorization": "Bearer not-the-token"})[0] == 403
        assert refused({"authorization": f"Bearer {token}", "host": f"evil.example:{port}"})[0] == 421
        assert refused({"authorization": f"Bearer {token}", "origin": "http://evil.example"})[0] == 403

        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write, *_), ClientSession(read, write) as s:
            await s.initialize()
            assert {t.name for t in (await s.list_tools()).tools} == TOOLS
            same_reading(await call(s, "run_status"), status_json(run))
    finally:
        proc.send_signal(2)
        _out, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "serving 1 run(s) (run-trainer-oom) on http://127.0.0.1:" in err
    assert not token_file.exists()  # the token dies with the server
    away = subprocess.run([sys.executable, "-m", "runtop", "mcp", run, "--http", "0.0.0.0:8000"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert away.returncode == 2 and "loopback address only" in away.stderr and len(away.stderr.strip().splitlines()) == 1


@needs_sdk
async def test_a_directory_of_runs_is_served_whole_and_a_tool_names_its_run(tmp_path):
    """`runtop mcp outputs/`: every run in it, most troubled first as `status --all` lists them;
    a tool that needs one run says which runs there are when none is named."""
    Simulator(str(tmp_path / "outputs" / "dead"), scenario="trainer-oom", max_steps=9).run()
    Simulator(str(tmp_path / "outputs" / "done"), scenario="healthy", max_steps=3).run()
    async with served(str(tmp_path / "outputs")) as s:
        runs = (await call(s, "list_runs"))["runs"]
        unnamed = await s.call_tool("run_status", {})
        done = await call(s, "run_status", run="done")
        gpus = await call(s, "gpus")  # the fleet's engines leave the GPUs to this call
        resources = sorted(str(r.uri) for r in (await s.list_resources()).resources)
    assert [(r["run"], r["verdict"]) for r in runs] == [("dead", "Down"), ("done", "Finished")]
    assert unnamed.is_error and "name a run: this server serves 2 (dead, done)" in unnamed.content[0].text
    assert done["health"]["verdict"] == status_json(str(tmp_path / "outputs" / "done"))["health"]["verdict"] == "Finished"
    assert "gpus" in gpus and (gpus["gpus"] or gpus["error"])
    assert resources == ["runtop://runs/dead/checkin", "runtop://runs/done/checkin"]
