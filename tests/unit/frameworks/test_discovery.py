"""Which run, which layout generation, which files; and a clear no for anything else."""

from __future__ import annotations

import os
import time

import pytest

from runtop.frameworks.discovery import DiscoveryError, discover

STEP = "14:01:58 SUCCESS Step 1 |   31.0s | Reward 0.5412 | Trainable 112/128 (87.5%)\n"


def touch(root, rel, text=STEP):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_main_layout_reads_the_latest_attempt(tmp_path):
    touch(tmp_path, "logs/attempt_1/orchestrator.log")
    touch(tmp_path, "logs/attempt_2/orchestrator.log")
    touch(tmp_path, "logs/attempt_2/envs/train/math.log")
    os.symlink("attempt_2", tmp_path / "logs" / "latest")
    touch(tmp_path, "metrics.jsonl", '{"step": 1}\n')
    lay = discover(str(tmp_path))
    assert (lay.framework, lay.layout, lay.attempt) == ("prime-rl", "main", 2)
    assert {os.path.relpath(t.path, tmp_path) for t in lay.logs} == {"logs/attempt_2/orchestrator.log", "logs/attempt_2/envs/train/math.log"}
    assert lay.earlier_attempts == ["attempt_1"] and lay.metrics


def test_a_copied_run_whose_latest_is_a_plain_file(tmp_path):
    touch(tmp_path, "logs/attempt_1/trainer.log")
    touch(tmp_path, "logs/latest", "attempt_1")
    assert discover(str(tmp_path)).attempt == 1


def test_v06_layout(tmp_path):
    touch(tmp_path, "logs/orchestrator.log")
    touch(tmp_path, "logs/envs/train/math/env_server.log", "")
    touch(tmp_path, "run_default/rollouts/step_3/train_rollouts.jsonl", "")
    lay = discover(str(tmp_path))
    assert lay.layout == "v0.5-v0.6"
    assert any(t.path.endswith("env_server.log") for t in lay.logs)
    assert [t.step for t in lay.rollouts] == [3]


def test_v07_layout(tmp_path):
    touch(tmp_path, "logs/trainer.log")
    touch(tmp_path, "logs/envs/train/math.log", "")
    touch(tmp_path, "run_default/rollouts/step_2/train/all/traces.jsonl", "")
    touch(tmp_path, "run_default/metrics.jsonl", "")
    lay = discover(str(tmp_path))
    assert lay.layout == "v0.7-v0.8" and lay.metrics and [t.step for t in lay.rollouts] == [2]


def test_undecided_old_layout_says_so(tmp_path):
    touch(tmp_path, "logs/orchestrator.log")
    lay = discover(str(tmp_path))
    assert lay.layout == "v0.5-v0.8" and any("tell them apart" in n for n in lay.notes)


def test_announced_monitors_file_layout(tmp_path):
    touch(tmp_path, "logs/attempt_1/orchestrator.log")
    touch(tmp_path, "monitors/file/metrics.jsonl", "")
    touch(tmp_path, "monitors/file/traces/stream.jsonl", "")
    touch(tmp_path, "configs/attempt_1/rl.toml", "max_steps = 7\n")
    lay = discover(str(tmp_path))
    assert lay.layout.startswith("newer")
    assert lay.metrics[0].path.endswith("monitors/file/metrics.jsonl")
    assert any(t.path.endswith("stream.jsonl") for t in lay.rollouts)
    assert any("attempt_1" in t.path for t in lay.configs)


def test_output_dir_with_several_runs_picks_the_newest_and_says_so(tmp_path):
    old = touch(tmp_path, "run-a/logs/attempt_1/orchestrator.log")
    os.utime(old, (time.time() - 3600,) * 2)
    touch(tmp_path, "run-b/logs/attempt_1/orchestrator.log")
    lay = discover(str(tmp_path))
    assert os.path.basename(lay.root) == "run-b"
    assert "2 runs" in lay.notes[0] and "run-a" in lay.notes[0]


def test_a_single_log_file(tmp_path):
    p = touch(tmp_path, "somewhere/orch-copy.log")
    lay = discover(p)
    assert lay.single_file and lay.logs[0].role == "orchestrator"


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: str(p / "nope"), "no such file or directory"),
        (lambda p: str(p), "is empty"),
        (lambda p: touch(p, "notes.txt", "hello") and str(p), "nothing runtop recognises"),
        (lambda p: touch(p, "e.log", ""), "is empty"),
        (lambda p: touch(p, "shard.log", "\x00\x01\x02PK" * 300), "is not a text log"),
    ],
)
def test_unreadable_paths_get_one_clear_line(tmp_path, make, words):
    with pytest.raises(DiscoveryError) as e:
        discover(make(tmp_path))
    msg = str(e.value)
    assert words in msg and "\n" not in msg


@pytest.mark.parametrize("where", ["file", "dir"])
def test_a_text_log_no_framework_claims_is_read_generically_and_says_so(tmp_path, where):
    """Never refuse a text file: what no plug-in's evidence claims, the generic reader reads."""
    log = touch(tmp_path, "train.log", "2025-01-01 10:00:00 INFO step=1 loss=0.5\n")
    lay = discover(log if where == "file" else str(tmp_path))
    assert (lay.framework, lay.layout) == ("generic", "text log") and lay.logs[0].path == log
    assert lay.detection.startswith("framework not recognised: read generically")


def test_a_timestamp_with_a_level_never_decides_the_framework(tmp_path):
    """vLLM's and DeepSpeed's lines beside a TRL run are nobody's sign (prime-rl's was too broad)."""
    lines = [
        "INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 20.0 tokens/s",
        "[2025-08-21 14:01:28,000] [INFO] [real_accelerator.py:219:get_accelerator] Setting ds_accelerator to cuda (auto detect)",
        "14:01:29    INFO launching",
        "{'loss': 0.01, 'grad_norm': 0.4, 'learning_rate': 1e-06, 'reward': 0.61, 'reward_std': 0.32, 'frac_reward_zero_std': 0.25}",
    ]
    lay = discover(touch(tmp_path, "grpo.log", "\n".join(lines) + "\n"))
    assert lay.framework == "trl", lay.detection
    assert discover(touch(tmp_path, "v.log", "\n".join(lines[:3]) + "\n")).framework == "generic"


def test_framework_flag_overrides_the_evidence_and_a_weak_score_is_said(tmp_path):
    log = touch(tmp_path, "run.log", "(TaskRunner pid=7) Training Progress:   6%|▌ | 12/200 [17:38<4:36:12, 88.2s/it]\n")
    lay = discover(log)
    assert lay.framework == "verl" and lay.detection.startswith("verl: ")
    assert discover(log, "generic").framework == "generic"
    with pytest.raises(DiscoveryError, match="--framework nope: not one runtop knows"):
        discover(log, "nope")
    weak = discover(touch(tmp_path, "w.log", "Training Progress:   6%|▌ | 12/200 [17:38<4:36:12, 88.2s/it]\nglobal_step_12\n"))
    assert weak.framework == "verl" and weak.detection.startswith("probably verl: ")
