"""Real shapes, not our simulator: every case in tests/corpus/ read by `runtop check` and
`runtop status --json`, as a user would.

Each case is a run directory (`run/`) laid out as its framework lays it out, written with
our own values in exactly the shape users pasted into public issues (ANSI codes, rank
prefixes, repeated vLLM prefixes, glued lines and all), and an `expected.toml` naming
the issue it follows and what an expert reads in it:

    source = ["https://github.com/…/issues/N (what of it the case follows)"]
    shape = "what is unusual about it"
    framework = "prime-rl"          # runtop's `framework` and `layout`
    layout = "main"
    path = "logs/run.log"           # what to point runtop at, inside run/ (default: run/ itself)
    ckpt_dir = "ckpt"               # `--ckpt-dir`, inside run/, where the log's dir is not this machine's
    age_s = 0                       # the files' age: a finished run must stay Finished when old
    verdict = "Down"                # the first word of `runtop check`; its exit code follows
    cause = "SIGBUS"                # health.cause / wrapper / phase in the JSON, when given
    first_line = ["words", "…"]     # each must be in `runtop check`'s first line
    status_words = ["…"]            # each must be in `runtop status` (the check-in)
    [steps]                         # trainer_step, rollout_step, and per-step values
    [steps.values.3]
    reward = 0.41

README ("Add a case from your own run") says how a user adds one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from runtop import cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.toml").is_file())
EXIT = {"Healthy": 0, "Finished": 0, "Degraded": 1, "Down": 2, "Unknown": 4}


def _age(root: Path, age_s: float) -> None:
    when = time.time() - age_s
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (when, when), follow_symlinks=False)


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_the_corpus_covers_every_class_of_issue_12():
    assert len(CASES) >= 25
    names = " ".join(CASES)
    for word in ("primerl-main", "primerl-v05", "primerl-v06", "skyrl-upstream", "skyrl-biomni", "vllm", "torchrun", "ray", "nccl"):
        assert word in names, word


@pytest.mark.parametrize("case", CASES)
def test_corpus_case(case, tmp_path, capsys):
    exp = tomllib.loads((CORPUS / case / "expected.toml").read_text())
    assert exp.get("source"), "every case cites the public output it follows"
    run = tmp_path / "run"
    shutil.copytree(CORPUS / case / "run", run, symlinks=True)
    _age(run, float(exp.get("age_s", 0)))
    target = str(run / exp.get("path", "."))
    more = ["--ckpt-dir", str(run / exp["ckpt_dir"])] if "ckpt_dir" in exp else []

    code, out = _run(capsys, "check", target, *more)
    first = out.splitlines()[0] if out else ""
    assert first.startswith(f"{exp['verdict']}:"), first
    for words in exp.get("first_line", []):
        assert words in first, f"{words!r} not in: {first}"
    assert code == EXIT[exp["verdict"]], first

    code, out = _run(capsys, "status", "--json", target, *more)
    assert code == 0
    doc = json.loads(out)
    assert (doc["framework"], doc["layout"]) == (exp["framework"], exp["layout"])
    assert doc["health"]["verdict"] == exp["verdict"]
    for key in ("cause", "wrapper", "phase"):
        if key in exp:
            assert doc["health"][key] == exp[key], (key, doc["health"])
    steps = exp.get("steps", {})
    for key in ("trainer_step", "rollout_step", "max_steps"):
        if key in steps:
            assert doc["progress"][key] == steps[key], key
    rows = {r["step"]: r for r in doc["steps"]}
    for step, values in steps.get("values", {}).items():
        row = rows[int(step)]
        for name, want in values.items():
            got = row.get(name, row.get("extra", {}).get(name))
            assert got == pytest.approx(want, rel=1e-6), (step, name, got)

    if exp.get("status_words"):
        code, md = _run(capsys, "status", target, *more)
        for words in exp["status_words"]:
            assert words in md, words
