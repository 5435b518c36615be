"""Runs side by side from the command line: a researcher with three seeds of one config asks
`runtop compare` which seed is ahead, in a script or a pipe; the numbers are the ones
`runtop status --json` gives for each run, and a wrong ask is one line and an exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runtop.engine.snapshot import read_run
from runtop.fleet.compare import MAX_POINTS, RunSeries, common_metrics, ema, metric_named, parse_metrics, series_of, trend_of
from runtop.frameworks.primerl.sim import Simulator


def runtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=120)


def seeds(tmp_path, n: int = 3, steps: int = 20) -> list[str]:
    """`n` runs of one config that differ only in their seed, as an ablation's outputs/ holds them."""
    out = []
    for seed in range(n):
        path = str(tmp_path / "outputs" / f"seed-{seed}")
        Simulator(path, scenario="healthy", max_steps=steps, seed=seed).run()
        out.append(path)
    return out


def last_values(status_doc: dict) -> dict[str, float]:
    """Each metric's last non-null value in `status --json`'s step rows."""
    out: dict[str, float] = {}
    for row in status_doc["steps"]:
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("step", "attempt"):
                out[key] = value
    return out


def test_three_seeds_compared_give_each_runs_own_latest_values_as_status_json_does(tmp_path):
    runs = seeds(tmp_path)
    r = runtop("compare", "--json", *runs)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [run["run"] for run in doc["runs"]] == ["seed-0", "seed-1", "seed-2"]
    assert {"reward", "entropy", "kl", "loss", "grad_norm", "step_time_s"} <= set(doc["common"])
    for run, path in zip(doc["runs"], runs):
        status = json.loads(runtop("status", "--json", path).stdout)
        expected = last_values(status)
        assert run["step"] == status["progress"]["step"] == 20
        for metric in doc["metrics"]:
            assert run["latest"][metric] == expected.get(metric), (run["run"], metric)
            assert run["trend"][metric] in ("up", "down", "flat")
    # Three seeds, three different rewards: each column is its own run's.
    assert len({run["latest"]["reward"] for run in doc["runs"]}) == 3
    # The simulated runs' reward climbs and their entropy falls: the trends say so.
    assert all(run["trend"]["reward"] == "up" and run["trend"]["entropy"] == "down" for run in doc["runs"])


def test_without_a_terminal_compare_prints_one_line_per_metric_and_a_column_per_run(tmp_path):
    runs = seeds(tmp_path)
    r = runtop("compare", *runs)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["metric", "seed-0", "seed-1", "seed-2"]
    doc = json.loads(runtop("compare", "--json", *runs).stdout)
    reward = next(ln for ln in lines if ln.startswith("reward "))
    # Each run's latest reward, as the JSON has it, with its arrow.
    for run in doc["runs"]:
        assert f"{run['latest']['reward']:.4f} ↑" in reward
    # A directory of runs is its runs: the same table.
    assert runtop("compare", os.path.dirname(runs[0])).stdout == r.stdout


def test_one_run_is_not_a_comparison(tmp_path):
    run = seeds(tmp_path, 1, steps=3)[0]
    r = runtop("compare", run)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "runtop: compare: give two runs or more to compare (1 given: seed-0)"


def test_a_missing_run_directory_is_named_in_one_line(tmp_path):
    run = seeds(tmp_path, 1, steps=3)[0]
    r = runtop("compare", run, str(tmp_path / "no-such-run"))
    assert r.returncode == 3 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "no-such-run" in r.stderr and "Traceback" not in r.stderr


def test_runs_that_share_no_metric_say_so_in_one_line(tmp_path):
    run = seeds(tmp_path, 1, steps=3)[0]
    quiet = tmp_path / "quiet-run"
    quiet.mkdir()
    (quiet / "train.log").write_text("loading the model\nwaiting for the first batch\n")
    r = runtop("compare", run, str(quiet))
    assert r.returncode == 3 and r.stdout == "", r.stdout + r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert "share no metric" in r.stderr and "quiet-run: no step metrics yet" in r.stderr and "seed-0: reward" in r.stderr


