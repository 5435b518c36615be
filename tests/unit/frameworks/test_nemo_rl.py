"""The NeMo-RL plug-in on its own: step blocks read line by line whatever Ray's
lines cut them into, timing bullets as phases, tmp_step saves, and its automatic resume."""

from __future__ import annotations

from runtop.frameworks import get
from runtop.frameworks.nemo_rl import scan
from runtop.frameworks.nemo_rl.parse import NemoRlParser, header
from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import RecordAssembler


def events(*lines: str) -> list:
    asm = RecordAssembler(header)
    return NemoRlParser().parse(asm.feed(list(lines)) + asm.flush(), TRAINER)


def test_a_step_block_cut_by_a_workers_line_is_read_whole():
    evs = events(
        "========================= Step 2/2 =========================",
        "▶ Generating responses for batch of size 64...",
        "(VllmGenerationWorker pid=7) INFO 08-21 14:01:07 [loggers.py:118] Engine 000: Running: 64 reqs, Waiting: 0 reqs",
        "📊 Training Results:",
        "  • Loss: 0.0123",
        "  • Avg Reward: 0.6100",
        "  • Mean Generation Length: 412.3000",
        "⏱️  Timing:",
        "  • Total step time: 88.10s",
        "  • generation: 60.20s (68.3%)",
    )
    assert MaxSteps(2, "the Step N/M header") in evs
    steps = [e for e in evs if isinstance(e, StepMetrics)]
    assert {e.step for e in steps} == {2}
    merged = {(e.role, k): v for e in steps for k, v in {**e.values, **e.phases_s}.items()}
    assert merged == {(TRAINER, "loss"): 0.0123, (ROLLOUT_SIDE, "reward"): 0.61, (ROLLOUT_SIDE, "seq_len"): 412.3,
                      (TRAINER, "step_time_s"): 88.1, (TRAINER, "generation"): 60.2}
    assert any(isinstance(e, RoleFinished) for e in evs)  # the last step's timing: the loop is done


def test_tmp_step_is_an_interrupted_save_and_resume_is_the_same_command(tmp_path):
    for name, whole in (("step_4", True), ("step_6", False), ("tmp_step_8", False)):
        (tmp_path / name).mkdir()
        if whole:
            (tmp_path / name / "training_info.json").write_text("{}")
    cks = scan(str(tmp_path))
    assert cks[4].complete and cks[6].problem is Problem.MISSING_PART and cks[8].problem is Problem.IN_PROGRESS
    words = ["uv", "run", "examples/run_grpo_math.py", "--config", "c.yaml"]
    assert get("nemo-rl").resume_words(None, words, 4, "x") == words  # type: ignore[arg-type]
