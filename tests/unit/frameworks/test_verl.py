"""The verl plug-in on its own: step lines in every shape users posted, its
checkpoints' completeness, discovery and the resume it types."""

from __future__ import annotations

import os

import pytest

from runtop.frameworks import get
from runtop.frameworks.discovery import discover
from runtop.frameworks.verl.ckpt import judge
from runtop.frameworks.verl.parse import VerlParser, header
from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import RecordAssembler


def events(*lines: str) -> list:
    asm = RecordAssembler(header)
    recs = asm.feed(list(lines)) + asm.flush()
    return VerlParser().parse(recs, TRAINER)


def test_step_lines_with_and_without_the_ray_prefix_are_one_step_each():
    """verl#7412 (`(TaskRunner pid=N) step:34 - …`), #316 (`(main_task pid=N)`), #2060 (no prefix,
    `step:0` validation only): three steps, none glued to the one before."""
    evs = events(
        "(TaskRunner pid=7) step:0 - val-core/openai/gsm8k/acc/mean@1:0.508",
        "(TaskRunner pid=7) step:1 - actor/entropy:0.323 - actor/pg_loss:0.001 - critic/score/mean:0.558 - response_length/clip_ratio:0.000 - timing_s/gen:29.641 - timing_s/step:96.551 - prompt_length/mean:362.969",
        "(TaskRunner pid=7) step:2 - actor/entropy_loss:0.554 - actor/ppo_kl:-8.163164312320433e-06 - critic/score/mean:0.6",
        "(main_task pid=51520) step:3 - critic/score/mean:0.7 - actor/grad_norm:0.180",
        "step:4 - critic/score/mean:0.71",
    )
    steps = [e for e in evs if isinstance(e, StepMetrics)]
    assert sorted({e.step for e in steps}) == [1, 2, 3, 4]  # step 0 is validation, not training
    one = {e.role: e for e in steps if e.step == 1}
    assert one[ROLLOUT_SIDE].values == {"reward": 0.558, "truncated": 0.0}
    assert one[TRAINER].values == {"entropy": 0.323, "loss": 0.001, "step_time_s": 96.551}
    assert one[TRAINER].phases_s == {"gen": 29.641} and one[TRAINER].extra == {"prompt_length/mean": 362.969}
    two = {e.role: e for e in steps if e.step == 2}
    assert two[TRAINER].values == {"entropy": 0.554, "kl": -8.163164312320433e-06}  # the older `entropy_loss`


def test_the_bar_gives_the_total_and_final_validation_the_end():
    evs = events(
        "(TaskRunner pid=7) Training Progress:   6%|▌         | 12/200 [17:38<4:36:12, 88.2s/it]",
        "(TaskRunner pid=7) Final validation metrics: {'val-core/openai/gsm8k/acc/mean@1': 0.61}",
    )
    assert MaxSteps(200, "the Training Progress bar") in evs and any(isinstance(e, RoleFinished) for e in evs)


def test_a_checkpoint_is_judged_against_the_tracker_and_async_saves_are_untracked():
    whole = {"actor/model_world_size_2_rank_0.pt": 10, "actor/model_world_size_2_rank_1.pt": 10, "data.pt": 1}
    assert judge(10, whole, 10).complete
    late = judge(10, whole, 5)
    assert not late.complete and late.problem is Problem.NOT_NAMED
    untracked = judge(10, whole, None)
    assert untracked.complete and untracked.problem is Problem.UNTRACKED and "resume_mode=auto" in untracked.reason
    assert judge(10, {"actor/huggingface/config.json": 10, "data.pt": 1}, None).problem is Problem.FAILED_SAVE
    assert judge(10, {"actor/model_world_size_1_rank_0.pt": 10}, 10).problem is Problem.MISSING_PART
    assert judge(10, {**whole, "actor/model_world_size_2_rank_0.pt.tmp": 1}, 10).problem is Problem.IN_PROGRESS


def test_a_run_dir_holding_the_log_is_found_and_resumed_by_path(tmp_path):
    fw = get("verl")
    fw.simulator(str(tmp_path / "run"), "healthy", max_steps=3).run()
    lay = discover(str(tmp_path / "run"))
    assert (lay.framework, lay.layout, lay.root) == ("verl", "driver log", str(tmp_path / "run"))
    words = ["python3", "-m", "verl.trainer.main_ppo", "trainer.resume_mode=auto", "trainer.total_training_steps=3"]
    out = fw.resume_words(None, words, 3, "/ck/global_step_3")  # type: ignore[arg-type]
    assert out == ["python3", "-m", "verl.trainer.main_ppo", "trainer.total_training_steps=3",
                   "trainer.resume_mode=resume_path", "trainer.resume_from_path=/ck/global_step_3"]
    assert os.path.isfile(tmp_path / "run" / "checkpoints" / "gsm8k" / "qwen3-0.6b-grpo" / "latest_checkpointed_iteration.txt")


def test_the_file_loggers_rows_are_read_and_a_relaunch_that_truncates_them_is_a_new_attempt(tmp_path):
    """verl's file logger opens its JSONL with mode `wb`: a relaunch truncates it. That is a
    new attempt, and the steps already read stay (docs/formats.md, verl)."""
    import json

    from runtop.engine.reader import RunReader
    from runtop.engine.snapshot import read_all

    path = tmp_path / "exp.jsonl"
    rows = lambda steps, r: "".join(json.dumps({"step": s, "data": {"critic/score/mean": r + s / 100, "actor/entropy": 0.5, "timing_s/gen": 40.0}}) + "\n" for s in steps)  # noqa: E731
    path.write_text(rows(range(1, 7), 0.4))
    lay = discover(str(path))
    assert (lay.framework, lay.layout) == ("verl", "file logger")
    reader = RunReader(lay)
    read_all(reader)
    st = reader.state
    assert st.current_step() == 6 and st.steps[3].rollout["reward"] == pytest.approx(0.43) and st.steps[3].phases_s == {"gen": 40.0}
    assert st.steps[3].origin == {"rollout.reward": "metrics", "trainer.entropy": "metrics"}
    path.write_text(rows(range(5, 7), 0.6))  # resumed from step 4: the file starts over
    reader.poll(max_bytes=1 << 20, rescan_every=float("inf"), ckpt_every=float("inf"))
    assert len(st.attempts) == 2 and "exp.jsonl" in st.attempts[-1].reason
    assert st.steps[5].attempt == 2 and st.steps[5].rollout["reward"] == pytest.approx(0.65) and st.steps[2].rollout["reward"] == pytest.approx(0.42)
