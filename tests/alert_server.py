"""A real HTTP server on 127.0.0.1: an apprise `json://` target and a heartbeat endpoint for
the alerting tests. It records what arrives; it can refuse (an HTTP status) or hang."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class AlertServer:
    def __init__(self, status: int = 200, hang_s: float = 0.0) -> None:
        self.status = status
        self.hang_s = hang_s
        self.received: list[dict[str, Any]] = []  # {"method", "path", "json"}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with owner._lock:
                    owner.received.append({"method": self.command, "path": self.path, "json": body})
                if owner.hang_s:
                    time.sleep(owner.hang_s)
                self.send_response(owner.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = _answer  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/alerts", scheme: str = "json") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["json"] for r in self.received if isinstance(r["json"], dict)]

    def paths(self) -> list[str]:
        with self._lock:
            return [r["path"] for r in self.received]

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
