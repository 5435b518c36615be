"""A week-long run holds 200k step rows. They are kept in columns (`runtop.state.columns`): one
typed array a metric, a row built only when asked, its numbers read back exactly as written
(a negative zero, a logged `nan`, a missing value each stay themselves), rows from the same
sources sharing one origin dict that is never written in place."""

from __future__ import annotations

import math
import tracemalloc

import pytest

from runtop.parsers.events import ORCHESTRATOR, TRAINER, StepMetrics
from runtop.state.parts import UNWRITTEN
from runtop.state.run import RunState
from runtop.view.publish import row_copy


def fold(state: RunState, *events: StepMetrics) -> None:
    for ev in events:
        state.apply(ev, "logs/orchestrator.log")


def test_rows_from_the_same_sources_share_one_origin_dict_and_stay_apart():
    s = RunState()
    fold(s, *(StepMetrics(ORCHESTRATOR, k, {"reward": 0.5, "seq_len": 900.0}) for k in range(1, 4)))
    r1, r2, r3 = (s.steps[k] for k in (1, 2, 3))
    assert r1.origin is r2.origin is r3.origin
    # metrics.jsonl then gives step 2 its structured number: it wins there, and only there.
    fold(s, StepMetrics(ORCHESTRATOR, 2, {"reward": 0.625}, origin="metrics"))
    assert s.steps[2].origin == {"orchestrator.reward": "metrics", "orchestrator.seq_len": "log"}
    assert r1.origin == s.steps[3].origin == {"orchestrator.reward": "log", "orchestrator.seq_len": "log"}
    assert s.steps[2].rollout == {"reward": 0.625, "seq_len": 900.0} and s.steps[1].rollout["reward"] == 0.5
    # A scraped line for step 2 later does not undo the structured number.
    fold(s, StepMetrics(ORCHESTRATOR, 2, {"reward": 0.6}))
    assert s.steps[2].rollout["reward"] == 0.625


def test_a_row_is_a_snapshot_and_its_empty_mappings_refuse_writes():
    s = RunState()
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.5}), StepMetrics(ORCHESTRATOR, 2, {"reward": 0.7}))
    a, b = s.steps[1], s.steps[2]
    assert a.trainer is b.trainer is a.phases_s is b.extra is UNWRITTEN
    with pytest.raises(TypeError):
        a.trainer["loss"] = 1.0  # a reader that took a row for the state
    # The trainer's numbers, phases and extras land on step 1 alone; a row read before is as it was.
    fold(s, StepMetrics(TRAINER, 1, {"loss": 0.1}, phases_s={"wait": 2.0}, extra={"kl": 0.01}))
    now = s.steps[1]
    assert (now.trainer, now.phases_s, now.extra) == ({"loss": 0.1}, {"wait": 2.0}, {"kl": 0.01})
    assert a.trainer is UNWRITTEN and s.steps[2].trainer == s.steps[2].phases_s == {} and UNWRITTEN == {}


def test_a_published_row_copy_shares_nothing_that_is_written():
    s = RunState()
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.5}))
    copy = row_copy(s.steps[1])
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.9, "seq_len": 10.0}), StepMetrics(TRAINER, 1, {"loss": 0.2}))
    assert copy.rollout == {"reward": 0.5} and copy.trainer == {} and copy.origin == {"orchestrator.reward": "log"}


def test_a_negative_zero_a_logged_nan_and_a_missing_value_each_read_back_as_themselves():
    s = RunState()
    fold(s, StepMetrics(TRAINER, 3, {"loss": 0.1}, extra={"pg": 0.0}), StepMetrics(TRAINER, 4, {"loss": float("nan")}, extra={"pg": -0.0}))
    fold(s, StepMetrics(TRAINER, 5, {"grad_norm": 1.0}))
    assert str(s.steps[3].extra["pg"]) == "0.0" and str(s.steps[4].extra["pg"]) == "-0.0"
    assert math.isnan(s.steps[4].trainer["loss"]) and "loss" not in s.steps[5].trainer and "pg" not in s.steps[5].extra


def test_many_names_of_extras_beyond_the_column_cap_are_kept_too():
    from runtop.state.columns import MAX_EXTRA_COLUMNS

    s = RunState()
    fold(s, *(StepMetrics(TRAINER, k, {"loss": 0.1}, extra={f"env_{k}/reward": k / 10}) for k in range(1, MAX_EXTRA_COLUMNS + 20)))
    assert s.steps[MAX_EXTRA_COLUMNS + 10].extra == {f"env_{MAX_EXTRA_COLUMNS + 10}/reward": (MAX_EXTRA_COLUMNS + 10) / 10}
    assert s.steps[2].extra == {"env_2/reward": 0.2}


@pytest.mark.slow  # 200k steps written one by one: CI's figure, not the inner loop's
def test_two_hundred_thousand_steps_cost_tens_of_bytes_a_metric_not_a_kilobyte_a_row():
    """A week of a dense prime-rl orchestrator: 200k steps of 9 numbers and an extra each.
    As rows of dicts they were 500 bytes to 1.1 KB a step (a 1 GB backfill peaked at 289 MB)."""
    values = {"step_time_s": 31.0, "reward": 0.5, "turns": 1.0, "branches": 1.0, "off_policy_max": 0.0, "error_rate": 0.0,
              "cancelled": 0.0, "truncated": 0.008, "seq_len": 812.0}
    s = RunState()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(1, 200_001):
            s.apply(StepMetrics(ORCHESTRATOR, k, {**values, "reward": k / 200_000}, extra={"trainable_frac": 0.875}), "o")
        per_step = (tracemalloc.get_traced_memory()[0] - before) / 200_000
    finally:
        tracemalloc.stop()
    assert per_step < 140, f"{per_step:.0f} bytes a step"
    assert s.steps[150_000].value("reward") == 0.75 and len(s.steps) == 200_000
