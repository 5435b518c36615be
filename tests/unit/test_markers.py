"""The inner loop (`-m "not slow and not live"`, docs/architecture.md, "Tests") leaves out what
starts something beside the test; tests/conftest.py finds those by reading them."""

from __future__ import annotations

import importlib

import tests.marker_samples as samples
from tests.conftest import _calls_live


def test_a_test_that_runs_runtops_command_line_two_helpers_down_is_live():
    assert _calls_live(samples.runtop_here) and _calls_live(samples.status_of_a_run) and _calls_live(samples.a_story_through_a_helper)


def test_a_test_that_only_parses_stays_in_the_inner_loop_whatever_its_log_line_names():
    """`multiprocessing/api.py` in a torchrun line is text, not a child process."""
    assert not _calls_live(samples.a_parser_story)


def test_the_app_under_its_pilot_is_live_and_a_pure_function_beside_it_is_not():
    """In the TUI's own test file: a story that drives the app is live; the chart's tick
    arithmetic, tested beside it, stays in the inner loop. (Looked up by name: naming a test
    here would make this one live.)"""
    tui = importlib.import_module("tests.live.test_tui")
    assert _calls_live(tui.test_the_trainer_dies_of_oom_and_runtop_says_down_naming_it)
    assert not _calls_live(tui.test_the_chart_marks_whole_steps_a_round_stride_apart)
