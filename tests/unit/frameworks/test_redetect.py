"""A run runtop began to watch before its log named its framework: read generically at first,
then by its plug-in once the signs are there, even when they arrive together with its death."""

from __future__ import annotations

from pathlib import Path

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from tests.paths import TESTS

CONSOLE = TESTS / "corpus" / "trl-real-cpu-grpo-reward-raises-at-step-5" / "run" / "train.log"


def watcher(root: Path) -> Engine:
    # A long interval: the periodic second look cannot come within this test; only the end's can.
    return Engine(discover(str(root)), interval=60.0, vllm_url=None, disks=False, gpus=False, processes=False)


def test_a_trainer_that_dies_before_runtop_looks_again_is_read_by_its_plugin_with_its_step(tmp_path):
    text = CONSOLE.read_bytes()
    log = tmp_path / "train.log"
    log.write_bytes(text[:200])  # the first seconds: progress bars and warnings, no sign of TRL
    engine = watcher(tmp_path)
    try:
        engine.step()
        assert engine.state.framework == "generic", engine.state.detection
        with log.open("ab") as f:
            f.write(text[200:])  # four steps and the death land between two polls
        engine.step()
        assert engine.state.framework == "trl", engine.state.detection
        assert engine.verdict.verdict == "Down"
        assert "in step 5 (step 4 was its last)" in engine.verdict.reasons[0], engine.verdict.reasons
    finally:
        engine.close()


def test_a_log_that_never_names_a_framework_stays_generic_and_is_judged_once(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("starting\n")
    engine = watcher(tmp_path)
    try:
        engine.step()
        with log.open("a") as f:
            f.write("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nRuntimeError: boom\n")
        engine.step()
        assert engine.state.framework == "generic"
        assert engine.verdict.verdict == "Down" and "RuntimeError" in engine.verdict.reasons[0], engine.verdict.reasons
    finally:
        engine.close()
