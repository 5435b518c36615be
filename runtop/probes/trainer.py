"""The trainer's own /metrics, where its config serves one: steps seen on the trainer's clock,
not through a shared filesystem's caching (the stall rule's "the logs lag" case). Asked every
poll while it answers, every 30 s while nothing listens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtop.probes.seam import EndpointProbe, ProbeRun
from runtop.sources.trainer_metrics import TrainerLive
from runtop.sources.trainer_metrics import fetch as fetch_trainer
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView


class TrainerProbe(EndpointProbe):
    name = "trainer"
    fills = Slice.TRAINER

    def sample(self, run: ProbeRun) -> TrainerLive | None:
        port = run.state.endpoints.get("trainer")
        return fetch_trainer(f"http://127.0.0.1:{port}/metrics", timeout=self.timeout) if port else None

    def store(self, reading: object, state: RunState, system: SystemView) -> None:
        system.trainer = reading if isinstance(reading, TrainerLive) else None

    def forget(self, state: RunState, system: SystemView) -> None:
        system.trainer = None  # stale numbers would read as live


def make(options: Mapping[str, Any]) -> TrainerProbe:
    return TrainerProbe()
