"""`runtop serve` as a door: each attack a visitor made on the open textual-serve port, made
again with real HTTP and websocket clients (aiohttp; a raw socket where a client must misbehave
below it) against a real `runtop serve` on 127.0.0.1, and refused with its reason said (serve's
stderr line, the HTTP status and its reason, the websocket's close reason). Afterwards the
process table holds no `runtop tui` of the run: not under serve, not reparented to init."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

import aiohttp
import psutil
import pytest

from runtop.frameworks.primerl.sim import Simulator
from runtop.simulator.processes import DemoProcesses
from tests.serve_helpers import ANSI_RE, Screen, Serve, free_port, nothing_left, tree, tui_processes

EVIL = "http://evil.example.com"
REFUSED = (aiohttp.WSServerHandshakeError,)


@pytest.fixture
def run_dir(tmp_path) -> str:
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=4).run()
    return root


@pytest.fixture
def serve_of(run_dir):
    started: list[Serve] = []

    def start(*extra: str, cwd: str | None = None) -> Serve:
        s = Serve(run_dir, *extra, cwd=cwd).listening()
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()
        assert "Traceback" not in s.err and "Unhandled" not in s.err, s.err  # one line for each thing, always


async def handshake_refused(url: str, origin: str | None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """A websocket client is refused at the handshake: (the HTTP status, its reason). The same
    handshake is made by hand too, as aiohttp's client keeps the reason to itself."""
    async with aiohttp.ClientSession() as http:
        with pytest.raises(REFUSED) as refused:
            async with http.ws_connect(url, origin=origin, headers=headers):
                pass
        upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                   "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), **(headers or {})}
        if origin is not None:
            upgrade["Origin"] = origin
        async with http.get(url, headers=upgrade) as r:
            assert r.status == refused.value.status
            return r.status, f"{r.reason} / {await r.text()}"


def raw_upgrade(port: int, path: str, origin: str | None, rcvbuf: int | None = None) -> socket.socket:
    """A websocket handshake sent by hand on a socket that then reads nothing at all."""
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


# ---- the token ---------------------------------------------------------------------------
async def test_the_page_without_the_token_or_with_a_wrong_one_is_refused(serve_of):
    serve = serve_of()
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{serve.base}/") as r:
            assert r.status == 401 and "no token" in await r.text()
        async with http.get(f"{serve.base}/?token=guessed") as r:
            assert r.status == 403 and "wrong token" in await r.text()
            assert serve.token not in await r.text()
        async with http.get(serve.url) as r:
            assert r.status == 200  # the printed URL opens
    serve.wait_for(r"refused GET / from 127\.0\.0\.1: no token")
    serve.wait_for(r"refused GET / from 127\.0\.0\.1: wrong token")


async def test_a_websocket_without_the_token_or_with_a_wrong_one_gets_no_session(serve_of, run_dir):
    serve = serve_of()
    status, why = await handshake_refused(f"{serve.base}/ws?width=80&height=24", origin=serve.base)
    assert status == 401 and "no token" in why
    status, why = await handshake_refused(serve.ws_url(token="A" * len(serve.token)), origin=serve.base)
    assert status == 403 and "wrong token" in why
    serve.wait_for(r"refused a session from 127\.0\.0\.1: no token")
    serve.wait_for(r"refused a session from 127\.0\.0\.1: wrong token")
    assert "session 1 opened" not in serve.err and not tui_processes(run_dir)  # no TUI was ever started


# ---- the Origin and the Host ------------------------------------------------------------------
async def test_another_sites_page_cannot_drive_a_session_even_with_actions_allowed(serve_of, run_dir):
    """The attack: a page on evil.example.com, while an `ssh -L` tunnel is up, opens the
    websocket (with the token, say it leaked) and presses R, 4, Enter. The handshake is
    refused: no TUI starts, no key is taken, nothing reaches a Launcher pane or the audit."""
    serve = serve_of("--allow-actions")
    status, why = await handshake_refused(serve.ws_url(), origin=EVIL)
    assert status == 403 and "Origin 'http://evil.example.com' is not this server" in why
    serve.wait_for(r"refused a session from 127\.0\.0\.1: Origin 'http://evil\.example\.com' is not this server")
    # DNS rebinding: the page's own name made to point at 127.0.0.1, so its Origin is its Host.
    status, why = await handshake_refused(serve.ws_url(), origin=f"http://evil.example.com:{serve.port}",
                                          headers={"Host": f"evil.example.com:{serve.port}"})
    assert status == 403 and "Host 'evil.example.com" in why
    serve.wait_for(r"Host 'evil\.example\.com:\d+' is not this server")
    assert "opened" not in serve.err and not tui_processes(run_dir)
    assert not os.path.exists(os.path.join(run_dir, ".runtop", "audit.log"))