def test_an_unknown_metric_for_the_runs_table_is_one_line(tmp_path):
    run = seeds(tmp_path, 2, steps=3)[0]
    r = runtop(os.path.dirname(run), "--columns", "reward,rewrad")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "'rewrad' is not a metric runtop knows" in r.stderr


# ---- the numbers themselves -----------------------------------------------------------------

def test_metric_names_as_people_type_them():
    assert parse_metrics("reward, entropy,step_time") == ("reward", "entropy", "step_time_s")
    assert metric_named("KL") == "kl" and metric_named("grad norm") == "grad_norm" and metric_named("seq len") == "seq_len"
    with pytest.raises(ValueError, match="'nope' is not a metric"):
        parse_metrics("reward,nope")


def test_trends_say_which_way_and_noise_is_flat():
    assert trend_of([0.1 * i for i in range(20)]) == "up"
    assert trend_of([2.0 - 0.1 * i for i in range(20)]) == "down"
    assert trend_of([0.5, 0.52, 0.49, 0.51, 0.5, 0.5, 0.51, 0.49, 0.5, 0.52]) == "flat"
    assert trend_of([1.0]) == "flat"


def test_smoothing_keeps_a_constant_and_lags_a_jump():
    assert ema([211.4] * 30, 0.9) == [211.4] * 30
    assert ema([0, 0, 1, 1], 0.0) == [0, 0, 1, 1]
    smooth = ema([0.0] * 10 + [1.0] * 3, 0.6)
    assert 0 < smooth[-1] < 1 and smooth[:10] == [0.0] * 10


def test_a_long_run_is_thinned_to_a_bounded_series_that_keeps_its_newest_step(tmp_path):
    run = seeds(tmp_path, 1, steps=3)[0]
    state = read_run(run, processes=False)
    rows = state.rows()
    # Stretch the run's three rows into ten thousand steps (what a week-long run holds).
    state.merge_history([type(row)(k, row.attempt, trainer=dict(row.trainer), rollout=dict(row.rollout))
                         for k in range(4, 10_000) for row in [rows[k % 3]]])
    s = series_of(state, "long", run)
    assert len(s.points["reward"]) <= MAX_POINTS + 1 and s.points["reward"][-1][0] == 9_999
    assert s.latest["reward"] == rows[9_999 % 3].rollout["reward"]
    assert common_metrics([s, RunSeries("empty", "/nowhere", None)]) == []


def test_a_misspelt_metric_is_answered_with_the_one_meant():
    with pytest.raises(ValueError, match=r"'rewrd' is not a metric runtop knows \(did you mean reward\?\)"):
        parse_metrics("rewrd")


def test_metric_columns_make_room_and_never_push_the_cause_off_an_80_column_table():
    from runtop.tui.fleet_app import columns, fixed_width
    from runtop.tui.fleet_compare import metric_columns

    wide = metric_columns(columns(160), ("reward", "entropy"), 160)
    assert [n for n, _ in wide] == ["verdict", "run", "framework", "step", "ETA", "last write", "att", "reward", "entropy", "cause"]
    at_120 = metric_columns(columns(120), ("reward", "entropy", "step_time_s"), 120)
    assert "att" not in dict(at_120) and "framework" not in dict(at_120) and {"reward", "entropy", "step_time_s", "last write"} <= set(dict(at_120))
    narrow = metric_columns(columns(80), ("reward", "entropy", "step_time_s", "kl"), 80)
    # At 80 columns the last write stays (a run silent for an hour is news at any width), then the metrics that fit.
    assert [n for n, _ in narrow][:4] == ["verdict", "run", "last write", "reward"] and 80 - fixed_width(narrow) - 1 >= 12
