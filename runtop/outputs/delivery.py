"""Sending what `runtop.outputs.notify` decided: apprise targets, a dead-man's switch and an
`--on-alert` command, each in its own thread with its own queue, so a target that refuses or
hangs is retried with back-off and reported, and never holds the engine or another target.

Every URL is shown redacted (apprise's own privacy form: tokens and passwords masked)."""

from __future__ import annotations

import logging
import os
import queue
import re
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtop.outputs.notify import Message
from runtop.parsers.hygiene import public
from runtop.sources.writes import OutputError, open_dir, private_dir, private_name, record_dir

BACKOFF_S = (2.0, 10.0, 30.0)  # waits between tries of one message; then it is dropped, and said
MAX_QUEUE = 100  # messages waiting per target: a target down for days keeps the newest
HTTP_TIMEOUT_S = 10.0


class DeliveryError(Exception):
    pass


@dataclass
class TargetStatus:
    name: str  # redacted
    sent: int = 0
    failures: int = 0  # tries that failed
    dropped: int = 0  # messages given up after every retry
    last_ok: float | None = None
    last_error: str | None = None  # the newest failure, while it is not followed by a success
    retry_at: float | None = None

    def problem(self) -> str | None:
        if self.last_error is None:
            return None
        retry = f"; retrying in {max(0, round((self.retry_at or 0) - time.time()))} s" if self.retry_at else ""
        gave_up = f"; {self.dropped} message(s) given up" if self.dropped else ""
        return f"{self.name}: {self.last_error}{retry}{gave_up}"


class Worker:
    """One target: a queue, a thread, retries with back-off."""

    def __init__(self, name: str, send: Callable[[Any], None], backoff: tuple[float, ...] = BACKOFF_S) -> None:
        self.status = TargetStatus(name)
        self._send = send
        self._backoff = backoff
        self._q: queue.Queue[Any] = queue.Queue(MAX_QUEUE)
        self._stop = threading.Event()
        self._busy = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"runtop-deliver {name[:40]}", daemon=True)
        self._thread.start()

    def put(self, item: Any) -> None:
        """Never blocks: a full queue drops its oldest message (and says so)."""
        while True:
            try:
                self._q.put_nowait(item)
                return
            except queue.Full:
                try:
                    self._q.get_nowait()
                    self.status.dropped += 1
                except queue.Empty:
                    continue  # emptied meanwhile: the put is tried again

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._q.get(timeout=0.2)
            except queue.Empty:
                continue
            self._busy.set()
            try:
                self._deliver(item)
            finally:
                self._busy.clear()

    def _deliver(self, item: Any) -> None:
        for attempt in range(len(self._backoff) + 1):
            try:
                self._send(item)
            except Exception as e:  # noqa: BLE001 - a target's failure is its status, never the engine's
                self.status.failures += 1
                self.status.last_error = public(str(e) or type(e).__name__)[:200]
                if attempt == len(self._backoff):
                    self.status.dropped += 1
                    self.status.retry_at = None
                    return
                wait = self._backoff[attempt]
                self.status.retry_at = time.time() + wait
                if self._stop.wait(wait):
                    return
                continue
            self.status.sent += 1
            self.status.last_ok = time.time()
            self.status.last_error = self.status.retry_at = None
            return

    def idle(self) -> bool:
        return self._q.empty() and not self._busy.is_set()

    def close(self, timeout: float) -> None:
        """Deliver what is queued (within `timeout`), then stop."""
        deadline = time.monotonic() + timeout
        while not self.idle() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(max(0.0, deadline - time.monotonic()) + 0.5)


# ---- apprise targets --------------------------------------------------------
def private(url: str) -> str:
    """`url` as it may be shown: apprise's privacy form (tokens, passwords masked)."""
    try:
        import apprise

        plugin = apprise.Apprise.instantiate(url)
        if plugin:
            return public(str(plugin.url(privacy=True)))  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - not an apprise URL, or apprise missing: the scheme alone
        return _scheme_only(url)
    return _scheme_only(url)


def _scheme_only(url: str) -> str:
    return url.split("://", 1)[0] + "://…" if "://" in url else "…"


def scrub(text: str, url: str) -> str:
    """`text` without the secret parts of `url` (a token in the path, a password): apprise's
    own error lines may quote the endpoint they failed to reach."""
    parts = urllib.parse.urlsplit(url if "://" in url else f"x://{url}")
    secrets = {p for p in re.split(r"[/?&=#@:]", parts.path + "?" + parts.query) if len(p) >= 12}
    if parts.password:
        secrets.add(parts.password)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "…")
    return text