async def test_a_websocket_without_an_origin_is_refused(serve_of, run_dir):
    serve = serve_of()
    status, why = await handshake_refused(serve.ws_url(), origin=None)
    assert status == 403 and "no Origin" in why
    serve.wait_for(r"refused a session from 127\.0\.0\.1: no Origin on the websocket")
    assert not tui_processes(run_dir)


# ---- the cap on sessions ------------------------------------------------------------------------
async def test_thirty_clients_at_once_get_three_sessions_and_the_rest_are_told_why(serve_of, run_dir):
    """The attack: 30 connections started 30 TUIs (1.2 GB, load 17 on two cores)."""
    serve = serve_of()  # the default cap: 3
    async with aiohttp.ClientSession() as http:
        clients = await asyncio.gather(*(http.ws_connect(serve.ws_url(), origin=serve.base) for _ in range(30)))
        screens = [Screen(ws) for ws in clients]
        try:
            # Each is either told why at once, or drawn its run (a browser reads all the while).
            outcome = await asyncio.gather(*(
                asyncio.wait_for(_closed_or_drawn(s), 60) for s in screens))
            refused = [s.close for s, drawn in zip(screens, outcome) if not drawn]
            assert outcome.count(True) == 3 and len(refused) == 27
            assert all(c is not None and c[0] == 1013 and "3 sessions are open, the most this serve allows (--max-sessions 3)" in c[1]
                       for c in refused), refused[:3]
            assert len(tui_processes(run_dir)) == 3
            serve.wait_for(r"refused a session from 127\.0\.0\.1: 3 sessions are open")
        finally:
            await asyncio.gather(*(ws.close() for ws in clients))
    assert not nothing_left(run_dir, 10)
    for n in (1, 2, 3):
        serve.wait_for(rf"session {n} ended: its client closed it")


async def _closed_or_drawn(screen: Screen) -> bool:
    while screen.close is None and "reverse-text" not in screen.text:
        await asyncio.sleep(0.05)
    return screen.close is None


# ---- a screen too big, never read -------------------------------------------------------------
def test_a_huge_screen_that_is_never_read_is_cut_down_and_its_session_ended(serve_of, run_dir):
    """The attack: a client asked for 2000×2000 and never read; its TUI blocked on its pipe
    and survived SIGTERM. Now the screen is capped, and a client that does not answer a ping
    or read its screen within --client-timeout is gone: its TUI's process group is killed."""
    serve = serve_of("--client-timeout", "2")
    sock = raw_upgrade(serve.port, f"/ws/{serve.token}?width=2000&height=2000", serve.base, rcvbuf=4096)
    try:
        serve.wait_for(r"session 1 asked for a 2000×2000 screen; it gets 500×200")
        opened = serve.wait_for(r"session 1 opened for 127\.0\.0\.1 \(pid (\d+), 500×200\)")
        pid = int(opened.group(1))
        serve.wait_for(r"session 1 ended: its client did not (answer a ping|read its screen) within 2 s|"
                       r"session 1 ended: its client did not read its screen for 2 s", timeout=30)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert not nothing_left(run_dir, 1)
    finally:
        sock.close()
    assert serve.proc.poll() is None  # serve itself went on


# ---- a client gone while its session starts ----------------------------------------------------
async def test_a_client_that_leaves_while_its_session_starts_leaves_nothing_running(serve_of, run_dir):
    """The attack: a browser that disconnected while its session started left `runtop tui`
    spinning, reparented to init. Here two clients leave at once: one closes its websocket
    before the first screen, one drops the connection (a reset) right after its handshake."""
    serve = serve_of()
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(serve.ws_url(), origin=serve.base)
        await ws.close()
    sock = raw_upgrade(serve.port, f"/ws/{serve.token}?width=80&height=24", serve.base)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close = RST
    sock.close()
    serve.wait_for(r"session 1 ended: ", timeout=30)
    serve.wait_for(r"session 2 ended: ", timeout=30)
    left = nothing_left(run_dir, 5)
    assert not left, [(p.pid, p.ppid(), p.cpu_percent(0.5)) for p in left]


