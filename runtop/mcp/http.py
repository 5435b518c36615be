"""`runtop mcp --http 127.0.0.1:PORT`: the MCP server over streamable HTTP, behind `serve`'s door
(docs/design.md, "`runtop serve`: a door with a lock"; docs/mcp.md).

A port any local page or process can reach is not stdio: every request passes `Guard` first.
The address must be loopback (plain HTTP would carry the token in clear; reach it with ssh -L);
the Host must be this server's own name (a DNS-rebinding page reaches 127.0.0.1 under its own);
an Origin, where one is sent, must be this server; and each request carries the token this start
made, as `Authorization: Bearer TOKEN` (compared in constant time). The token is printed once on
stderr, or written to `--token-file` (0600, removed at exit), as `serve` does.
"""

from __future__ import annotations

import hmac
import secrets
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def parse_address(text: str) -> tuple[str, int] | str:
    """(host, port) of `127.0.0.1:PORT` (`[::1]:PORT`, `localhost:PORT`), or why not."""
    from runtop.serve.token import loopback

    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        return f"--http {text!r}: give 127.0.0.1:PORT (a port from 1 to 65535)"
    if not loopback(host):
        return (f"--http {text!r}: runtop mcp serves on a loopback address only (plain HTTP carries the token in clear "
                "to anyone on the way); serve on 127.0.0.1 and reach it with ssh -L")
    return host.strip("[]"), int(port)


def hosts_of(host: str, port: int) -> set[str]:
    """The Host headers this server answers to: its loopback names with its port."""
    names = {host, "127.0.0.1", "localhost"} | ({"::1"} if ":" in host else set())
    return {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}


class Guard:
    """The door in front of the SDK's app: Host, Origin and the token, each refused with its reason."""

    def __init__(self, app: ASGIApp, hosts: set[str], token: str, say: Callable[[str], None]) -> None:
        self.app = app
        self.token = token.encode()
        self.say = say
        self.hosts = hosts
        self.origins = {f"http://{h}" for h in hosts}

    def why_not(self, scope: Scope) -> tuple[int, str] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host") not in self.hosts:
            return 421, f"Host {headers.get('host')!r} is not this server's (a page under another name reaching 127.0.0.1)"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, f"Origin {origin!r} is not this server"
        auth = headers.get("authorization", "")
        given = auth[7:].strip().encode() if auth[:7].lower() == "bearer " else b""
        if not given:
            return 401, "no token: send Authorization: Bearer TOKEN (the token runtop mcp printed or wrote to --token-file)"
        if not hmac.compare_digest(given, self.token):
            return 403, "wrong token (each start of runtop mcp makes a new one)"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.why_not(scope)
            if refused is not None:
                status, why = refused
                self.say(f"refused {scope.get('method', '?')} {scope.get('path', '?')} from {(scope.get('client') or ('?',))[0]}: {why}")
                body = f"runtop mcp: {why}\n".encode()
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def say(line: str) -> None:
    print(f"runtop mcp: {line}", file=sys.stderr, flush=True)


def serve_http(server: Any, address: str, token_file: str | None, what: str) -> int:
    """Serve `server` (an `MCPServer`) on `address` until SIGINT or SIGTERM; the exit code."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from runtop.exit_codes import EXIT_OK, EXIT_USAGE
    from runtop.serve.token import remove_token, write_token

    parsed = parse_address(address)
    if isinstance(parsed, str):
        say(parsed)
        return EXIT_USAGE
    host, port = parsed
    token = secrets.token_urlsafe(32)
    ident: tuple[int, int] | None = None
    if token_file:
        written = write_token(token_file, token)
        if isinstance(written, str):
            say(written)
            return EXIT_USAGE
        ident = written
    hosts = hosts_of(host, port)
    # The SDK's own rebinding check too, with the same names: two locks on one door.
    security = TransportSecuritySettings(allowed_hosts=sorted(hosts), allowed_origins=sorted(f"http://{h}" for h in hosts))
    guard = Guard(server.streamable_http_app(transport_security=security, host=host), hosts, token, say)
    problem = _cannot_listen(host, port)
    try:
        if problem is not None:
            say(f"cannot listen on {host}:{port}: {problem}")
            return EXIT_USAGE
        shown = f"the token is in {token_file}" if token_file else f"token {token}"
        say(f"serving {what} on http://{f'[{host}]' if ':' in host else host}:{port}/mcp (send Authorization: Bearer TOKEN; {shown})")
        uvicorn.Server(uvicorn.Config(guard, host=host, port=port, log_level="warning", lifespan="on")).run()
    finally:
        if ident is not None and token_file:
            remove_token(token_file, ident)
    return EXIT_OK


def _cannot_listen(host: str, port: int) -> str | None:
    """Why the port cannot be bound (in use, not permitted), asked before uvicorn, which says it
    in a log line of its own and exits."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            return e.strerror or str(e)
    return None