def apprise_sender(url: str) -> Callable[[Message], None]:
    """A sender for one apprise URL; raises `DeliveryError` naming what it refused."""
    try:
        import apprise
    except ImportError:
        raise DeliveryError("apprise is not installed: pip install apprise") from None
    target = apprise.Apprise()
    if not target.add(url):
        raise DeliveryError(f"not a URL apprise can send to: {private(url)}")

    def send(msg: Message) -> None:
        with apprise.LogCapture(level=logging.WARNING) as log:  # type: ignore[no-untyped-call]
            # Plain text, said so: a target with its own markup escapes it (Slack's `<!channel>`
            # stays literal text, never a mention).
            ok = target.notify(title=msg.title, body=msg.body, body_format=apprise.NotifyFormat.TEXT)
        if not ok:
            said = [ln.strip() for ln in log.getvalue().splitlines() if ln.strip()]
            raise DeliveryError(scrub(said[-1] if said else "the target refused the message", url))

    return send


# ---- the dead-man's switch ----------------------------------------------------
def http_get(url: str) -> None:
    import urllib.request  # here: only a heartbeat needs it, and a one-shot status pays for none (docs/design.md, "Start-up")

    req = urllib.request.Request(url, headers={"User-Agent": "runtop"})
    with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:  # noqa: S310 - the user's own URL
        if resp.status >= 400:
            raise DeliveryError(f"HTTP {resp.status}")


class Heartbeat:
    """healthchecks.io's convention: `/start` when watching begins, the URL itself every
    `every_s` while the run is not Down, `/fail` once when it goes Down. If runtop's own
    machine dies, the pings stop and the service pages the user."""

    def __init__(self, url: str, every_s: float) -> None:
        self.url = url.rstrip("/")
        self.every_s = every_s
        self._last: float | None = None
        self._down = False
        self._started = False

    def due(self, verdict: str, now: float) -> list[str]:
        out = []
        if not self._started:
            self._started = True
            out.append(self.url + "/start")
        if verdict == "Down":
            if not self._down:
                self._down = True
                out.append(self.url + "/fail")
            return out
        self._down = False
        if self._last is None or now - self._last >= self.every_s:
            self._last = now
            out.append(self.url)
        return out


# ---- --on-alert ------------------------------------------------------------------
@dataclass(frozen=True)
class AlertJob:
    message: Message
    env: dict[str, str]
    status_json: str  # the status JSON at the time of the message


def command_runner(argv: tuple[str, ...], timeout_s: float, run_root: str | None) -> Callable[[AlertJob], None]:
    """Runs `argv` (no shell) with RUNTOP_* in its environment, killed at `timeout_s`; its exit
    status and output go to the target's status and to `RUN/.runtop/on-alert.log`. The status
    JSON it is given is `RUN/.runtop/alert-status.json`, else a file in the user's private
    directory (`runtop.sources.writes`): never a fixed name in the shared temp dir."""

    def run(job: AlertJob) -> None:
        json_path = _write_json(run_root, job.status_json)
        env = {**os.environ, **job.env, "RUNTOP_JSON": json_path}
        started = time.time()
        try:
            done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as e:
            _record(run_root, started, argv, f"killed after {timeout_s:g} s", (e.stdout or b"") if isinstance(e.stdout, bytes) else (e.stdout or ""))
            raise DeliveryError(f"{argv[0]} ran past {timeout_s:g} s and was killed") from None
        except OSError as e:
            raise DeliveryError(f"{argv[0]}: {e.strerror or e}") from None
        _record(run_root, started, argv, f"exit {done.returncode}", done.stdout + done.stderr)
        if done.returncode != 0:
            raise DeliveryError(f"{argv[0]} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-120:]}")

    return run


def _write_json(run_root: str | None, text: str) -> str:
    """The status JSON, written whole; its path (empty where it could not be written, said)."""
    try:
        if run_root is None:
            d, name = private_dir(), "alert-status.json"
        else:
            d, why = record_dir(run_root)
            name = "alert-status.json" if why is None else private_name(run_root, "alert-status.json")
        with d:
            return d.replace(name, text.encode("utf-8"), mode=0o600)
    except OutputError as e:
        raise DeliveryError(f"the status JSON was not written: {e}") from None


def _record(run_root: str | None, started: float, argv: tuple[str, ...], outcome: str, output: Any) -> None:
    if run_root is None:
        return
    out = public(output if isinstance(output, str) else output.decode("utf-8", "replace"))[-2000:]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))
    try:
        with open_dir(run_root, ".runtop") as d:
            d.append("on-alert.log", f"{stamp} {public(' '.join(argv))}: {outcome}\n" + "".join(f"  {ln}\n" for ln in out.splitlines()))
    except OutputError:
        return  # the command's outcome is in the target's status all the same
