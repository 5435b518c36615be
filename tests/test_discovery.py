"""Which run, which layout generation, which files; and a clear no for anything else."""

from __future__ import annotations

import os
import time

import pytest

from runtop.discovery import DiscoveryError, discover

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
        (lambda p: touch(p, "x.log", "just words\n"), "nothing runtop recognises"),
        (lambda p: touch(p, "e.log", ""), "is empty"),
    ],
)
def test_unreadable_paths_get_one_clear_line(tmp_path, make, words):
    with pytest.raises(DiscoveryError) as e:
        discover(make(tmp_path))
    msg = str(e.value)
    assert words in msg and "\n" not in msg
