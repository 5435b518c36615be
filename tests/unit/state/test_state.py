"""The state's reducers, one event at a time (tests mirror the folders).

Each test is a small story of what a run's logs say and what runtop must then believe.
"""

from __future__ import annotations

from runtop.parsers.events import (
    ORCHESTRATOR,
    TRAINER,
    AttemptStart,
    CheckpointSave,
    Notice,
    Resumed,
    RoleFinished,
    StepMetrics,
    Waiting,
)
from runtop.state.parts import FileInfo
from runtop.state.run import RunState


def _state() -> RunState:
    s = RunState(path="/runs/r1", framework="prime-rl")
    s.files["logs/trainer.log"] = FileInfo("logs/trainer.log", TRAINER, "log")
    return s


def test_a_structured_row_outranks_the_log_line_whichever_comes_first():
    """metrics.jsonl's full-precision loss wins over the log's rounded one, read before or after."""
    s = _state()
    s.apply(StepMetrics(TRAINER, 3, {"loss": 0.0123}, origin="metrics"), "metrics.jsonl")
    s.apply(StepMetrics(TRAINER, 3, {"loss": 0.01}, origin="log"), "logs/trainer.log")
    assert s.steps[3].value("loss") == 0.0123
    s.apply(StepMetrics(TRAINER, 4, {"loss": 0.02}, origin="log"), "logs/trainer.log")
    s.apply(StepMetrics(TRAINER, 4, {"loss": 0.0234}, origin="metrics"), "metrics.jsonl")
    assert s.steps[4].value("loss") == 0.0234


def test_the_rollout_side_and_the_trainer_fill_one_row_each_with_its_own_numbers():
    s = _state()
    s.apply(StepMetrics(ORCHESTRATOR, 5, {"reward": 0.6, "step_time_s": 31.0}), "logs/orchestrator.log")
    s.apply(StepMetrics(TRAINER, 5, {"loss": 0.01, "step_time_s": 35.0}), "logs/trainer.log")
    row = s.steps[5]
    assert row.value("reward") == 0.6 and row.value("loss") == 0.01
    assert row.value("step_time_s") == 35.0  # the trainer's clock: one column never mixes two
    assert (s.trainer_step, s.rollout_step, s.current_step()) == (5, 5, 5)


def test_the_rollout_side_moving_on_clears_its_wait_and_the_failed_rollouts_since():
    s = _state()
    s.apply(Waiting(ORCHESTRATOR, "inference server"), "logs/orchestrator.log")
    assert s.waiting == {ORCHESTRATOR: "inference server"}
    s.apply(StepMetrics(ORCHESTRATOR, 2, {"reward": 0.5}), "logs/orchestrator.log")
    assert s.waiting == {} and not s.rollouts_since_step


def test_a_resume_from_step_2_marks_later_rows_of_the_old_attempt_lost():
    s = _state()
    for step in (1, 2, 3, 4):
        s.apply(StepMetrics(TRAINER, step, {"loss": 0.1 * step}), "logs/trainer.log")
    s.apply(AttemptStart(2, "relaunch"), "logs/trainer.log")
    s.apply(Resumed(TRAINER, 2), "logs/trainer.log")
    assert s.attempt == 2 and s.attempts[-1].resumed_from == 2
    assert s.step_keys() == [1, 2]
    assert sorted(r.step for r in s.lost_steps) == [3, 4] and all(r.superseded for r in s.lost_steps)
    s.apply(StepMetrics(TRAINER, 3, {"loss": 0.33}), "logs/trainer.log")
    assert s.steps[3].attempt == 2 and s.steps[3].value("loss") == 0.33


def test_an_attempt_that_has_not_stepped_is_not_opened_twice():
    """Several logs are replaced at once on a relaunch: only the first opens an attempt."""
    s = _state()
    s.apply(StepMetrics(TRAINER, 1, {"loss": 0.1}), "logs/trainer.log")
    assert s.new_attempt("trainer.log replaced") is True
    assert s.new_attempt("orchestrator.log replaced") is False
    assert s.attempt == 2


def test_a_fatal_error_is_the_files_death_until_the_role_works_again():
    s = _state()
    s.apply(Notice(TRAINER, "ERROR", "torch.OutOfMemoryError", "CUDA out of memory", "14:00:01", fatal=True), "logs/trainer.log")
    s.apply(Notice(TRAINER, "ERROR", "ChildFailedError", "torchrun: rank 0 failed", "14:00:02", fatal=True, wrapper=True), "logs/trainer.log")
    info = s.files["logs/trainer.log"]
    assert info.fatal is not None and info.fatal.kind == "torch.OutOfMemoryError"
    assert [e.kind for e in info.fatals] == ["torch.OutOfMemoryError", "ChildFailedError"]
    assert s.open_fatals() and s.error_count == 2
    s.apply(StepMetrics(TRAINER, 7, {"loss": 0.1}), "logs/trainer.log")  # it works again
    assert info.active_after_fatal and not s.open_fatals()


def test_warnings_are_counted_by_kind_and_keep_their_last_words():
    s = _state()
    for n in (1, 2, 3):
        s.apply(Notice(ORCHESTRATOR, "WARNING", "inference_unreachable", f"not reached after {10 * n} seconds"), "o")
    assert s.warnings["inference_unreachable"] == 3
    assert s.last_warning["inference_unreachable"] == "not reached after 30 seconds"


def test_a_death_after_the_end_is_teardown_and_a_death_before_it_is_not_an_end():
    """Finished is final (a SIGSEGV at exit, vLLM stopped under a finished run); a death that
    came first stays the run's, whatever the logs say after it."""
    s = _state()
    s.apply(RoleFinished(TRAINER), "logs/trainer.log")
    assert s.run_finished()
    s.apply(Notice(TRAINER, "ERROR", "RuntimeError", "boom", fatal=True), "logs/trainer.log")
    assert s.run_finished() and s.open_fatals()[0].after_finish
    dead = _state()
    dead.apply(Notice(TRAINER, "ERROR", "RuntimeError", "boom", fatal=True), "logs/trainer.log")
    dead.apply(RoleFinished("orchestrator"), "logs/orchestrator.log")
    assert not dead.run_finished()


def test_a_save_stays_open_until_a_step_comes_after_it():
    s = _state()
    s.apply(CheckpointSave(TRAINER, 4), "logs/trainer.log")
    assert s._saving == {TRAINER: 4}
    s.apply(StepMetrics(TRAINER, 4, {"loss": 0.1}), "logs/trainer.log")
    assert s._saving == {TRAINER: 4}  # the save's own step: still saving
    s.apply(StepMetrics(TRAINER, 5, {"loss": 0.1}), "logs/trainer.log")
    assert s._saving == {} and s.last_save == {TRAINER: 4}


def test_a_published_view_never_sees_a_later_write_and_a_headless_read_keeps_no_marks():
    from runtop.view.publish import Publisher

    s = _state()
    s.apply(StepMetrics(TRAINER, 1, {"loss": 0.1}), "t")
    frozen = Publisher().freeze(s)
    s.apply(StepMetrics(TRAINER, 2, {"loss": 0.1}), "t")
    s.apply(StepMetrics(TRAINER, 1, {"loss": 0.2}), "t")
    assert frozen.steps[1].value("loss") == 0.1 and 2 not in frozen.steps and frozen.step_keys() == [1]
    assert s.steps[1].value("loss") == 0.2 and s.step_keys() == [1, 2]
    assert s._dirty_steps == set()  # nobody collects rows of it (a headless read): no marks
