"""A multi-node prime-rl run: every node's log is read (`trainer/node_R.log`, with
`trainer.log` only node 0's link), a node that dies shows only in its own file, and runtop
names it."""

from __future__ import annotations

import subprocess
import sys

from runtop.engine.reader import RunReader
from runtop.engine.snapshot import read_all
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator


def test_node_2s_trainer_dies_and_runtop_says_down_naming_node_2(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="node-nccl-timeout", max_steps=9, nodes=4).run()
    trainers = [t.path.rsplit("/", 2)[-2:] for t in discover(root).logs if t.role == "trainer"]
    assert trainers == [["trainer", f"node_{n}.log"] for n in range(4)]  # the link to node 0 is not read twice
    r = subprocess.run([sys.executable, "-m", "runtop", "check", root], capture_output=True, text=True, timeout=60)
    first = r.stdout.splitlines()[0]
    assert r.returncode == 2 and first.startswith("Down:") and "trainer node 2 died: NCCLTimeout" in first
    assert "; nodes 0, 1, 3 waiting" in first  # the others wait on it in the collective
    assert "logs/attempt_1/trainer/node_2.log" in r.stdout


def test_every_nodes_lines_show_in_the_logs_pane_with_a_node_tag(tmp_path):
    root = str(tmp_path / "run")
    Simulator(root, scenario="node-nccl-timeout", max_steps=9, nodes=4).run()
    reader = RunReader(discover(root))
    read_all(reader)
    sources = {ln.source for ln in reader.tail.lines()}
    assert {"trainer@0", "trainer@1", "trainer@2", "trainer@3"} <= sources and "trainer" not in sources
    dying = [ln for ln in reader.tail.lines() if ln.source == "trainer@2" and "Watchdog caught" in ln.text]
    assert dying and dying[0].level == "ERROR"


def test_a_node_whose_log_stopped_while_the_others_go_on_is_named(tmp_path):
    """A hung or lost node shows only in its own file: its silence beside the others' writes."""
    import os
    import re
    import time

    from runtop.config import Thresholds
    from runtop.rules.health import judge
    from runtop.rules.registry import Facts

    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=9, stop_after=5, nodes=4).run()
    now = time.time()
    quiet = os.path.join(root, "logs", "attempt_1", "trainer", "node_3.log")
    os.utime(quiet, (now - 1500, now - 1500))  # 25 minutes behind the others
    reader = RunReader(discover(root))
    read_all(reader)
    v = judge(reader.state, Facts(reader.state, now + 5, Thresholds()))
    (silent,) = [f for f in v.alerts if f.rule == "node_silent"]
    assert re.match(r"trainer node 3 has written nothing for 2[45]m", silent.message) and "node(s) 0, 1, 2 go on" in silent.message
    assert v.verdict == "Degraded"
    os.utime(quiet, (now, now))  # it writes again: nothing to say
    reader.poll(max_bytes=1 << 20, rescan_every=float("inf"), ckpt_every=float("inf"))
    assert not [f for f in judge(reader.state, Facts(reader.state, now + 5, Thresholds())).alerts if f.rule == "node_silent"]
