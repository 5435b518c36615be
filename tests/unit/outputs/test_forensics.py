"""Hang forensics: the stacks a maintainer asks for first, saved before anyone
restarts the run: a real `py-spy dump` of a real stuck child, and what the stacks show."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from runtop.engine.snapshot import read_run_reader
from runtop.outputs.forensics import collect, dump, py_spy
from runtop.parsers import pyspy
from runtop.rules.health import Verdict
from runtop.sources.processes import ProcessSnapshot, ProcInfo

# The shape of a genuine dump (huggingface/accelerate#3104: a DeepSpeed rank whose main
# thread waits in backward while a worker thread is active in the collective; threads with
# no Python frames; ms-swift#6312: a command line that wraps), with our own values.
RANK_DUMP = """Process 2210: /usr/bin/python3.11 -u train.py --deepspeed ds.json --model Qwen3-0.6B
--max-steps 400
Python v3.11.9 (/usr/bin/python3.11)

Thread 2210 (idle): "MainThread"
    backward (torch/autograd/__init__.py:266)
    backward (deepspeed/runtime/engine.py:1976)
    training_loop (rl/train.py:410)
    <module> (rl/train.py:587)
Thread 2290 (idle): "Thread-1"
    wait (threading.py:324)
    run (tqdm/_monitor.py:60)
Thread 2301 (idle)
Thread 2302 (active)
    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)
    wrapper (torch/distributed/c10d_logger.py:72)
"""

SAVING = """Process 2213: python train.py
Python v3.11.9 (/usr/bin/python3.11)

Thread 2213 (active): "MainThread"
    _write_item (torch/distributed/checkpoint/filesystem.py:301)
    save_checkpoint (rl/ckpt.py:88)
"""


def test_a_dump_says_where_each_rank_waits():
    d = pyspy.parse(RANK_DUMP)
    assert d.pid == 2210 and len(d.threads) == 4 and d.threads[0].name == "MainThread"
    assert d.threads[2].frames == [] and d.threads[3].state == "active"
    assert d.stuck_in() == "all_gather_into_tensor"  # the rank waits on the others there
    saving = pyspy.parse(SAVING)
    assert saving.stuck_in() == "_write_item"
    ranks = [pyspy.parse(RANK_DUMP.replace("2210", str(p))) for p in (2210, 2211, 2212)] + [saving]
    said = pyspy.summary({"trainer": ranks})
    assert said == "3 of 4 trainer process(es) in `all_gather_into_tensor` (a collective); pid 2213 in `_write_item`"


STUCK = """
import time
def stuck_in_known_function():
    time.sleep(120)
