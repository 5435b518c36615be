"""`runtop serve`: the TUI in a browser through textual-serve, on 127.0.0.1, each
session read-only unless `--allow-actions`. Driven with a real HTTP and websocket client
(aiohttp, textual-serve's own dependency) against the real server in a child process."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time

import aiohttp
import pytest

from runtop.cli import main
from runtop.simulator.primerl import Simulator

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def run_dir(tmp_path) -> str:
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=4).run()
    return root


def start(run_dir: str, *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runtop", "serve", run_dir, "--port", str(port), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode() if proc.stderr else "runtop serve exited") from None
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("runtop serve did not listen")


async def session(port: int, keys: str) -> str:
    """Open the page, then its websocket; press `keys` once the TUI has drawn; the screen's text."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/") as page:
            assert page.status == 200
            html = await page.text()
            assert f"ws://127.0.0.1:{port}/ws" in html
        async with http.ws_connect(f"http://127.0.0.1:{port}/ws?width=120&height=40") as ws:
            seen = ""
            sent = False
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                try:
                    msg = await ws.receive(timeout=1.0)
                except asyncio.TimeoutError:
                    continue
                if msg.type == aiohttp.WSMsgType.BINARY:
                    seen += ANSI_RE.sub("", msg.data.decode("utf-8", "replace"))
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    seen += msg.data
                elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break
                if not sent and "reverse-text" in seen:
                    await ws.send_json(["stdin", keys])
                    sent = True
                    deadline = min(deadline, time.monotonic() + 6)
            return seen


def stop(proc: subprocess.Popen[bytes]) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err.decode()


def test_served_on_loopback_a_session_is_read_only(run_dir):
    proc, port = start(run_dir)
    try:
        screen = asyncio.run(session(port, "R"))
        assert "reverse-text" in screen  # the run's own view, drawn in the browser's terminal
        assert "actions are off" in screen  # R (resume) is answered, never planned
    finally:
        err = stop(proc)
    assert f"serving {run_dir} (read-only) on http://127.0.0.1:{port}" in err


def test_allow_actions_lets_the_session_plan_an_action(run_dir):
    proc, port = start(run_dir, "--allow-actions")
    try:
        screen = asyncio.run(session(port, "R"))
        assert "actions are off" not in screen and "resume" in screen.lower()
    finally:
        stop(proc)


def test_actions_are_refused_on_an_address_other_machines_reach(run_dir, capsys):
    assert main(["serve", run_dir, "--host", "0.0.0.0", "--allow-actions"]) == 2
    assert "--allow-actions is refused on 0.0.0.0" in capsys.readouterr().err


def test_a_path_that_is_no_run_fails_before_serving(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nothing")]) == 3
    assert capsys.readouterr().err.startswith("runtop: ")
