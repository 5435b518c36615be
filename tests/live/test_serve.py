"""`runtop serve`: the TUI in a browser, on 127.0.0.1, behind the token it prints, each
session read-only unless `--allow-actions`. Driven with a real HTTP and websocket client
(aiohttp, textual-serve's own dependency) against the real server in a child process.
What the door refuses, and what is left running, is tests/live/test_trust_serve.py's."""

from __future__ import annotations

import aiohttp
import pytest

from runtop.cli.main import main
from runtop.frameworks.primerl.sim import Simulator
from tests.serve_helpers import Screen, Serve, nothing_left


@pytest.fixture
def run_dir(tmp_path) -> str:
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=4).run()
    return root


async def session(serve: Serve, keys: str, after: str) -> str:
    """Open the URL serve printed, then the page's websocket; press `keys` once the TUI has drawn."""
    async with aiohttp.ClientSession() as http:
        async with http.get(serve.url) as page:
            assert page.status == 200
            html = await page.text()
            assert f"ws://127.0.0.1:{serve.port}/ws/{serve.token}" in html  # the page's websocket carries the token
            assert page.headers["Referrer-Policy"] == "no-referrer"
        async with http.ws_connect(serve.ws_url(), origin=serve.base) as ws:
            screen = Screen(ws)
            assert await screen.until("reverse-text")
            await screen.until(after, timeout=8, since=await screen.press(keys))
            return screen.text


async def test_the_printed_url_opens_a_read_only_session(run_dir):
    serve = Serve(run_dir).listening()
    try:
        assert serve.token and len(serve.token) >= 32  # a fresh random token, in the URL to open
        screen = await session(serve, "R", "actions are off")
        assert "reverse-text" in screen  # the run's own view, drawn in the browser's terminal
        assert "actions are off" in screen  # R (resume) is answered, never planned
        assert serve.stop() == 0
    finally:
        serve.close()
    assert f"serving {run_dir} (read-only) on http://127.0.0.1:{serve.port}/?token={serve.token}" in serve.err
    assert not nothing_left(run_dir, 0)


async def test_allow_actions_lets_the_session_plan_an_action(run_dir):
    serve = Serve(run_dir, "--allow-actions").listening()
    try:
        screen = await session(serve, "R", "resume")
        assert "actions are off" not in screen and "resume" in screen.lower()
    finally:
        serve.stop()
        serve.close()
    assert "(actions allowed)" in serve.err


def test_actions_are_refused_on_an_address_other_machines_reach(run_dir, capsys):
    assert main(["serve", run_dir, "--host", "0.0.0.0", "--allow-actions"]) == 2
    assert "--allow-actions is refused on 0.0.0.0" in capsys.readouterr().err


def test_a_path_that_is_no_run_fails_before_serving(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nothing")]) == 3
    assert capsys.readouterr().err.startswith("runtop: ")
