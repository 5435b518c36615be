"""A real `runtop serve` child on 127.0.0.1 and a free port, its stderr read line by line as it
comes, and the sessions it started found in the process table (by their `runtop tui RUN`
command line, wherever they hang: under serve, or reparented to init)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import aiohttp
import psutil

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
BANNER = re.compile(r"^runtop: serving .* on (http://127\.0\.0\.1:(\d+)/\?token=(\S+))")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    def __init__(self, run_dir: str, *extra: str, cwd: str | None = None, env: dict[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.port = free_port()
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runtop", "serve", run_dir, "--port", str(self.port), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = ""
        self.token = ""

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    @property
    def err(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """The first stderr line matching `pattern`, waited for."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for line in self.lines:
                    if m := rx.search(line):
                        return m
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"serve never said {pattern!r}; it said:\n{self.err}")

    def listening(self) -> Serve:
        """Wait for the banner (the tokened URL) and the port to answer."""
        m = self.wait_for(r"^runtop: serving ")
        b = BANNER.match(m.string)
        if b is not None:
            self.url, self.token = b.group(1), b.group(3)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("runtop serve did not listen")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, token: str | None = None, width: int = 120, height: int = 40) -> str:
        return f"{self.base}/ws/{self.token if token is None else token}?width={width}&height={height}"

    def sessions(self) -> list[psutil.Process]:
        """Every live `runtop tui RUN` process of this run: what serve started, wherever it is now."""
        return tui_processes(self.run_dir)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"runtop serve did not stop within {timeout} s of signal {sig}:\n{self.err}") from None
        self._reader.join(timeout=5)
        return code

    def close(self) -> None:
        """The test's end: serve stopped (killed if it must be) and no session of it left."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in self.sessions():  # only this test's run dir: never another test's processes
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                p.kill()


def tui_processes(run_dir: str) -> list[psutil.Process]:
    """The run's TUI sessions. A session's own child between fork and exec (a grep scan, a
    probe's command) still carries its parent's command line for a moment: it is not a session."""
    found = {}
    for p in psutil.process_iter(["cmdline", "status", "ppid"]):
        argv = p.info.get("cmdline") or []
        if "tui" in argv and run_dir in argv and p.info.get("status") != psutil.STATUS_ZOMBIE:
            found[p.pid] = p
    return [p for p in found.values() if p.info.get("ppid") not in found]


def nothing_left(run_dir: str, within: float) -> list[psutil.Process]:
    """Wait up to `within` seconds for every session of the run to be gone; what is left."""
    deadline = time.monotonic() + within
    while (left := tui_processes(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


class Screen:
    """A session's screen as a browser keeps it: every message read as it comes (so pings are
    answered, as a browser's are), its text kept with the escapes dropped."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.text = ""
        self.close: tuple[int | None, str] | None = None  # (code, reason) once closed
        self._raw = ""
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            msg = await self.ws.receive()
            if msg.type == aiohttp.WSMsgType.BINARY:
                self._raw += msg.data.decode("utf-8", "replace")
                self.text = ANSI_RE.sub("", self._raw)  # whole: an escape may span two messages
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                self.close = (self.ws.close_code, str(msg.extra or ""))
                return

    def mark(self) -> int:
        return len(self.text)

    async def until(self, needle: str, timeout: float = 60.0, since: int = 0) -> bool:
        """Whether `needle` shows (after `since`) within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text[since:]:
                return True
            if self.close is not None:
                return needle in self.text[since:]
            await asyncio.sleep(0.05)
        return False

    async def press(self, keys: str) -> int:
        mark = self.mark()
        await self.ws.send_json(["stdin", keys])
        return mark

    async def closed(self, timeout: float = 30.0) -> tuple[int | None, str] | None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        return self.close


def tree(root: str) -> dict[str, tuple[int, float]]:
    """Every file and folder under `root`: (size, mtime), to tell that nothing was written."""
    out: dict[str, tuple[int, float]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[str(Path(dirpath, name).relative_to(root))] = (st.st_size, st.st_mtime)
    return out
