"""The main layout, pinned: 80×24 (a tmux split) and 200×50 (a full screen).

Fixed clock, file times and probe readings (tests/tui_helpers.py), and a fixed run
directory (paths show in the disk pane), so the pictures change only when the UI does.
Update with `pytest tests/test_snapshots.py --snapshot-update` and look at the report.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from runtop.simulator.primerl import Simulator
from runtop.simulator.skyrl import RUN_NAME as SKYRL_RUN
from runtop.simulator.skyrl import SkyrlSimulator
from tests.tui_helpers import make_app, settle


@pytest.fixture
def fixed_dir(request) -> Iterator[str]:
    """A run dir of this test alone, removed after it. Its path is fixed, not $TMPDIR's:
    paths show in the disk and logs panes, so a random one would change the picture. One
    per test id, so tests run side by side (pytest-xdist) never share one."""
    name = request.node.name.replace("[", "-").rstrip("]")
    path = os.path.join("/tmp", "runtop-snapshots", name)
    shutil.rmtree(path, ignore_errors=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_prime_rl_trainer_oom(snap_compare, size, fixed_dir):
    root = fixed_dir
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    assert snap_compare(make_app(root), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_skyrl_healthy(snap_compare, size, fixed_dir):
    root = fixed_dir
    SkyrlSimulator(root, max_steps=4).run()
    assert snap_compare(make_app(os.path.join(root, "logs", f"{SKYRL_RUN}.log")), terminal_size=size, run_before=settle)
