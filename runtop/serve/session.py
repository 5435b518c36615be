"""One browser session of `runtop serve`: a `runtop tui` child, its screen to a websocket and
the browser's keys back (docs/design.md, "`runtop serve`: a door with a lock").

The child speaks Textual's web-driver protocol on its pipes: a `__GANGLION__` line, then
packets of one type byte (`D` screen data, `M` a JSON meta message, `P` packed data) and a
4-byte big-endian length. The session owns the child's whole process group (it starts in a
session of its own), so ending it ends what the TUI started too (py-spy, grep): a quit, a
grace period, then SIGKILL to the group, whatever the child was blocked on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

# The TUI's driver in a session: Textual's web driver, leaving when serve is gone (tui/served.py).
SERVED_DRIVER = "runtop.tui.served:ServedDriver"

GRACE_S = 3.0  # from the quit to SIGKILL
START_S = 60.0  # the most a TUI may take to say it is up (a cold start on a busy box: seconds)
MAX_PACKET = 16 << 20  # one screen packet; a 500×200 full repaint is well under 1 MB
STDERR_KEPT = 4096  # the child's last words, for the line that says why a session failed
PRELUDE_LINES = 10  # lines the child may print before its `__GANGLION__`


@dataclass(frozen=True)
class Screen:
    """The most cells a session draws: a browser asking for more is given this much (a huge
    screen costs the TUI's CPU and memory on the training box, and its output piles up)."""

    max_cols: int = 500
    max_rows: int = 200
    min_cols: int = 20
    min_rows: int = 5

    def fit(self, cols: int, rows: int) -> tuple[int, int]:
        return min(max(cols, self.min_cols), self.max_cols), min(max(rows, self.min_rows), self.max_rows)


def packet(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


class Session:
    """The child and its pumps. `send_screen` writes to the browser; `closed` is awaited
    by the caller, who then calls `end` (always: also when the client went first)."""

    def __init__(self, number: int, argv: Sequence[str], env: dict[str, str], *,
                 send_screen: Callable[[bytes], Awaitable[None]], client_timeout: float) -> None:
        self.number = number
        self.argv = list(argv)
        self.env = env
        self.send_screen = send_screen
        self.client_timeout = client_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.why_closed: str | None = None  # why the child's side ended the session
        self.closed = asyncio.Event()  # the child left, or stalled its client: end the session
        self._pump: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self._err_tail = b""
        self._ended: asyncio.Event | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self, cols: int, rows: int) -> None:
        env = dict(self.env, COLUMNS=str(cols), ROWS=str(rows))
        # No shell between serve and the TUI (a `sh -c` of serve's sat in the run's own dir and
        # was counted as the run's), and a session of its own: its process group is the session.
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True,
        )
        self._stderr = asyncio.create_task(self._keep_stderr())
        self._pump = asyncio.create_task(self._pump_screen())

    def last_words(self) -> str:
        lines = [ln.strip() for ln in self._err_tail.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:100] if lines else ""

    async def _keep_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self._err_tail = (self._err_tail + chunk)[-STDERR_KEPT:]

    def close_because(self, why: str) -> None:
        if self.why_closed is None:
            self.why_closed = why
        self.closed.set()

    async def _pump_screen(self) -> None:
        """The child's screen to the browser, until the child's stdout ends. Once the browser
        cannot take it, the rest is read and dropped: a child whose pipe is not drained cannot
        even quit."""
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        to_browser = True
        try:
            for _ in range(PRELUDE_LINES):
                line = await asyncio.wait_for(out.readline(), START_S)
                if not line or line == b"__GANGLION__\n":
                    break
            while True:
                head = await out.readexactly(5)
                size = int.from_bytes(head[1:], "big")
                if size > MAX_PACKET:
                    self.close_because(f"the TUI sent a {size}-byte packet")
                    return
                payload = await out.readexactly(size)
                if head[:1] == b"D" and to_browser:
                    try:
                        await asyncio.wait_for(self.send_screen(payload), self.client_timeout)
                    except asyncio.TimeoutError:
                        self.close_because(f"its client did not read its screen for {self.client_timeout:g} s")
                        to_browser = False
                    except Exception as e:  # the websocket broke under the write: the client is gone
                        self.close_because(f"its client is gone ({type(e).__name__})")
                        to_browser = False
                elif head[:1] == b"M" and _meta_type(payload) == "exit":
                    self.close_because("the TUI quit")
                # Other meta (open_url, file deliveries) and packed data: runtop's TUI sends none
                # a browser should act on, so none is passed on.
        except asyncio.TimeoutError:
            self.close_because(f"the TUI did not start within {START_S:g} s")
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close_because("the TUI exited" + (f": {w}" if (w := self.last_words()) else ""))

    async def to_child(self, data: bytes) -> bool:
        """Write to the TUI's stdin; False when it cannot take it (gone, or not reading)."""
        if self.proc is None or self.proc.stdin is None or self.proc.returncode is not None:
            return False
        try:
            self.proc.stdin.write(data)
            await asyncio.wait_for(self.proc.stdin.drain(), self.client_timeout)
        except (OSError, RuntimeError, asyncio.TimeoutError):
            return False
        return True

    async def keys(self, text: str) -> bool:
        return await self.to_child(packet(b"D", text.encode("utf-8")))

    async def meta(self, obj: dict[str, object]) -> bool:
        return await self.to_child(packet(b"M", json.dumps(obj).encode("utf-8")))

    async def end(self) -> None:
        """Quit the TUI, and SIGKILL its process group after the grace period (a TUI blocked on a
        pipe never handles a SIGTERM);
        return once the child is reaped. Safe to call twice, and from several tasks."""
        if self._ended is not None:
            await self._ended.wait()
            return
        self._ended = asyncio.Event()
        try:
            await asyncio.shield(self._end())
        finally:
            self._ended.set()

    async def _end(self) -> None:
        proc = self.proc
        if proc is not None:
            if proc.returncode is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.meta({"type": "quit"}), 0.5)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), GRACE_S)
            # Whatever is left of the group (the TUI blocked on a pipe, a py-spy it started):
            # killed. The group's id is the child's pid, reaped only just now.
            self._signal_group(signal.SIGKILL)
            await proc.wait()
            if proc.stdin is not None:
                proc.stdin.close()
        for task in (self._pump, self._stderr):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def _meta_type(payload: bytes) -> str | None:
    try:
        obj = json.loads(payload)
    except ValueError:
        return None
    kind = obj.get("type") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) else None
