"""The engine's one door to the outside world: each verdict goes through the
notifier, and what it decides is handed to the delivery workers (apprise targets, the
heartbeat, the `--on-alert` command). `observe` runs in the engine's thread and only
enqueues; `problems` is what the status and the TUI say about a failing target."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from runtop.config import NotifyConfig
from runtop.outputs.delivery import AlertJob, Heartbeat, Worker, apprise_sender, command_runner, http_get, private
from runtop.outputs.forensics import Forensics
from runtop.outputs.notify import Message, Notifier
from runtop.rules.health import Verdict
from runtop.state.run import RunState


class Alerting:
    def __init__(self, cfg: NotifyConfig, run: str, run_root: str, clock: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        self.notifier = Notifier(run, cfg.min_severity)
        self.targets: list[Worker] = []
        self.errors: list[str] = []  # targets that could not even be set up
        for url in cfg.urls:
            try:
                self.targets.append(Worker(private(url), apprise_sender(url)))
            except Exception as e:  # noqa: BLE001 - a bad URL is said, the others still work
                self.errors.append(f"{private(url)}: {e}")
        self.heartbeat = Heartbeat(cfg.heartbeat, cfg.heartbeat_every_s) if cfg.heartbeat else None
        self.beats = Worker(private(cfg.heartbeat), http_get, backoff=(5.0,)) if cfg.heartbeat else None
        self.command = (Worker(f"on-alert {cfg.on_alert[0]}", command_runner(cfg.on_alert, cfg.on_alert_timeout_s, run_root))
                        if cfg.on_alert else None)
        self.sent: list[Message] = []  # every message decided, oldest first (bounded)

    @property
    def active(self) -> bool:
        return bool(self.targets or self.heartbeat or self.command)

    def observe(self, verdict: Verdict, state: RunState, now: float | None = None) -> list[Message]:
        now = self.clock() if now is None else now
        msgs = self.notifier.observe(verdict, state, now)
        for msg in msgs:
            for t in self.targets:
                t.put(msg)
            if self.command is not None:
                self.command.put(self._job(msg, verdict, state))
        self.sent = (self.sent + msgs)[-50:]
        if self.heartbeat is not None and self.beats is not None:
            for url in self.heartbeat.due(verdict.verdict, now):
                self.beats.put(url)
        return msgs

    def forensics(self, result: Forensics) -> None:
        """Hang forensics were saved: say what the stacks show, and where (one message)."""
        msg = self.notifier.forensics(result.line())
        for t in self.targets:
            t.put(msg)
        self.sent = (self.sent + [msg])[-50:]

    def _job(self, msg: Message, verdict: Verdict, state: RunState) -> AlertJob:
        from runtop.outputs.report_json import to_json

        env = {
            "RUNTOP_RUN": state.path or "", "RUNTOP_VERDICT": verdict.verdict, "RUNTOP_EVENT": msg.event,
            "RUNTOP_RULE": msg.rule, "RUNTOP_CAUSE": msg.cause, "RUNTOP_TITLE": msg.title,
        }
        return AlertJob(msg, env, json.dumps(to_json(state, verdict, include_steps=False), default=str))

    def workers(self) -> list[Worker]:
        return [w for w in (*self.targets, self.beats, self.command) if w is not None]

    def problems(self) -> list[str]:
        """One line per target that is failing now (or could not be set up)."""
        return self.errors + [p for w in self.workers() if (p := w.status.problem())]

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued, within `timeout` overall."""
        deadline = time.monotonic() + timeout
        for w in self.workers():
            w.close(max(0.1, deadline - time.monotonic()))