stuck_in_known_function()
"""


@pytest.fixture
def stuck_child(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", STUCK], cwd=tmp_path)
    time.sleep(0.5)
    yield p
    p.kill()
    p.wait()


def test_forensics_dump_a_real_stuck_child_and_save_everything_a_maintainer_asks_for(simulated, stuck_child):
    if py_spy() is None:
        pytest.skip("py-spy is not installed (pip install '.[forensics]')")
    text, why = dump(stuck_child.pid)
    if text is None and why and "ptrace" in why:
        pytest.skip(f"ptrace is not permitted here: {why}")
    assert text is not None and "stuck_in_known_function" in text, why
    root = simulated("healthy", max_steps=9, stop_after=4)
    reader = read_run_reader(root)
    procs = ProcessSnapshot(procs=[ProcInfo(stuck_child.pid, time.time(), os.getpid(), "PRIME-RL::Trainer", "trainer", "sleeping", 0.0, 1 << 20)])
    result = collect(reader.state, Verdict("Down", ["no log write anywhere for 1h"]), procs, None, None)
    assert result.folder.startswith(os.path.join(root, ".runtop", "forensics", ""))
    assert result.summary == "trainer in `stuck_in_known_function`" and not result.problems
    files = {os.path.relpath(os.path.join(d, f), result.folder) for d, _, fs in os.walk(result.folder) for f in fs}
    assert f"stacks/trainer-{stuck_child.pid}.txt" in files
    assert {"processes.txt", "gpus.json", "disk.txt", "findings.json", "summary.txt"} <= files
    assert any(f.startswith("logs/") and f.endswith("trainer.log.tail") for f in files)
    table = open(os.path.join(result.folder, "processes.txt")).read()
    assert f"{stuck_child.pid}\ttrainer\tsleeping\t" in table
    # Each thread with its kernel state (S, R, D, t…) and wait channel, as /proc says them now.
    assert re.search(rf"\n  {stuck_child.pid}\tthread\t[A-Za-z]\t\S+\t", table), table
    assert json.load(open(os.path.join(result.folder, "findings.json")))["health"]["verdict"] == "Down"
    tail = open(os.path.join(result.folder, "logs", next(f for f in files if f.endswith("trainer.log.tail"))[5:])).read()
    assert "Saving checkpoint at step 4" in tail


def test_without_py_spy_forensics_say_how_to_get_it(simulated, monkeypatch, tmp_path):
    monkeypatch.setattr("runtop.outputs.forensics.py_spy", lambda: None)
    root = simulated("healthy", max_steps=4)
    reader = read_run_reader(root)
    procs = ProcessSnapshot(procs=[ProcInfo(os.getpid(), time.time(), 1, "PRIME-RL::Trainer", "trainer", "running", 0.0, 1)])
    result = collect(reader.state, Verdict("Down"), procs)
    assert result.problems == ("py-spy is not installed: pip install '.[forensics]' in runtop's checkout (or pip install py-spy)",)
    assert "no stacks" in result.line() and os.path.isfile(os.path.join(result.folder, "processes.txt"))


def test_a_stall_saves_forensics_and_the_finding_and_a_message_name_them(simulated):
    from runtop.config import NotifyConfig
    from runtop.outputs.alerting import Alerting
    from tests.live.test_alerting import Clock, engine_for, poll
    from tests.tui_helpers import FIXED_MTIME, healthy_tree

    root = simulated("healthy", max_steps=9, stop_after=4)
    alerting = Alerting(NotifyConfig(), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 3600), healthy_tree(FIXED_MTIME))
    engine.forensics_on_stall = True
    try:
        poll(engine)
        deadline = time.monotonic() + 20
        while engine.last_forensics is None and time.monotonic() < deadline:
            poll(engine)
        result = engine.last_forensics
        assert result is not None and os.path.isdir(result.folder)
        poll(engine)
        stall = next(f for f in engine.verdict.alerts if f.rule == "stalled")
        assert f"stacks: {result.line()}" in stall.evidence and result.folder in stall.evidence
        told = [m for m in alerting.sent if m.event == "forensics"]
        assert len(told) == 1 and result.folder in told[0].body
        poll(engine, 3)  # the same stall: no second collection
        assert len(os.listdir(os.path.dirname(result.folder))) == 1
    finally:
        engine.close()


def test_a_run_dir_runtop_may_not_write_gets_its_forensics_elsewhere_and_says_where(simulated, tmp_path, monkeypatch):
    """A run dir runtop will not write (read-only, another user's, `.runtop` a link): nothing
    is lost, the folder goes to the user's private dir under the temp dir, and the result says so."""
    root = simulated("healthy", max_steps=4)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, os.path.join(root, ".runtop"))  # `.runtop` leading outside the run
    monkeypatch.setattr("runtop.outputs.forensics.py_spy", lambda: None)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    os.makedirs(tmp_path / "tmp")
    result = collect(read_run_reader(root).state, Verdict("Down"), ProcessSnapshot())
    mine = tmp_path / "tmp" / f"runtop-{os.geteuid()}"  # the user's private dir, 0700, never a shared name
    assert result.folder.startswith(str(mine / "forensics")) and not os.listdir(outside)  # nothing made out there
    assert os.stat(mine).st_mode & 0o777 == 0o700
    assert any("not saved in the run dir" in p and ".runtop is a symbolic link" in p for p in result.problems), result.problems
    assert os.path.isfile(os.path.join(result.folder, "summary.txt"))
