"""The reader follows a live run: attempts stay apart, structured rows win, new files are found."""

from __future__ import annotations

import json
import os

from runtop.engine.reader import RunReader
from runtop.frameworks.discovery import discover
from runtop.outputs.report_json import to_json
from runtop.rules.health import Verdict


def append(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        f.write(text)


def orch_step(n, reward):
    return f"14:0{n}:00 SUCCESS Step {n} |   31.0s | Reward {reward} | Trainable 1/2 (50.0%)\n"


def poll(reader):
    reader.poll(rescan_every=0, ckpt_every=0)
    return reader.state


def test_logs_latest_repointed_opens_a_new_attempt_without_mixing_steps(tmp_path):
    root = str(tmp_path)
    append(root, "logs/attempt_1/orchestrator.log", orch_step(1, 0.1) + orch_step(2, 0.2) + orch_step(3, 0.3))
    os.symlink("attempt_1", os.path.join(root, "logs", "latest"))
    reader = RunReader(discover(root))
    s = poll(reader)
    assert s.rollout_step == 3 and s.attempt == 1
    # relaunch resumed from step 2: attempt_2 redoes step 3
    append(root, "logs/attempt_2/orchestrator.log", "14:09:00    INFO Resuming training from checkpoint step 2\n" + orch_step(3, 0.9))
    os.unlink(os.path.join(root, "logs", "latest"))
    os.symlink("attempt_2", os.path.join(root, "logs", "latest"))
    s = poll(reader)
    assert s.attempt == 2 and s.attempts[-1].resumed_from == 2
    assert s.steps[3].value("reward") == 0.9 and s.steps[3].attempt == 2
    assert [r.step for r in s.lost_steps] == [3] and s.lost_steps[0].value("reward") == 0.3
    assert s.steps[1].attempt == 1  # the shared history before the resume point stays


def test_an_overwritten_log_is_a_new_attempt(tmp_path):
    root = str(tmp_path)
    append(root, "logs/orchestrator.log", orch_step(1, 0.1) + orch_step(2, 0.2))
    reader = RunReader(discover(root))
    poll(reader)
    with open(os.path.join(root, "logs/orchestrator.log"), "w") as f:  # v0.5–v0.8 relaunch
        f.write(orch_step(1, 0.5))
    s = poll(reader)
    assert s.attempt == 2 and s.steps[1].value("reward") == 0.5 and s.rollout_step == 1


def test_metrics_rows_win_over_log_lines(tmp_path):
    root = str(tmp_path)
    append(root, "logs/orchestrator.log", orch_step(1, 0.5))
    append(root, "metrics.jsonl", json.dumps({"step": 1, "train/agg/effective/agent/reward/mean": 0.5412}) + "\n")
    s = poll(RunReader(discover(root)))
    assert s.steps[1].value("reward") == 0.5412
    # the reward came from metrics.jsonl, the step time (absent there) from the log line
    assert to_json(s, Verdict("Healthy"))["steps"][0]["origin"] == {"orchestrator": "log+metrics"}


def test_directories_created_after_start_are_found(tmp_path):
    root = str(tmp_path)
    append(root, "logs/attempt_1/orchestrator.log", orch_step(1, 0.1))
    reader = RunReader(discover(root))
    poll(reader)
    append(root, "logs/attempt_1/envs/train/math.log", "14:01:28    INFO rollout done: id=a task=1 reward=1.0 turns=1 stop=single_turn\n")
    append(root, "logs/attempt_1/trainer.log", "[trainer0]:14:02:33 SUCCESS Step 1 |  1m 18s | Loss 0.0031 | Entropy 0.4127\n")
    s = poll(reader)
    assert s.env.done == 1 and s.trainer_step == 1


def test_a_partial_checkpoint_is_not_the_last_complete_one(simulated):
    root = simulated("partial-checkpoint", max_steps=10, fail_step=4)
    s = poll(RunReader(discover(root)))
    assert {c.step: c.complete for c in s.checkpoints.values()} == {2: True, 4: False}
    assert s.last_complete_checkpoint().step == 2
    assert "in progress or interrupted" in s.checkpoints[4].reason


def test_unknown_json_rows_are_reported_not_hidden(tmp_path):
    root = str(tmp_path)
    append(root, "metrics.jsonl", '{"hello": 1}\n')
    s = poll(RunReader(discover(root)))
    assert "metrics.jsonl" in next(iter(s.unrecognised)) and not s.steps


def test_a_resume_seen_in_metrics_and_in_the_attempt_log_is_one_attempt(tmp_path):
    root = str(tmp_path)
    rows = [{"step": s, "loss/mean": 0.1 * s} for s in (1, 2, 3, 4, 5, 6)] + [{"step": s, "loss/mean": 1.0 * s} for s in (5, 6)]
    append(root, "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    append(root, "logs/attempt_1/trainer.log", "")
    append(root, "logs/attempt_2/trainer.log", "[trainer0]:14:09:00    INFO Resuming training from checkpoint step 4\n")
    os.symlink("attempt_2", os.path.join(root, "logs", "latest"))
    s = poll(RunReader(discover(root)))
    assert [a.number for a in s.attempts] == [1, 2] and s.attempts[-1].resumed_from == 4
    assert s.steps[6].value("loss") == 6.0 and s.steps[4].value("loss") == 0.4
    assert sorted(r.step for r in s.lost_steps) == [5, 6]
