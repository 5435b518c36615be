"""Every prime-rl line form in docs/formats.md, across the four layout generations."""

from __future__ import annotations

import pytest

from runtop.parsers.events import BatchProgress, CheckpointSave, MaxSteps, Notice, Resumed, RoleFinished, StepMetrics, Waiting
from runtop.parsers.text import parse_duration
from tests.helpers import events_of

ESC = "\x1b"


def only(events, cls):
    found = [e for e in events if isinstance(e, cls)]
    assert len(found) == 1, events
    return found[0]


@pytest.mark.parametrize(
    "line, expected",
    [
        # main (2026-08)
        ("14:01:58 SUCCESS Step 1 |   31.0s | Reward 0.5412 | Trainable 112/128 (87.5%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 0 | Error 0.0% | Cancelled 0.0% | Truncation 0.8%",
         {"reward": 0.5412, "step_time_s": 31.0, "truncated": 0.008, "error_rate": 0.0, "turns": 1.0}),
        # v0.7–v0.8: no Cancelled
        ("14:01:58 SUCCESS Step 7 | 1m 18s | Reward 0.61 | Trainable 100/128 (78.1%) | Turns 2.0 | Branches 1.0 | Max Off-Policy 1 | Error 1.6% | Truncation 0.0%",
         {"reward": 0.61, "step_time_s": 78.0, "error_rate": 0.016}),
        # v0.6: no Branches
        ("14:01:58 SUCCESS Step 3 | 2h 5m | Reward 0.3 | Trainable 10/16 (62.5%) | Turns 1.0 | Max Off-Policy 0 | Error 0.0% | Truncation 0.0%",
         {"reward": 0.3, "step_time_s": 7500.0}),
        # v0.5: colons and other fields
        ("14:01:58 SUCCESS Step 28 | Time: 73.77s | Reward: 0.3887 | Throughput: 2408.9 tokens/s | Seq. Length: 345.6 tokens/sample | Async Level: 1 | Max. Off-Policy Level: 0",
         {"reward": 0.3887, "step_time_s": 73.77, "seq_len": 345.6, "async_level": 1.0, "off_policy_max": 0.0}),
    ],
)
def test_rollout_step_lines_of_every_generation(line, expected):
    ev = only(events_of(line), StepMetrics)
    assert ev.role == "orchestrator"
    for k, v in expected.items():
        assert ev.values[k] == pytest.approx(v), k


@pytest.mark.parametrize(
    "line, expected",
    [
        ("[trainer0]:14:02:33 SUCCESS Step 1 |  1m 18s | Loss 0.0031 | Entropy 0.4127 | Mismatch KL 0.0009 | Grad. Norm 0.2113 | LR 3.00e-06 | Throughput 14872 tokens/s | MFU 9.8% | Peak Mem. 31.6 GiB",
         {"step_time_s": 78.0, "loss": 0.0031, "entropy": 0.4127, "kl": 0.0009, "grad_norm": 0.2113, "lr": 3e-06, "throughput_tok_s": 14872, "mfu": 9.8, "peak_mem_gib": 31.6}),
        # optional fields absent, extra MoE fields present
        ("14:02:33 SUCCESS Step 9 | 412ms | Loss -0.5 | Entropy 1.2 | LR 1.00e-05 | Throughput 100 tokens/s | MFU 1.0% | Peak Mem. 10.0 GiB | Max Vio 0.3 | Routing Conf. 0.9",
         {"step_time_s": 0.412, "loss": -0.5, "max_vio": 0.3, "routing_conf": 0.9}),
        # v0.5 colons
        ("14:02:33 SUCCESS Step 28 | Time: 1d 3h | Loss: 0.01 | Entropy: 0.4 | Grad. Norm: 0.2 | LR: 3.00e-06 | Throughput: 2408.9 tokens/s | MFU: 9.8% | Peak Mem.: 31.6 GiB",
         {"step_time_s": 97200.0, "loss": 0.01, "grad_norm": 0.2}),
    ],
)
def test_trainer_step_lines(line, expected):
    ev = only(events_of(line, "trainer"), StepMetrics)
    assert ev.role == "trainer"
    for k, v in expected.items():
        assert ev.values[k] == pytest.approx(v), k


def test_colour_codes_and_torchrun_prefix_are_stripped():
    line = f"[trainer0]:{ESC}[2m14:02:33{ESC}[0m {ESC}[32m{ESC}[1mSUCCESS{ESC}[0m {ESC}[32m{ESC}[1m{ESC}[22mStep 4 |   38.0s | Loss 0.0009 | Entropy 0.3921{ESC}[0m{ESC}[0m"
    ev = only(events_of(line, "trainer"), StepMetrics)
    assert (ev.step, ev.values["entropy"], ev.time) == (4, 0.3921, "14:02:33")