# ---- serve's exit ends what it started -------------------------------------------------------
async def test_serve_stopped_with_sigterm_ends_every_session_it_started(serve_of, run_dir):
    serve = serve_of()
    async with aiohttp.ClientSession() as http:
        a = Screen(await http.ws_connect(serve.ws_url(), origin=serve.base))
        b = Screen(await http.ws_connect(serve.ws_url(), origin=serve.base))
        assert await a.until("reverse-text") and await b.until("reverse-text")
        # The sessions are serve's own children (a TUI's passing fork shares their argv).
        pids = [p.pid for p in tui_processes(run_dir) if p.ppid() == serve.proc.pid]
        assert len(pids) == 2
        started = time.monotonic()
        code = await asyncio.to_thread(serve.stop, signal.SIGTERM)
        took = time.monotonic() - started
        closing = await a.closed(5)
    assert code == 0 and took < 10, (code, took)
    assert closing == (1001, "runtop serve is stopping")
    assert "stopping: ending 2 session(s)" in serve.err and "stopped; no session is left running" in serve.err
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
    assert not nothing_left(run_dir, 0)


async def test_a_session_leaves_by_itself_when_serve_is_killed_outright(serve_of, run_dir):
    """SIGKILL gives serve no word: its sessions see their pipes close, and leave."""
    serve = serve_of()
    async with aiohttp.ClientSession() as http:
        screen = Screen(await http.ws_connect(serve.ws_url(), origin=serve.base))
        assert await screen.until("reverse-text")
        assert len(tui_processes(run_dir)) == 1
        serve.stop(signal.SIGKILL)
        left = nothing_left(run_dir, 10)
    assert not left, [(p.pid, p.ppid(), p.status()) for p in left]


# ---- the token file; the token in no child ---------------------------------------------------
async def test_the_token_file_is_the_scripts_way_in_and_no_child_sees_the_token(serve_of, run_dir, tmp_path):
    token_file = str(tmp_path / "token")
    serve = serve_of("--token-file", token_file)
    st = os.lstat(token_file)
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_ISREG(st.st_mode)
    token = open(token_file).read().strip()
    assert token not in serve.err and f"?token=… (the token is in {token_file})" in serve.err  # not printed where logs keep it
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{serve.base}/?token={token}") as r:
            assert r.status == 200
        async with http.ws_connect(f"{serve.base}/ws/{token}?width=100&height=30", origin=serve.base) as ws:
            assert await Screen(ws).until("reverse-text")
            (tui,) = tui_processes(run_dir)
            seen = 0
            for p in (tui, *tui.children(recursive=True)):
                try:
                    cmdline = " ".join(p.cmdline())
                    with open(f"/proc/{p.pid}/environ", "rb") as f:
                        environ = f.read().decode("utf-8", "replace")
                except (psutil.NoSuchProcess, ProcessLookupError, FileNotFoundError):
                    continue  # a short-lived child (a scan) ended while it was looked at: it shows nothing now
                assert token not in cmdline and token not in environ
                seen += 1
            assert seen >= 1, "the served TUI itself was not looked at"
    assert serve.stop() == 0
    assert not os.path.exists(token_file)  # the token died with its serve


