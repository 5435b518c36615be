"""The OpenRLHF plug-in on its own: the Ray prefix alone on its line (#350), the
Episode bar as progress, DeepSpeed's `latest` tag, and its resume."""

from __future__ import annotations

from runtop.frameworks import get
from runtop.frameworks.openrlhf import scan
from runtop.frameworks.openrlhf.parse import OpenRlhfParser, header
from runtop.parsers.checkpoints import Problem
from runtop.parsers.events import TRAINER, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.records import RecordAssembler


def events(*lines: str) -> list:
    asm = RecordAssembler(header)
    return OpenRlhfParser().parse(asm.feed(list(lines)) + asm.flush(), TRAINER)


def test_the_episode_bar_numbers_global_steps_across_episodes_and_the_job_verdict_ends_it():
    evs = events(
        "(ActorModelRayActor pid=675352)",
        "Episode [2/3]:  92%|█████████▏| 11/12 [03:32<00:19, 19.50s/it]",
        "(LLMRayActor pid=676133)",
        "Processed prompts: 100%|██████████| 16/16 [00:12<00:00,  1.23it/s]",
        "Job 'raysubmit_qwqDhBAMGu6Qi119' succeeded",
    )
    assert MaxSteps(36, "the Episode bar") in evs
    assert [e.step for e in evs if isinstance(e, StepMetrics)] == [23]  # episode 2 of 3, 11 of 12
    assert any(isinstance(e, RoleFinished) for e in evs)


def test_a_global_step_dict_maps_onto_the_registry():
    (roll, train) = [e for e in events("✨ Global step 7: {'rollout/reward_mean': 0.41, 'policy_loss': 0.02, 'timing/generate': 11.0, 'x': 1}") if isinstance(e, StepMetrics)]
    assert roll.values == {"reward": 0.41} and train.values == {"loss": 0.02}
    assert train.phases_s == {"generate": 11.0} and train.extra == {"x": 1.0}


def test_latest_names_the_last_whole_save_and_resume_adds_load_enable(tmp_path):
    for n in (4, 8):
        (tmp_path / "_actor" / f"global_step{n}").mkdir(parents=True)
    (tmp_path / "_actor" / "latest").write_text("global_step4")
    cks = scan(str(tmp_path))
    assert cks[4].complete and not cks[8].complete and cks[8].problem is Problem.NOT_NAMED
    fw = get("openrlhf")
    assert fw.resume_words(None, ["python3", "-m", "openrlhf.cli.train_ppo_ray"], 4, "x")[-1] == "--ckpt.load_enable"  # type: ignore[arg-type]
    old = ["python3", "-m", "openrlhf.cli.train_ppo_ray", "--load_checkpoint"]
    assert fw.resume_words(None, old, 4, "x") == old  # type: ignore[arg-type]
