"""`--metrics FILE`, for every framework runtop has no plug-in for: any JSONL of per-step rows read
beside a run, its keys mapped by `[metrics]` onto runtop's metric names; bad input is one line."""

from __future__ import annotations

import json
import subprocess
import sys

from runtop.frameworks import get


def runtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=60)


def test_a_jsonl_of_my_own_is_read_beside_the_run_with_my_mapping(tmp_path):
    run = tmp_path / "run"
    get("verl").simulator(str(run), "healthy", max_steps=3).run()
    mine = tmp_path / "eval.jsonl"
    mine.write_text("".join(json.dumps({"step": s, "data": {"my/pass@1": 0.2 * s, "my/judge_tokens": 100.0 * s}}) + "\n" for s in (1, 2, 3)))
    cfg = tmp_path / "runtop.toml"
    cfg.write_text('[metrics]\n"my/pass@1" = "reward_all"\n')
    r = runtop("status", "--json", str(run), "--metrics", str(mine), "--config", str(cfg))
    assert r.returncode == 0, r.stderr
    rows = {row["step"]: row for row in json.loads(r.stdout)["steps"]}
    assert rows[2]["reward_all"] == 0.4 and rows[2]["extra"]["my/judge_tokens"] == 200.0
    assert rows[2]["reward"] is not None  # the run's own numbers are still there


def test_a_missing_file_or_a_mapping_onto_no_metric_is_one_line(tmp_path):
    run = tmp_path / "run"
    get("verl").simulator(str(run), "healthy", max_steps=2).run()
    r = runtop("check", str(run), "--metrics", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 3 and r.stderr.strip().count("\n") == 0 and "--metrics" in r.stderr and "no such file" in r.stderr
    (tmp_path / "m.jsonl").write_text('{"step": 1, "x": 1}\n')
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[metrics]\nx = "rewardz"\n')
    r = runtop("status", str(run), "--metrics", str(tmp_path / "m.jsonl"), "--config", str(cfg))
    assert r.returncode == 2 and "metrics.'x' must name one of runtop's metrics" in r.stderr and "Traceback" not in r.stderr
