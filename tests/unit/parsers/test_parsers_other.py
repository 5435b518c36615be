"""metrics.jsonl, rollouts, env servers, vLLM, configs and checkpoints."""

from __future__ import annotations

import json

import pytest

from runtop.parsers import metrics_jsonl, rollouts
from runtop.parsers.checkpoints import judge_primerl
from runtop.parsers.configs import parse_config
from runtop.parsers.events import EnvLag, Notice, RolloutDone, RolloutStart, StepMetrics, Unrecognised, VllmStats
from runtop.parsers.text import redact
from tests.helpers import events_of


def test_metrics_rows_are_attributed_to_their_role():
    orch = metrics_jsonl.parse_line(json.dumps({"step": 3, "train/agg/effective/agent/reward/mean": 0.6, "train/agg/all/agent/is_truncated/mean": 0.01, "time/step": 36.0, "time/wait_for_policy": 21.3}))
    tr = metrics_jsonl.parse_line(json.dumps({"step": 3, "time/step": 35.0, "time/wait_for_batch": 0.2, "time/forward_backward": 17.6}))
    assert isinstance(orch, StepMetrics) and orch.role == "orchestrator"
    assert orch.values == {"reward": 0.6, "truncated": 0.01, "step_time_s": 36.0}
    assert orch.phases_s == {"wait_for_policy": 21.3}
    assert tr.role == "trainer" and tr.values["step_time_s"] == 35.0 and tr.phases_s["forward_backward"] == 17.6


def test_legacy_metric_names():
    ev = metrics_jsonl.parse_line('{"step": 1, "reward/all/mean": 0.4, "seq_len/all/mean": 300}')
    assert ev.values["reward"] == 0.4 and ev.values["seq_len"] == 300


@pytest.mark.parametrize("line", ['{"time": 1}', "[1,2]", "{not json", '{"step": 1, "foo": 2}', '{"step": "x"}'])
def test_metrics_rows_runtop_does_not_know_are_said_so(line):
    assert isinstance(metrics_jsonl.parse_line(line), Unrecognised)


def test_traces_jsonl_episode():
    ok = {"ok": True, "errors": [], "env": {"name": "rt"}, "traces": [{"rewards": {"a": {"score": 0.5, "weight": 2.0}, "b": {"score": 1.0, "weight": 0.5}}, "stop_condition": "max_turns", "nodes": [{"sampled": False}, {"sampled": True}, {"sampled": True}]}]}
    ev = rollouts.parse_line(json.dumps(ok), 4)
    assert (ev.reward, ev.truncated, ev.turns, ev.ok, ev.step, ev.env) == (1.5, True, 2, True, 4, "rt")
    bad = {"ok": False, "errors": [{"type": "SandboxError", "message": "x"}, {"type": "ProviderError", "message": "y"}], "traces": []}
    ev = rollouts.parse_line(json.dumps(bad), 4)
    assert (ev.ok, ev.error_type) == (False, "ProviderError")


def test_stream_records_name_their_own_step():
    ev = rollouts.parse_line(json.dumps({"ok": True, "errors": [], "run": {"work": {"step": 12}}, "traces": []}), None)
    assert ev.step == 12


def test_v06_train_rollouts_record():
    rec = {"example_id": 1, "reward": 0.25, "is_truncated": True, "error": {"error": "ToolsetError", "message": "m"}, "stop_condition": "length", "timing": {"total": 12.5}}
    ev = rollouts.parse_line(json.dumps(rec), 2)
    assert (ev.reward, ev.truncated, ev.error_type, ev.duration_s) == (0.25, True, "ToolsetError", 12.5)


def test_env_server_rollout_lines_main():
    evs = events_of(
        "14:01:28    INFO rollout start: id=b64c task=64 harness=null runtime=subprocess\n"
        "14:01:31    INFO rollout done: id=b64c task=64 reward=0.811 turns=1 stop=single_turn\n"
        "14:02:43    INFO rollout done: id=8cdb task=285 reward=0.000 turns=0 stop=ProviderError\n",
        "env",
    )
    assert isinstance(evs[0], RolloutStart)
    assert isinstance(evs[1], RolloutDone) and evs[1].reward == 0.811 and evs[1].error_type is None
    assert evs[2].error_type == "ProviderError"


def test_v06_env_router_block():
    evs = events_of(
        "2026-06-25 14:01:33 - verifiers.EnvRouter - INFO - Active tasks: 128 (W0: 64, W1: 64)\n"
        "  Server | Lag: min=0ms mean=2ms median=1ms p90=4ms p99=11ms max=18ms (n=100)\n"
        "  W0 | Lag: min=0ms mean=3ms median=1ms p90=4ms p99=12ms max=20ms (n=50)\n"
        "2026-06-25 14:01:40 - verifiers.EnvRouter - WARNING - Worker 3 (pid=77) died, restarting\n",
        "env",
    )
    lag = next(e for e in evs if isinstance(e, EnvLag))
    assert lag.active_tasks == 128 and lag.lag_ms["p99"] == 11 and lag.lag_ms["max"] == 18
    assert any(isinstance(e, Notice) and e.kind == "env_worker_died" for e in evs)


