from __future__ import annotations

import os
import time

import pytest

from runtop.simulator.primerl import Simulator

# Pictures and times must not depend on the zone of the machine running the tests (a time
# runtop takes from the wall clock is shown in local time).
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture
def simulated(tmp_path):
    """Write a whole simulated prime-rl run (main layout) and return its directory."""

    def make(scenario: str = "healthy", **kw) -> str:
        root = os.path.join(tmp_path, f"run-{scenario}")
        Simulator(root, scenario=scenario, **kw).run()
        return root

    return make


@pytest.fixture
def skyrl_run(tmp_path):
    """Write a whole simulated SkyRL run (driver log + checkpoint dir) and return its directory."""
    from runtop.simulator.skyrl import SkyrlSimulator

    def make(scenario: str = "healthy", **kw) -> str:
        root = os.path.join(tmp_path, f"skyrl-{scenario}")
        SkyrlSimulator(root, scenario=scenario, **kw).run()
        return root

    return make


# The live-run fixture of the action tests (a real tmux server and Launcher pane), shared
# with tests/test_action_proof.py.
from tests.test_actions import live_run  # noqa: E402, F401


def pytest_collection_modifyitems(config, items):
    """The real-framework runs (tests/real/, marked `real`) train a genuine model for minutes:
    they run only when asked for by name (`pytest -m real`), never inside the main suite's
    command, whatever is installed."""
    if "real" in (config.getoption("-m") or ""):
        return
    keep = [i for i in items if i.get_closest_marker("real") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("real") is not None])
        items[:] = keep