def test_a_token_file_already_there_is_refused_not_reused(run_dir, tmp_path):
    planted = tmp_path / "token"
    planted.write_text("chosen-by-someone-else\n")
    r = subprocess.run([*_runtop(), "serve", run_dir, "--port", str(free_port()), "--token-file", str(planted)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"runtop: --token-file {planted} exists: each start makes a new token; remove it first"]
    assert planted.read_text() == "chosen-by-someone-else\n"
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    r = subprocess.run([*_runtop(), "serve", run_dir, "--port", str(free_port()), "--token-file", str(link)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and not (tmp_path / "elsewhere").exists()


def _runtop() -> list[str]:
    import sys

    return [sys.executable, "-m", "runtop"]


# ---- read-only: nothing runs, nothing is written --------------------------------------------
async def test_a_read_only_session_runs_nothing_and_writes_nothing(serve_of, run_dir):
    """The attack: read-only, a visitor pressed F, which ran py-spy on the run's processes and
    wrote into the run dir as the serving user. Now, with the run's processes alive (a TUI
    would keep their record in RUN/.runtop/ and F would dump their stacks), F is answered and
    does nothing, and the run dir is as it was."""
    procs = DemoProcesses(run_dir, Simulator.TITLES)
    procs.start()
    try:
        before = tree(run_dir)
        serve = serve_of("--interval", "0.5")
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(serve.ws_url(width=160, height=50), origin=serve.base) as ws:
                screen = Screen(ws)
                assert await screen.until("PRIME-RL::Tra")  # the run's processes, seen alive
                assert await screen.until("read-only: forensics are off here", timeout=10, since=await screen.press("F"))
                await asyncio.sleep(2)  # samples on, a record would be due
                (tui,) = tui_processes(run_dir)
                assert "py-spy" not in {c.name() for c in tui.children(recursive=True)}
        assert tree(run_dir) == before
    finally:
        procs.end()


# ---- runtop's own processes are never the run's --------------------------------------------
async def test_served_sessions_are_never_listed_as_the_runs_processes(serve_of, run_dir):
    """serve started from inside the run dir (a prime-rl run owns its dir: whatever works there
    is the run's). Each session is `runtop tui` itself, no shell before it, so a session's
    processes pane names no process of the run, its neighbour session's included."""
    serve = serve_of("--interval", "0.5", cwd=run_dir)
    async with aiohttp.ClientSession() as http:
        a = Screen(await http.ws_connect(serve.ws_url(width=160, height=50), origin=serve.base))
        assert await a.until("reverse-text")
        b = Screen(await http.ws_connect(serve.ws_url(width=160, height=50), origin=serve.base))
        assert await b.until("reverse-text")
        await asyncio.sleep(3)  # several samples of the process table, the neighbour in each
        assert a.close is None and b.close is None and len(tui_processes(run_dir)) == 2
        # A new size repaints the whole screen: the processes pane as it stands now.
        since = b.mark()
        await b.ws.send_json(["resize", {"width": 161, "height": 50}])
        assert await b.until("processes", since=since, timeout=20)
        await b.until("no process of this run is running", since=since, timeout=3)
        pane = b.text[since:]
        assert "no process of this run is running" in pane, pane
        for p in tui_processes(run_dir):
            assert p.ppid() == serve.proc.pid  # serve's own child, no shell between
            assert os.getpgid(p.pid) == p.pid  # in a session of its own: its group is the session
        await a.ws.close()
        await b.ws.close()


# ---- a browser ----------------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The page's terminal draws on canvases (xterm's WebGL renderer), so the screen's text is not in
# the DOM: what the page's own websocket receives is kept as it arrives, to be read.
KEEP_SCREEN = r"""(() => {
  const Native = window.WebSocket; const dec = new TextDecoder(); window.__screen = "";
  function Kept(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", e => { if (typeof e.data !== "string") window.__screen += dec.decode(e.data, {stream: true}); });
    return ws;
  }
  Kept.prototype = Native.prototype;
  Object.assign(Kept, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Kept;
})();"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (Debian's: apt-get install chromium)")
async def test_a_browser_opening_the_printed_url_sees_the_tui(serve_of, run_dir, tmp_path):
    """Headless Chromium opens the tokened URL serve printed; its page connects the session's
    websocket by itself and draws the run's TUI. Driven through Chromium's DevTools protocol (a
    websocket, with aiohttp); a screenshot is left in the test's folder for a person to look at."""
    serve = serve_of()
    assert CHROMIUM is not None
    profile = tempfile.mkdtemp(dir=tmp_path)
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=1400,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not (os.path.exists(port_file) and open(port_file).read().strip()) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        devtools = int(open(port_file).read().split()[0])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{devtools}/json/list") as r:
                page = next(t for t in await r.json() if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as cdp:
                calls = 0

                async def call(method: str, **params: object) -> dict:
                    nonlocal calls
                    calls += 1
                    await cdp.send_json({"id": calls, "method": method, "params": params})
                    while True:
                        reply = json.loads((await cdp.receive(timeout=20)).data)
                        if reply.get("id") == calls:
                            return reply.get("result", {})

                await call("Page.enable")
                await call("Page.addScriptToEvaluateOnNewDocument", source=KEEP_SCREEN)
                await call("Page.navigate", url=serve.url)
                text = ""
                deadline = time.monotonic() + 60
                while not ("reverse-text" in text and "Healthy" in text) and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                    kept = await call("Runtime.evaluate", expression="window.__screen", returnByValue=True)
                    text = ANSI_RE.sub("", kept.get("result", {}).get("value") or "")
                drawn = await call("Runtime.evaluate", expression="document.body.className", returnByValue=True)
                shot = await call("Page.captureScreenshot", format="png")
                (tmp_path / "browser.png").write_bytes(base64.b64decode(shot["data"]))
        assert "reverse-text" in text and "Healthy" in text, text[-2000:]
        assert "-first-byte" in drawn["result"]["value"]  # the page's terminal drew what came
        serve.wait_for(r"session 1 opened for 127\.0\.0\.1")
    finally:
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait()
    serve.wait_for(r"session 1 ended: ", timeout=30)  # the browser gone, its session ended
    assert not nothing_left(run_dir, 5)