def test_multi_env_continuation_lines_join_their_step():
    text = (
        "14:01:58 SUCCESS Step 5 | 30.0s | Reward 0.5 | Trainable 1/2 (50.0%) | Turns 1.0 | Error 0.0% | Truncation 0.0%\n"
        "\t\t ╰─ math | Ratio 0.50 | Reward 0.7 | Turns 1.0\n"
        "\t\t ╰─ code | Ratio 0.50 | Reward 0.3 | Turns 2.0\n"
    )
    ev = only(events_of(text), StepMetrics)
    assert ev.extra["math/reward"] == 0.7 and ev.extra["code/turns"] == 2.0


@pytest.mark.parametrize("text, seconds", [("412ms", 0.412), ("31.0s", 31.0), ("1m 18s", 78.0), ("2h 5m", 7500.0), ("1d 3h", 97200.0), ("soon", None), ("", None)])
def test_compact_durations(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_train_batch_line():
    ev = only(events_of("14:01:47    INFO Train batch 80/128 (62.5%) (+16 buffered); 112 inflight episodes (train=112, eval=0)"), BatchProgress)
    assert (ev.done, ev.total, ev.buffered, ev.inflight) == (80, 128, 16, 112)


@pytest.mark.parametrize(
    "line, kind, fatal",
    [
        ("14:00:24 WARNING Inference server was not reached after 10 seconds (Error: All connection attempts failed) on http://localhost:8100", "inference_unreachable", False),
        ("14:02:43 WARNING Trace failed in group 6513270e (reverse-text) — ProviderError: Request timed out.", "trace_failed:ProviderError", False),
        ("14:03:59 WARNING Dropped 2 queued traces past max_off_policy_steps=1. Consider increasing it to avoid this.", "dropped_traces", False),
        ("14:03:59 WARNING Step 7: empty train batch after 3 retries", "empty_batch", False),
        ("14:10:00   ERROR Inference server is not ready after 600 seconds. Aborting...", "inference_not_ready", True),
    ],
)
def test_orchestrator_warnings_and_errors(line, kind, fatal):
    ev = only(events_of(line), Notice)
    assert (ev.kind, ev.fatal) == (kind, fatal)


def test_fatal_error_names_the_exception_of_its_traceback():
    text = (
        "14:05:20   ERROR Fatal error in train\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 6, in _model\n'
        "    raise OutOfMemoryError(OOM)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB.\n"
    )
    ev = only(events_of(text, "trainer"), Notice)
    assert ev.kind == "torch.OutOfMemoryError" and ev.fatal and "Tried to allocate" in ev.message


def test_orchestrator_fatal_error():
    text = "14:05:20   ERROR Fatal error in run_orchestrator\nTraceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: boom\n"
    ev = only(events_of(text), Notice)
    assert (ev.kind, ev.fatal) == ("RuntimeError", True)


def test_torchrun_failure_line_is_fatal_for_the_trainer():
    ev = only(events_of("E0821 14:05:23.118000 2210431 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 0 (pid: 1) of binary: python3", "trainer"), Notice)
    assert ev.fatal and ev.time == "14:05:23"


@pytest.mark.parametrize(
    "line, cls, check",
    [
        ("14:01:27    INFO Starting orchestrator loop (max_steps=20)", MaxSteps, lambda e: e.value == 20),
        ("14:01:15    INFO Starting training loop (max_steps=300)", MaxSteps, lambda e: e.value == 300),
        ("14:01:15    INFO Resuming training from checkpoint step 4", Resumed, lambda e: e.step == 4),
        ("14:02:13    INFO Saving checkpoint at step 2", CheckpointSave, lambda e: e.step == 2),
        ("14:02:13    INFO Pausing dispatcher to prevent orchestrator from racing from trainer. Waiting for new policy...", Waiting, lambda e: e.on == "policy"),
        ("14:02:35    INFO Resuming dispatcher", Waiting, lambda e: e.on == ""),
        ("14:09:00 SUCCESS RL trainer finished!", RoleFinished, lambda e: e.role == "trainer"),
        ("14:09:00 SUCCESS Orchestrator finished.", RoleFinished, lambda e: e.role == "orchestrator"),
    ],
)
def test_lifecycle_lines(line, cls, check):
    assert check(only(events_of(line), cls))


def test_debug_suffix_and_json_logging():
    ev = only(events_of("14:01:47   DEBUG Train batch 8/16 (50.0%); 3 inflight episodes [scheduler.py::123]"), BatchProgress)
    assert ev.done == 8
    js = '{"timestamp": "2026-08-21T14:01:58.1", "level": "SUCCESS", "message": "Step 2 | 15.0s | Reward 0.5788 | Trainable 120/128 (93.8%)", "module": "m", "function": "f", "line": 1}'
    ev = only(events_of(js), StepMetrics)
    assert (ev.step, ev.values["reward"], ev.time) == (2, 0.5788, "14:01:58")


def test_a_bare_traceback_is_a_fatal_error_of_the_file_role():
    text = "Traceback (most recent call last):\n  File \"launch.py\", line 3\nKeyError: 'trainer'\n"
    ev = only(events_of(text, "orchestrator"), Notice)
    assert (ev.kind, ev.fatal) == ("KeyError", True)
