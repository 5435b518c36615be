"""A run that says it is evaluating or saving is alive though no step comes: each framework's
words for it (parsers/pauses.py), and the replayed runs that pause that way without an alarm
(docs/reading.md, "Stalls, at the run's own pace")."""

from __future__ import annotations

from runtop.parsers.events import CheckpointSave, Phase
from runtop.parsers.pauses import pauses_in
from runtop.playback.replay import Habits
from tests.replays import STALL, replay


def test_each_frameworks_words_for_an_evaluation_and_a_save_are_read_as_a_pause():
    said = {
        "Evaluation Progress:  40%|████      | 2/5 [03:12<04:48, 96.10s/it]": Phase("eval", True, None, progress=(2, 5)),
        "Evaluation Progress: 100%|██████████| 5/5 [08:00<00:00, 96.10s/it]": Phase("eval", False, None, progress=(5, 5)),
        "test_gen_batch meta info: {'eos_token_id': 151645, 'validate': True}": Phase("eval", True, None),
        "validation generation end": Phase("eval", True, None),
        "▶ Starting validation at step 40...": Phase("eval", True, None),
        "📊 Validation Results:": Phase("eval", False, None),
        "Saving checkpoint for step 40...": CheckpointSave("trainer", 40),
        "local_global_step_folder: checkpoints/gsm8k/qwen/global_step_40": CheckpointSave("trainer", 40),
        "Saving model checkpoint to out/checkpoint-40": CheckpointSave("trainer", 40),
    }
    for message, event in said.items():
        assert pauses_in(message, None) == [event], message
    for other in ("Step 40 | 31.0s | Reward 0.5", "Train batch 32/128 (25.0%); 96 inflight episodes (train=96, eval=0)",
                  "Training Progress:  20%|██        | 40/200 [40:00<2:40:00, 60.0s/it]", "validation loss went up"):
        assert pauses_in(other, None) == [], other


def test_a_verl_evaluation_of_twelve_step_times_that_prints_its_validation_batches_raises_no_alarm():
    """Without its words read, the logs going on with no step for ten minutes made it Degraded."""
    out = replay("verl", 44, habits=Habits(eval_steps=(11.0, 12.0), tail_p=0.0))
    assert not out.alarms(STALL, False) and not out.alarms(STALL, True), [(round(f.at), f.message) for f in out.findings if f.rule in STALL]


def test_a_first_save_whose_files_grow_for_twelve_minutes_raises_no_alarm():
    """The first save's length is not known yet (it was allowed ten minutes): its files growing say it is alive."""
    out = replay("trl", 26, habits=Habits(save_steps=(50.0, 52.0), tail_p=0.0))
    assert out.seconds > 20 * 60
    assert not out.alarms(STALL, False) and not out.alarms(STALL, True), [(round(f.at), f.message) for f in out.findings if f.rule in STALL]


def test_a_trl_log_first_seen_at_its_first_8k_block_is_not_called_stalled_while_its_next_block_fills():
    out = replay("trl", 120, habits=Habits(buffered=True, tail_p=0.0))
    assert not out.alarms(STALL, False) and not out.alarms(STALL, True), [(round(f.at), f.message) for f in out.findings if f.rule in STALL]
