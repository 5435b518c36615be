"""The TRL GRPOTrainer plug-in on its own: dicts without step numbers counted by the
bar, the summary as the end, tmp-checkpoints, and the resume it types."""

from __future__ import annotations

import os

from runtop.frameworks import get
from runtop.frameworks.discovery import discover
from runtop.frameworks.trl import scan
from runtop.frameworks.trl.parse import TrlParser, header
from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import RecordAssembler
from tests.paths import TESTS


def events(*lines: str) -> list:
    asm = RecordAssembler(header)
    return TrlParser().parse(asm.feed(list(lines)) + asm.flush(), TRAINER)


def test_the_bar_as_last_drawn_numbers_the_dict_printed_under_it():
    evs = events(
        "Loading checkpoint shards: 100%|██████████| 2/2 [00:02<00:00,  1.10s/it]",
        "\r  0%|          | 0/1562 [00:00<?, ?it/s]\r  0%|          | 3/1562 [18:48<164:33:29, 379.99s/it]",
        "                                                     ",
        "{'loss': -0.0684, 'grad_norm': 0.41, 'learning_rate': 1e-06, 'completions/mean_length': 312.5, 'reward': 0.61, 'epoch': 0.01}",
        "{'train_runtime': 5520.1, 'train_samples_per_second': 0.9, 'train_loss': 0.0123, 'epoch': 1.0}",
    )
    assert [e for e in evs if isinstance(e, MaxSteps)] == [MaxSteps(1562, "the progress bar")]  # not the shards' 2/2
    steps = {e.role: e for e in evs if isinstance(e, StepMetrics)}
    assert steps[ROLLOUT_SIDE].step == 3 and steps[ROLLOUT_SIDE].values == {"reward": 0.61, "seq_len": 312.5}
    assert steps[TRAINER].values == {"loss": -0.0684, "grad_norm": 0.41, "lr": 1e-06} and steps[TRAINER].extra == {"epoch": 0.01}
    assert any(isinstance(e, RoleFinished) for e in evs)


def test_without_a_bar_each_dict_is_a_step_and_eval_dicts_are_not():
    evs = events("{'loss': 0.0, 'completion_length': 232.8, 'reward': 1.7}", "{'eval_loss': 0.3, 'epoch': 0.5}",
                 "{'loss': 0.0, 'completion_length': 237.0, 'reward': 1.8}")
    assert sorted({e.step for e in evs if isinstance(e, StepMetrics)}) == [1, 2]


def test_tmp_checkpoints_are_interrupted_saves_and_a_whole_twin_wins(tmp_path):
    for name, state in (("checkpoint-4", True), ("checkpoint-8", False), ("tmp-checkpoint-12", False), ("tmp-checkpoint-4", False)):
        os.makedirs(tmp_path / name)
        if state:
            (tmp_path / name / "trainer_state.json").write_text("{}")
    cks = scan(str(tmp_path))
    assert cks[4].complete and cks[4].path.endswith("/checkpoint-4")
    assert cks[8].problem is Problem.MISSING_PART and cks[12].problem is Problem.IN_PROGRESS


def test_a_run_dir_holding_the_console_is_found_and_resumed_from_a_checkpoint(tmp_path):
    fw = get("trl")
    fw.simulator(str(tmp_path / "run"), "healthy", max_steps=4).run()
    lay = discover(str(tmp_path / "run"))
    assert (lay.framework, lay.layout) == ("trl", "console log")
    words = ["accelerate", "launch", "train_grpo.py", "--resume_from_checkpoint", "old/checkpoint-2", "--bf16"]
    assert fw.resume_words(None, words, 4, "/o/checkpoint-4") == [  # type: ignore[arg-type]
        "accelerate", "launch", "train_grpo.py", "--bf16", "--resume_from_checkpoint", "/o/checkpoint-4"]


def _steps(evs: list) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for e in evs:
        if isinstance(e, StepMetrics) and e.origin != "bar":
            out.setdefault(e.step, {}).update(e.values)
    return out