def test_vllm_stat_line():
    ev = events_of("\x1b[1;36m(APIServer pid=2209876)\x1b[0;0m INFO 08-21 14:03:17 [loggers.py:257] Engine 000: Avg prompt throughput: 1939.8 tokens/s, Avg generation throughput: 4507.9 tokens/s, Running: 124 reqs, Waiting: 3 reqs, Preemptions: 3, GPU KV cache usage: 93.1%, Prefix cache hit rate: 53.8%", "inference")[0]
    assert isinstance(ev, VllmStats)
    assert (ev.running, ev.waiting, ev.kv_cache_pct, ev.preemptions, ev.time) == (124, 3, 93.1, 3, "14:03:17")


def test_vllm_engine_death_across_prefixed_traceback_lines():
    evs = events_of(
        "(EngineCore_DP0 pid=7) ERROR 08-21 14:05:00 [core.py:710] EngineCore encountered a fatal error.\n"
        "(EngineCore_DP0 pid=7) Traceback (most recent call last):\n"
        "(EngineCore_DP0 pid=7) RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "(APIServer pid=6) ERROR 08-21 14:05:01 [async_llm.py:480] AsyncLLM output_handler failed.\n"
        "(APIServer pid=6) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n",
        "inference",
    )
    # EngineCore's own exception is the cause; the API server's EngineDeadError wraps it.
    # A RuntimeError says nothing of how EngineCore died; the sticky CUDA error in its words does.
    assert [e.kind for e in evs] == ["CUDAIllegalMemoryAccess", "EngineDeadError"]
    assert all(e.fatal and e.certain for e in evs)
    assert [e.wrapper for e in evs] == [False, True]
    assert "illegal memory access" in evs[0].message


def test_vllm_max_tokens_too_large_and_ulimit():
    evs = events_of(
        "(APIServer pid=6) ERROR 08-21 14:05:01 [serving.py:1] Error in preprocessing prompt inputs\n"
        "(APIServer pid=6) ValueError: 'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 tokens and your request has 1297 input tokens (4000 > 4096 - 1297).\n"
        "(APIServer pid=6) WARNING 08-21 14:00:01 [utils.py:1] Found ulimit of 32000 and failed to automatically increase with error x\n"
        '(APIServer pid=6) INFO:     127.0.0.1:52011 - "POST /inference/v1/generate HTTP/1.1" 400 Bad Request\n'
        '(APIServer pid=6) INFO:     127.0.0.1:52011 - "POST /inference/v1/generate HTTP/1.1" 200 OK\n',
        "inference",
    )
    assert [e.kind for e in evs] == ["max_tokens_too_large", "ulimit", "http_400"]
    assert "4000 > 4096 - 1297" in evs[0].message


def test_configs_give_max_steps_from_json_and_toml():
    assert parse_config('max_steps = 20\n[run]\nname = "r"\n[ckpt]\ninterval = 2\nkeep_last = 3\n', "toml").max_steps == 20
    cfg = parse_config(json.dumps({"trainer": {"max_steps": 300}, "ckpt": {"interval": 5}}), "json")
    assert (cfg.max_steps, cfg.ckpt_interval) == (300, 5)
    assert parse_config("{broken", "json") is None and parse_config("= x", "toml") is None


@pytest.mark.parametrize(
    "files, complete",
    [
        ({"trainer/.metadata": 10, "trainer/__0_0.distcp": 9, "orchestrator/progress.pt": 1}, True),
        ({"trainer/.metadata.tmp": 10, "trainer/__0_0.distcp": 9, "orchestrator/progress.pt": 1}, False),
        ({"trainer/.metadata": 10, "orchestrator/progress.pt.123.tmp": 1}, False),
        ({"trainer/.metadata": 10}, False),
        ({}, False),
    ],
)
def test_checkpoint_completeness(files, complete):
    assert judge_primerl(files).complete is complete


def test_secrets_are_redacted():
    assert redact("+ export WANDB_API_KEY=abc123") == "+ export WANDB_API_KEY=***"
    assert redact("HF_TOKEN='hf_abc' DB_PASSWORD=x") == "HF_TOKEN='***' DB_PASSWORD=***"
    assert redact("max_tokens: 128 | Throughput 14872 tokens/s") == "max_tokens: 128 | Throughput 14872 tokens/s"
