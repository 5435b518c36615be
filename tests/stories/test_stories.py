"""What a researcher sees for each failure in docs/incidents.md, on simulated runs."""

from __future__ import annotations

from runtop.engine.snapshot import read_and_judge
from runtop.outputs.report import to_markdown
from runtop.outputs.report_json import to_json


def verdict(root):
    """The run read once and judged by the engine, as `runtop check` judges it; this machine's
    disks and GPUs are no part of the story."""
    return read_and_judge(root, disks=False, gpus=False)


def test_a_healthy_run_finishes_finished(simulated):
    state, v = verdict(simulated("healthy", max_steps=6))
    assert v.verdict == "Finished" and state.trainer_step == 6 and state.max_steps == 6
    assert all(state.steps[s].value("reward") is not None for s in range(1, 7))
    assert state.last_complete_checkpoint().step == 6


def test_the_trainer_dies_of_oom_and_runtop_says_down_naming_it(simulated):
    state, v = verdict(simulated("trainer-oom", max_steps=20, fail_step=6))
    assert v.verdict == "Down"
    assert "trainer died: torch.OutOfMemoryError" in v.reasons[0]
    assert (state.trainer_step, state.rollout_step) == (5, 6)
    assert v.alerts[0].rule == "crash" and v.alerts[0].severity == "critical"


def test_the_inference_engine_dies_while_the_trainer_waits_runtop_says_down_naming_vllm(simulated):
    state, v = verdict(simulated("inference-death", max_steps=20, fail_step=4))
    assert v.verdict == "Down"
    # EngineCore's own exception is named; the API server's EngineDeadError only reported it.
    assert v.reasons[0].startswith("inference server (vLLM) died: CUDAIllegalMemoryAccess (RuntimeError: CUDA error: an illegal memory access")
    assert "in EngineCore_DP0" in v.reasons[0]
    assert "reported as EngineDeadError" in v.reasons[0]
    assert state.warnings["inference_unreachable"] >= 3


def test_rollouts_hung_on_max_tokens_are_named(simulated):
    state, v = verdict(simulated("rollouts-hung"))
    assert v.verdict == "Degraded" and "max_tokens" in v.reasons[0]
    assert state.batch.done == 0 and state.warnings["ulimit"] == 1


def test_a_failed_save_on_a_full_disk(simulated):
    state, v = verdict(simulated("disk-filling", max_steps=10, fail_step=4))
    assert v.verdict == "Down" and "OSError" in v.reasons[0]
    assert state.last_complete_checkpoint().step == 2 and not state.checkpoints[4].complete


def test_a_run_that_just_went_quiet_is_not_called_down(simulated):
    """A run whose last write is seconds old is not stalled yet, whatever step it stopped at:
    the stall rule waits its time (docs/reading.md), and no process was ever seen to go."""
    state, v = verdict(simulated("stalled", max_steps=20, fail_step=5))
    assert v.verdict == "Healthy" and state.rollout_step == 4


def test_status_json_has_the_documented_keys_and_null_for_unknown(simulated):
    doc = to_json(*verdict(simulated("trainer-oom", max_steps=20, fail_step=6)))
    for key in ("framework", "layout", "path", "health", "progress", "steps", "checkpoints", "rollouts", "slow_calls", "context_overflows", "errors", "alerts"):
        assert key in doc, key
    assert set(doc["progress"]) >= {"trainer_step", "rollout_step", "max_steps", "eta_s", "attempt"}
    last = doc["steps"][-1]
    assert last["step"] == 6 and last["reward"] is not None and last["loss"] is None  # the trainer never logged step 6
    assert set(doc["rollouts"]) >= {"total", "errored", "truncated", "format_failures", "pass_rates"}
    assert doc["errors"][0]["kind"] == "torch.OutOfMemoryError" and doc["errors"][0]["source"] == "logs/attempt_1/trainer.log"


def test_the_checkin_has_the_runbook_shape(simulated):
    md = to_markdown(*verdict(simulated("healthy", max_steps=6, stop_after=4)))
    lines = md.splitlines()
    assert lines[0].startswith("## ") and lines[0].endswith(" UTC")
    for head in ("**Step**: 4/6", "**Health**: Healthy", "**Progress**:", "**Stability**:", "**Performance**:"):
        assert any(line.startswith(head) for line in lines), head


def test_streamed_json_equals_the_document(simulated):
    import io
    import json

    from runtop.outputs.report_json import write_json

    state, v = verdict(simulated("healthy", max_steps=5))
    buf = io.StringIO()
    write_json(state, buf, v)
    streamed, built = json.loads(buf.getvalue()), to_json(state, v)
    streamed.pop("generated_at"), built.pop("generated_at")
    assert streamed == built


def test_every_rollout_fails_with_one_error_and_the_batch_never_moves_runtop_says_down_naming_it(simulated):
    """No ERROR anywhere: the orchestrator warns `Rollout failed … HarnessError` and retries,
    the env server says `stop=HarnessError`, the batch stays at 0 (docs/formats.md)."""
    state, v = verdict(simulated("rollouts-failing", max_steps=20))
    assert v.verdict == "Down"
    assert v.reasons[0].startswith("stuck: 20 of the last 20 rollouts failed with HarnessError (harness 'null' exited 1)")
    assert "batch at 0/128" in v.reasons[0]
    stuck = next(a for a in v.alerts if a.rule == "rollouts_failing")
    assert stuck.cause == "HarnessError" and stuck.down