def test_current_trl_quotes_every_value_and_glues_the_dict_after_the_bars_last_frame():
    """TRL 1.16 on this machine: `100%|…| 6/6 [00:00<00:00, 20.27it/s]   {'loss': '-7.749e-07', …}`."""
    fw = get("trl")
    lines = fw.split_lines(["\r 83%|████████▎ | 5/6 [00:00<00:00, 19.9it/s]\r100%|██████████| 6/6 [00:00<00:00, 20.27it/s]   "
                            "{'loss': '-7.749e-07', 'grad_norm': '1.269', 'learning_rate': '0.0001667', 'reward': '0.1146', 'reward_std': '0.006944', 'epoch': '0.09375'}"])
    evs = events(*lines)
    assert _steps(evs) == {6: {"loss": -7.749e-07, "grad_norm": 1.269, "lr": 0.0001667, "reward": 0.1146}}


def test_a_dict_logged_before_its_tick_is_drawn_waits_for_the_bar_redrawn_after_it():
    """A step faster than tqdm's mininterval: the dict of step 10 comes while the bar still shows 0,
    and `tqdm.write` redraws the bar at 10 right after it (it was numbered step 1)."""
    evs = events("  0%|          | 0/50 [00:00<?, ?it/s]", "{'loss': 0.5, 'reward': 0.1}", " 20%|██        | 10/50 [00:01<00:04, 9.8it/s]",
                 "{'loss': 0.4, 'reward': 0.2}", " 40%|████      | 20/50 [00:02<00:03, 9.9it/s]")
    assert _steps(evs) == {10: {"loss": 0.5, "reward": 0.1}, 20: {"loss": 0.4, "reward": 0.2}}


def test_a_bar_with_no_dict_yet_is_progress_with_a_step_time():
    evs = events("\r  0%|          | 3/1562 [18:48<164:33:29, 379.99s/it]")
    bar = [e for e in evs if isinstance(e, StepMetrics)]
    assert [(e.step, e.values) for e in bar] == [(3, {"step_time_s": 379.99})] and MaxSteps(1562, "the progress bar") in evs


def test_the_recorded_real_run_replays_into_a_run_runtop_reads_as_it_was(tmp_path):
    """tests/real/replay.py writes the recorded genuine TRL run step by step: read at the end,
    it is the case's own verdict, steps and checkpoints."""
    import subprocess
    import sys

    from runtop.engine.snapshot import read_and_judge

    replay = os.path.join(str(TESTS), "real", "replay.py")
    out = tmp_path / "grpo-replay"
    r = subprocess.run([sys.executable, replay, str(out), "--step-seconds", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    state, verdict = read_and_judge(str(out), disks=False, gpus=False)
    assert verdict.verdict == "Down" and verdict.reasons[0].startswith("trainer died: ConnectionError"), verdict.reasons
    assert state.framework == "trl" and state.trainer_step == 4 and state.max_steps == 8
    assert sorted(s for s, c in state.checkpoints.items() if c.complete) == [2, 4]
    r = subprocess.run([sys.executable, replay, str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "exists" in r.stderr


def test_a_save_being_written_while_the_trainer_lives_is_no_incomplete_checkpoint(tmp_path):
    """TRL writes `checkpoint-N/` in place: mid-save it lacks `trainer_state.json`. While the
    trainer lives and no step came after it, that is a save in progress, not a Degraded run;
    with no process left, the same dir is a save that never finished."""
    import time

    from runtop.config import Thresholds
    from runtop.engine.snapshot import read_run
    from runtop.rules.health import judge
    from runtop.rules.registry import Facts

    root = tmp_path / "run"
    get("trl").simulator(str(root), "healthy", max_steps=4).run()
    state = read_run(str(root), processes=False)
    newest = max(state.checkpoints)
    os.remove(os.path.join(state.checkpoints[newest].path, "trainer_state.json"))
    state = read_run(str(root), processes=False)
    assert not state.checkpoints[newest].complete and (state.trainer_step or 0) <= newest
    state.processes = {"trainer": [4242]}
    v = judge(state, Facts(state, time.time(), Thresholds()))
    assert not [f for f in v.alerts if f.rule == "checkpoint_incomplete"], v.reasons
    state.processes = {}
    v = judge(state, Facts(state, time.time(), Thresholds()))
    assert [f for f in v.alerts if f.rule == "checkpoint_incomplete"], v.reasons
