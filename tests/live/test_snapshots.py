"""The main layout, pinned: 80×24 (a tmux split) and 200×50 (a full screen).

Fixed clock, file times and probe readings (tests/tui_helpers.py), and a fixed run
directory (paths show in the disk pane), so the pictures change only when the UI does.
Update with `pytest tests/live/test_snapshots.py --snapshot-update` and look at the report.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import RUN_NAME as SKYRL_RUN
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from tests.paths import TESTS
from tests.tui_helpers import FIXED_MTIME, FixedProcs, healthy_tree, make_app, settle


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


SIZES = [(80, 24), (120, 40), (200, 50)]
# (scenario, simulator options, the clock's distance from the last write, every role alive):
# the four states a researcher must read at a glance.
STATES = {
    "healthy": ("healthy", {"max_steps": 9, "stop_after": 4}, 42.0, True),
    "down-oom": ("trainer-oom", {"max_steps": 9}, 42.0, False),
    "finished": ("healthy", {"max_steps": 4}, 42.0, True),
    "stalled": ("healthy", {"max_steps": 9, "stop_after": 4}, 3600.0, True),
}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("state", list(STATES))
def test_main_layout_prime_rl(snap_compare, size, state, fixed_dir):
    scenario, opts, age, alive = STATES[state]
    Simulator(fixed_dir, scenario=scenario, **opts).run()
    procs = {"proc_sampler": FixedProcs(healthy_tree(FIXED_MTIME))} if alive else {}
    assert snap_compare(make_app(fixed_dir, age=age, **procs), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_skyrl_healthy(snap_compare, size, fixed_dir):
    root = fixed_dir
    SkyrlSimulator(root, max_steps=4).run()
    assert snap_compare(make_app(os.path.join(root, "logs", f"{SKYRL_RUN}.log")), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
@pytest.mark.parametrize("scenario", ["healthy", "worker-oom"])
def test_main_layout_verl(snap_compare, size, scenario, fixed_dir):
    """A verl run through its plug-in alone: steps, phases, checkpoints, a worker's OOM."""
    from runtop.frameworks import get
    from runtop.sources.processes import ProcessSnapshot, ProcInfo

    get("verl").simulator(fixed_dir, scenario, max_steps=6).run()
    t0 = FIXED_MTIME
    ray = [ProcInfo(5100, t0 - 3600, 1, "ray::TaskRunner.run()", "trainer", "sleeping", 3.0, 4 << 30),
           ProcInfo(5200, t0 - 3500, 5100, "ray::WorkerDict.update_actor()", "trainer", "running", 98.0, 60 << 30, 1)]
    tree = ProcessSnapshot(procs=ray, taken_at=t0) if scenario == "healthy" else ProcessSnapshot(procs=[], missing=["trainer"], taken_at=t0)
    assert snap_compare(make_app(fixed_dir, proc_sampler=FixedProcs(tree)), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
@pytest.mark.parametrize("scenario", ["healthy", "cuda-oom"])
def test_main_layout_trl(snap_compare, size, scenario, fixed_dir):
    """A TRL GRPOTrainer run through its plug-in alone."""
    from runtop.frameworks import get
    from runtop.sources.processes import ProcessSnapshot, ProcInfo

    get("trl").simulator(fixed_dir, scenario, max_steps=8).run()
    alive = [ProcInfo(6100, FIXED_MTIME - 3600, 1, "python train_grpo.py --bf16", "trainer", "running", 99.0, 12 << 30)]
    tree = ProcessSnapshot(procs=alive, taken_at=FIXED_MTIME) if scenario == "healthy" else ProcessSnapshot(procs=[], missing=["trainer"], taken_at=FIXED_MTIME)
    assert snap_compare(make_app(fixed_dir, proc_sampler=FixedProcs(tree)), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_openrlhf_actor_oom(snap_compare, size, fixed_dir):
    """An OpenRLHF run whose actor dies of OOM, through its plug-in alone."""
    from runtop.frameworks import get
    from runtop.sources.processes import ProcessSnapshot

    get("openrlhf").simulator(fixed_dir, "actor-oom", max_steps=8).run()
    tree = ProcessSnapshot(procs=[], missing=["trainer"], taken_at=FIXED_MTIME)
    assert snap_compare(make_app(fixed_dir, proc_sampler=FixedProcs(tree)), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_nemo_rl_healthy(snap_compare, size, fixed_dir):
    """A NeMo-RL GRPO run through its plug-in alone."""
    from runtop.frameworks import get
    from runtop.sources.processes import ProcessSnapshot, ProcInfo

    get("nemo-rl").simulator(fixed_dir, "healthy", max_steps=8).run()
    ray = [ProcInfo(7100, FIXED_MTIME - 3600, 1, "ray::DTensorPolicyWorker.train()", "trainer", "running", 99.0, 40 << 30),
           ProcInfo(7200, FIXED_MTIME - 3600, 1, "ray::VllmGenerationWorker", "inference", "sleeping", 5.0, 20 << 30)]
    tree = ProcessSnapshot(procs=ray, taken_at=FIXED_MTIME)
    assert snap_compare(make_app(fixed_dir, proc_sampler=FixedProcs(tree)), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_layout_generic_crash_tail(snap_compare, size, fixed_dir):
    """A training script no plug-in knows, dead of a CUDA OOM under hydra: read generically, and
    the screen says so (its header names the reader)."""
    from runtop.sources.processes import ProcessSnapshot

    corpus = os.path.join(str(TESTS), "corpus", "generic-cuda-oom-hydra-script", "run")
    shutil.copytree(corpus, fixed_dir)
    tree = ProcessSnapshot(procs=[], missing=["trainer"], taken_at=FIXED_MTIME)
    assert snap_compare(make_app(fixed_dir, proc_sampler=FixedProcs(tree)), terminal_size=size, run_before=settle)
