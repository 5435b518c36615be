"""`runtop serve`'s web server: textual-serve's page and scripts, behind a door (docs/design.md,
"`runtop serve`: a door with a lock").

textual-serve itself checks nothing: whoever reaches the port gets a TUI process, and any web
page the user opens can reach 127.0.0.1. So every request passes `guard` first:

- the Host must be this server's own name when it serves loopback (a DNS-rebinding page
  reaches 127.0.0.1 under its own name);
- an Origin, where one is sent, must be this server; the websocket must send one (every
  browser does), so a page elsewhere cannot drive a session with the user's network position;
- the page and the websocket need the token `serve` printed (compared in constant time);
  only textual-serve's static scripts and styles are open.

Past the door, sessions are capped, screens are capped, and a session whose client is gone
(closed, silent past `client_timeout`, or not reading its screen) is ended, process group and
all. `close` ends every session: `serve` leaves nothing running.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from runtop.serve.session import Screen, Session
from runtop.serve.token import loopback

TRY_AGAIN_LATER = 1013  # RFC 6455's registry: the server is overloaded, try again later
MAX_CLIENT_MESSAGE = 64 << 10  # a key press or a resize is a few bytes; a paste, some KB


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


@dataclass
class Door:
    argv: Sequence[str]  # the TUI's command line (holds no secret: it is in the process table)
    env: dict[str, str]  # the TUI's environment (textual's web driver is chosen there)
    host: str
    token: str
    title: str
    assets: Path  # textual-serve's package folder: templates/ and static/
    max_sessions: int = 3
    client_timeout: float = 10.0
    screen: Screen = field(default_factory=Screen)
    say: Callable[[str], None] = print
    sessions: dict[int, Session] = field(default_factory=dict)
    _sockets: dict[int, web.WebSocketResponse] = field(default_factory=dict)
    _handlers: set[asyncio.Task[Any]] = field(default_factory=set)
    _count: int = 0
    _closing: bool = False
    _template: Any = None  # textual-serve's page, loaded once

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard])
        app.add_routes([
            web.get("/", self.page),
            web.get("/ws", self.websocket),  # no token: refused by the guard, with the reason
            web.get("/ws/{token}", self.websocket),
            web.static("/static", self.assets / "static", show_index=False),
        ])
        return app

    # ---- the door -----------------------------------------------------------
    def refuse(self, request: web.Request, status: int, why: str) -> web.Response:
        what = "a session" if request.path.startswith("/ws") else f"GET {request.path}"
        self.say(f"refused {what} from {request.remote or '?'}: {why}")
        # The reason rides in the status line too: a websocket client sees it in the refused handshake.
        reason = why.encode("ascii", "replace").decode("ascii")
        return web.Response(status=status, reason=reason, text=f"runtop serve: {why}\n", headers={"Cache-Control": "no-store"})

    def refusal(self, request: web.Request) -> tuple[int, str] | None:
        name = request.url.host or ""
        if loopback(self.host) and not loopback(name):
            return 403, f"Host {request.host!r} is not this server (it serves {self.host}); a page under another name cannot reach it"
        origin = request.headers.get("Origin")
        ours = {f"http://{request.host}".lower(), f"https://{request.host}".lower()}
        if origin is not None and origin.lower() not in ours:
            return 403, f"Origin {origin[:80]!r} is not this server (http://{request.host})"
        ws = request.path.startswith("/ws")
        if ws and origin is None:
            return 403, "no Origin on the websocket (a browser always sends one; a script must send this server's)"
        if request.path.startswith("/static/"):
            return None  # textual-serve's own scripts and styles: nothing of the run
        given = request.match_info.get("token") if ws else request.query.get("token")
        if not given:
            return 401, "no token: open the URL runtop serve printed (with ?token=...)"
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("ascii")):
            return 403, "wrong token: open the URL this runtop serve printed (each start has a new one)"
        return None

    @web.middleware
    async def guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            return self.refuse(request, *refused)
        return await handler(request)

    # ---- the page -----------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        if self._template is None:
            import jinja2

            env = jinja2.Environment(loader=jinja2.FileSystemLoader(self.assets / "templates"), autoescape=True)
            self._template = env.get_template("app_index.html")
        base = f"http://{request.host}"
        html = self._template.render(
            font_size=min(max(_int(request.query.get("fontsize"), 16), 6), 48),
            app_websocket_url=f"ws://{request.host}/ws/{self.token}",
            config={"static": {"url": f"{base}/static/"}},
            application={"name": self.title},
        )
        return web.Response(text=html, content_type="text/html", headers={
            # The token is in this page's URL and in its websocket's: no other site is told it
            # (Referer), no cache keeps it, and no other site frames the page.
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
            "Content-Security-Policy": "frame-ancestors 'none'", "X-Frame-Options": "DENY",
        })

    # ---- sessions -----------------------------------------------------------
    async def websocket(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            return await self._websocket(request)
        finally:
            if task is not None:
                self._handlers.discard(task)

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if self._closing or len(self.sessions) >= self.max_sessions:
            why = "runtop serve is stopping" if self._closing else (
                f"{len(self.sessions)} sessions are open, the most this serve allows (--max-sessions {self.max_sessions}); close one")
            self.say(f"refused a session from {request.remote or '?'}: {why}")
            # Opened only to be closed with the reason (a browser's page can show a close
            # reason, not a refused handshake's); a client that does not answer is not waited for.
            full = web.WebSocketResponse(timeout=1.0)
            await full.prepare(request)
            await full.close(code=TRY_AGAIN_LATER, message=why.encode()[:120])
            return full
        ws = web.WebSocketResponse(heartbeat=self.client_timeout / 2, max_msg_size=MAX_CLIENT_MESSAGE)
        self._count += 1
        number = self._count
        asked = _int(request.query.get("width"), 80), _int(request.query.get("height"), 24)
        cols, rows = self.screen.fit(*asked)
        session = Session(number, self.argv, self.env, send_screen=ws.send_bytes, client_timeout=self.client_timeout)
        self.sessions[number] = session  # counted before the first await: 30 at once are 30 here
        self._sockets[number] = ws
        why = "its client closed it"
        try:
            await ws.prepare(request)
            if (cols, rows) != asked:
                self.say(f"session {number} asked for a {asked[0]}×{asked[1]} screen; it gets {cols}×{rows} (the most serve draws)")
            await session.start(cols, rows)
            self.say(f"session {number} opened for {request.remote or '?'} (pid {session.pid}, {cols}×{rows})")
            why = await self._talk(ws, session)
        except asyncio.CancelledError:
            why = "its client went while it started" if session.pid is None else "its client is gone"
            raise
        except ConnectionError:
            why = "its client went while it started" if session.pid is None else "its client is gone"
        except Exception as e:
            why = f"the TUI could not start ({type(e).__name__}: {e})"
        finally:
            await asyncio.shield(self._finish(number, session, ws, request, why))
        if not ws.prepared:  # the handshake itself failed: there is no websocket to finish
            return web.Response(status=400, text=f"runtop serve: {why}\n")
        return ws

    async def _talk(self, ws: web.WebSocketResponse, session: Session) -> str:
        """Pass the browser's keys to the TUI until either side ends; why it ended."""
        reader = asyncio.ensure_future(self._from_browser(ws, session))
        closed = asyncio.ensure_future(session.closed.wait())
        try:
            await asyncio.wait({reader, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (reader, closed):
                t.cancel()
        if session.why_closed is not None:
            return session.why_closed
        if reader.done() and not reader.cancelled() and reader.exception() is None:
            return reader.result()
        return "its client is gone"

    async def _from_browser(self, ws: web.WebSocketResponse, session: Session) -> str:
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(msg.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            ok = True
            if kind == "stdin" and isinstance(data, str):
                ok = await session.keys(data)
            elif kind == "resize" and isinstance(data, dict):
                cols, rows = self.screen.fit(_int(str(data.get("width")), 80), _int(str(data.get("height")), 24))
                ok = await session.meta({"type": "resize", "width": cols, "height": rows})
            elif kind == "ping":
                await ws.send_json(["pong", data])
            elif kind in ("focus", "blur"):
                ok = await session.meta({"type": kind})
            if not ok:
                return session.why_closed or "the TUI stopped taking keys"
        if isinstance(ws.exception(), asyncio.TimeoutError):
            return f"its client did not answer a ping within {self.client_timeout:g} s"
        return "its client closed it"

    async def _finish(self, number: int, session: Session, ws: web.WebSocketResponse, request: web.Request, why: str) -> None:
        try:
            await session.end()
        finally:
            self.sessions.pop(number, None)
            self._sockets.pop(number, None)
        code = session.proc.returncode if session.proc is not None else None
        self.say(f"session {number} ended: {why}" + (f" (the TUI exited {code})" if code not in (None, 0) else ""))
        if not ws.closed:
            try:
                await asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY, message=why.encode()[:120]), 1.0)
            except Exception:
                # A client that reads nothing never takes the close either: drop the connection.
                if request.transport is not None:
                    request.transport.abort()

    async def close(self) -> None:
        """End every session (each: quit, grace, SIGKILL to its group), then their handlers."""
        self._closing = True
        if self.sessions:
            self.say(f"stopping: ending {len(self.sessions)} session(s)")
        for s in self.sessions.values():
            s.close_because("runtop serve is stopping")
        await asyncio.gather(*(s.end() for s in list(self.sessions.values())), return_exceptions=True)
        for ws in list(self._sockets.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY, message=b"runtop serve is stopping"), 1.0)
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=5.0)


def assets() -> Path:
    """textual-serve's templates and static files (its page, xterm.js, textual.js)."""
    import textual_serve

    return Path(os.path.dirname(textual_serve.__file__))
