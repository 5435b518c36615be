"""Two incidents that begin at once (the engine dies, and so its process): one toast, the
gravest, naming how many more are in the alerts pane — two stacked toasts covered two thirds
of an 80×24 screen."""

from __future__ import annotations

import asyncio

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.sources.gpu import RecordedProbe
from runtop.tui.app import RuntopApp
from tests.tui_helpers import H100, settle


def test_incidents_that_begin_together_are_one_toast_naming_the_rest(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="inference-death", max_steps=20).run()
    lay = discover(root)

    async def go() -> list[str]:
        app = RuntopApp(lay, interval=0.3, monitor=Engine(lay, interval=0.3, gpu=RecordedProbe([H100]), vllm_url=None))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            down = [a for a in app.monitor.verdict.alerts if a.severity == "critical"]
            assert len(down) >= 2, [a.message for a in app.monitor.verdict.alerts]
            return list(app.toasts)

    toasts = asyncio.run(go())
    assert len(toasts) == 1, toasts
    assert "more in alerts" in toasts[0], toasts
