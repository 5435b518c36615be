"""The check-in (markdown) and the JSON, from a state built event by event (tests mirror the
folders). The stories run end to end elsewhere; here each line's meaning."""

from __future__ import annotations

import json
import math

from runtop.outputs.report import to_markdown
from runtop.outputs.report_json import step_dict, to_json
from runtop.parsers.events import ORCHESTRATOR, TRAINER, Notice, RoleFinished, StepMetrics
from runtop.rules.findings import Finding
from runtop.rules.health import Verdict
from runtop.state.parts import Checkpoint, FileInfo
from runtop.state.run import RunState


def _run(steps: int = 3) -> RunState:
    s = RunState(path="/runs/r1", framework="prime-rl", layout="main", run_name="r1", max_steps=10)
    s.files["logs/trainer.log"] = FileInfo("logs/trainer.log", TRAINER, "log")
    for n in range(1, steps + 1):
        s.apply(StepMetrics(ORCHESTRATOR, n, {"reward": 0.5 + n / 100, "step_time_s": 30.0}, origin="log", time=f"14:0{n}:00"), "o")
        s.apply(StepMetrics(TRAINER, n, {"loss": 0.01 * n, "entropy": 0.4 - n / 100, "step_time_s": 35.0}, origin="metrics"), "m")
    s.checkpoints[2] = Checkpoint(2, "/runs/r1/checkpoints/step_2", True, "complete", 6 << 30)
    return s


def test_the_check_in_names_the_verdict_its_reason_and_the_last_complete_checkpoint():
    v = Verdict("Down", ["trainer died: torch.OutOfMemoryError"], [Finding("crash", "critical", "trainer died", "logs/trainer.log", None, down=True)])
    md = to_markdown(_run(), v)
    assert "**Health**: Down" in md and "torch.OutOfMemoryError" in md
    assert "| 3 |" in md and "step_2" in md


def test_the_check_in_speaks_the_frameworks_word_for_the_rollout_side():
    md = to_markdown(_run(), Verdict("Healthy"))
    assert "orchestrator ~30s/step (step 3)" in md and "trainer ~35s/step (step 3)" in md


def test_a_finished_run_has_no_eta():
    s = _run()
    s.apply(RoleFinished(TRAINER), "logs/trainer.log")
    assert "ETA" not in to_markdown(s, Verdict("Finished"))
    assert "ETA" in to_markdown(_run(), Verdict("Healthy"))


def test_a_json_row_keeps_each_sides_numbers_and_where_they_came_from():
    row = step_dict(_run().steps[2])
    assert row["reward"] == 0.52 and row["loss"] == 0.02 and row["step_time_s"] == 35.0
    assert row["rollout_step_time_s"] == 30.0
    assert row["origin"] == {"orchestrator": "log", "trainer": "metrics"}


def test_the_json_is_valid_json_even_with_nan_and_infinity():
    s = _run(1)
    s.apply(StepMetrics(TRAINER, 2, {"loss": math.nan, "grad_norm": math.inf}, origin="metrics"), "m")
    doc = to_json(s, Verdict("Degraded", ["grad norm is inf"]))
    text = json.dumps(doc, allow_nan=False)  # raises on a bare NaN
    assert json.loads(text)["steps"][-1]["loss"] is None
    assert doc["progress"]["rollout_step"] == 1 and doc["health"]["verdict"] == "Degraded"


def test_the_json_never_carries_a_secret_from_a_log_line():
    s = _run(1)
    s.apply(Notice(TRAINER, "ERROR", "RuntimeError", "auth failed for --api-key sk-live-abcdef0123456789", fatal=True), "logs/trainer.log")
    assert "sk-live-abcdef0123456789" not in json.dumps(to_json(s, Verdict("Down")))
