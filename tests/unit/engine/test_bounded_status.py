"""`runtop status` on a week-old run: each long log's last 8 MB answer at once, and
the answer says what it left out; `--full` reads everything."""

from __future__ import annotations

import json
import os

import runtop.engine.snapshot
from benchmarks.backfill import generate
from runtop.cli.main import main


def big_run(tmp_path, mb: int = 4) -> str:
    """A run dir whose orchestrator.log is `mb` MB in the mix a long run writes."""
    root = str(tmp_path / "run")
    generate(root, mb << 20)
    return root


def test_status_on_a_long_log_reads_its_tail_and_says_so(tmp_path, capsys, monkeypatch):
    root = big_run(tmp_path)
    monkeypatch.setattr(runtop.engine.snapshot, "BOUNDED_TAIL", 1 << 20)
    assert main(["status", root, "--json"]) == 0
    bounded = json.loads(capsys.readouterr().out)
    assert main(["status", root, "--json", "--full"]) == 0
    full = json.loads(capsys.readouterr().out)
    # The newest step is the same either way: the verdict lives at the end.
    assert bounded["progress"]["rollout_step"] == full["progress"]["rollout_step"] > 100
    assert bounded["health"]["verdict"] == full["health"]["verdict"]
    note = next(n for n in bounded["notes"] if n.startswith("read the last 1 MB of 1 long log(s)"))
    assert "--full reads all of it" in note and not any("read the last" in n for n in full["notes"])
    assert len(bounded["steps"]) < len(full["steps"])  # the history before the tail is not counted


def test_a_log_shorter_than_the_bound_is_read_whole_and_nothing_is_said(tmp_path, capsys, monkeypatch):
    root = big_run(tmp_path, mb=1)
    monkeypatch.setattr(runtop.engine.snapshot, "BOUNDED_TAIL", 8 << 20)
    assert main(["check", root]) in (0, 1, 2)
    assert "read the last" not in capsys.readouterr().out
    assert os.path.getsize(os.path.join(root, "logs", "orchestrator.log")) > 1 << 20
