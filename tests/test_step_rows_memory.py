"""A week-long run holds 200k step rows (1.1 KB a row made a 1 GB backfill 289 MB).
Rows share what they can without one row's write reaching another: the empty mappings are one
shared, write-refusing dict, and rows whose numbers came from the same sources share one
origin dict, which is never written in place."""

from __future__ import annotations

import pytest

from runtop.parsers.events import ORCHESTRATOR, TRAINER, StepMetrics
from runtop.publish import row_copy
from runtop.state import RunState
from runtop.state_parts import UNWRITTEN


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
    assert r1.origin == r3.origin == {"orchestrator.reward": "log", "orchestrator.seq_len": "log"}
    assert s.steps[2].rollout == {"reward": 0.625, "seq_len": 900.0} and r1.rollout["reward"] == 0.5
    # A scraped line for step 2 later does not undo the structured number.
    fold(s, StepMetrics(ORCHESTRATOR, 2, {"reward": 0.6}))
    assert s.steps[2].rollout["reward"] == 0.625


def test_a_row_s_empty_mappings_are_shared_and_refuse_writes():
    s = RunState()
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.5}), StepMetrics(ORCHESTRATOR, 2, {"reward": 0.7}))
    a, b = s.steps[1], s.steps[2]
    assert a.trainer is b.trainer is a.phases_s is b.extra is UNWRITTEN
    with pytest.raises(TypeError):
        a.trainer["loss"] = 1.0  # a writer that forgot to give the row its own dict
    # The writer does: the trainer's numbers, phases and extras land on step 1 alone.
    fold(s, StepMetrics(TRAINER, 1, {"loss": 0.1}, phases_s={"wait": 2.0}, extra={"kl": 0.01}))
    assert (a.trainer, a.phases_s, a.extra) == ({"loss": 0.1}, {"wait": 2.0}, {"kl": 0.01})
    assert b.trainer == b.phases_s == b.extra == {} and b.trainer is UNWRITTEN
    assert UNWRITTEN == {}


def test_a_published_row_copy_shares_nothing_that_is_written():
    s = RunState()
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.5}))
    copy = row_copy(s.steps[1])
    fold(s, StepMetrics(ORCHESTRATOR, 1, {"reward": 0.9, "seq_len": 10.0}), StepMetrics(TRAINER, 1, {"loss": 0.2}))
    assert copy.rollout == {"reward": 0.5} and copy.trainer == {} and copy.origin == {"orchestrator.reward": "log"}


def test_rows_with_the_same_extras_share_them_but_a_negative_zero_stays_its_own():
    s = RunState()
    fold(s, *(StepMetrics(ORCHESTRATOR, k, {"reward": 0.5}, extra={"trainable_frac": 0.875}) for k in (1, 2)))
    assert s.steps[1].extra is s.steps[2].extra
    fold(s, StepMetrics(TRAINER, 3, {"loss": 0.1}, extra={"pg": 0.0}), StepMetrics(TRAINER, 4, {"loss": 0.1}, extra={"pg": -0.0}))
    assert str(s.steps[3].extra["pg"]) == "0.0" and str(s.steps[4].extra["pg"]) == "-0.0"


def test_a_step_line_s_repeated_numbers_are_one_object_each():
    from runtop.parsers.numbers import shared_float
    from runtop.parsers.primerl import parse_record
    from runtop.parsers.records import Record

    def step(n: int) -> StepMetrics:
        msg = f"Step {n} |   31.0s | Reward 0.{n:04d} | Turns 1.0 | Error 0.0% | Truncation 0.8%"
        (ev,) = [e for e in parse_record(Record("loguru", "SUCCESS", "14:00:01", msg), ORCHESTRATOR) if isinstance(e, StepMetrics)]
        return ev

    a, b = step(1), step(2)
    assert a.values["step_time_s"] is b.values["step_time_s"] and a.values["turns"] is b.values["turns"]
    assert a.values["reward"] != b.values["reward"]
    # Zero is shared by its sign: -0.0 stays -0.0 (they are equal as dict keys).
    assert str(shared_float("-0.0")) == "-0.0" and str(shared_float("0.0")) == "0.0"
    assert shared_float("0.0") is shared_float("0.00")
    # A percentage is divided as before (0.8 / 100, not 0.8 * 0.01: they differ in the last bit).
    assert a.values["truncated"] == 0.8 / 100.0 and shared_float("0.8", True) == 0.8 / 100.0
