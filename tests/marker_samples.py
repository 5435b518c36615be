"""Helpers of tests/unit/test_markers.py, kept apart so that naming them does not make its tests live."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import events_of


def runtop_here(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=60)


def status_of_a_run(path: str) -> str:
    return runtop_here("status", path).stdout


def a_story_through_a_helper() -> None:
    assert "Down" in status_of_a_run("run")


def a_parser_story() -> None:
    assert events_of("E0821 14:05:23.118000 2210431 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1)", "trainer")
