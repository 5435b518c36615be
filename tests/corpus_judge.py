"""Judge one corpus case as a user would: `runtop check` and `runtop status --json` on a copy of
its run directory, against what an expert reads in it (`expected.toml`). Shared by the corpus
test (every case must pass) and `benchmarks/corpus_score.py` (how many pass, by framework and
for the held-out part): one judge, so the score is the test's.

`expected.toml`:

    source = ["https://github.com/…/issues/N (what of it the case follows)"]
    shape = "what is unusual about it"
    framework = "prime-rl"          # the plug-in an expert names ("generic": no framework's sign); unchecked when absent
    layout = "main"                 # optional: runtop's layout generation
    path = "logs/run.log"           # what to point runtop at, inside run/ (default: run/ itself)
    ckpt_dir = "ckpt"               # `--ckpt-dir`, inside run/
    age_s = 0                       # the files' age: a finished run must stay Finished when old
    verdict = "Down"                # the first word of `runtop check`; its exit code follows
    cause = "SIGBUS"                # health.cause in the JSON (and wrapper, phase), when given
    first_line = ["words", "…"]     # each must be in `runtop check`'s first line, exactly
    cause_words = ["out of memory|OutOfMemory"]  # each: one alternative in the first line, any case
    status_words = ["…"]            # each must be in `runtop status` (the check-in)
    cause_not = ["SIGKILL"]         # health.cause must be none of these (a wrapper, a symptom)
    known_miss = "why"              # runtop reads it otherwise today, said plainly: the test expects the miss
    [steps]                         # trainer_step, rollout_step, max_steps, and per-step values
    [steps.values.3]
    reward = 0.41
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtop.cli import main as cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CORPUS = Path(__file__).parent / "corpus"
HOLDOUT = CORPUS / "holdout"
EXIT = {"Healthy": 0, "Finished": 0, "Degraded": 1, "Down": 2, "Unknown": 4}


def cases(holdout: bool = False) -> list[Path]:
    base = HOLDOUT if holdout else CORPUS
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / "expected.toml").is_file())


@dataclass
class Judged:
    case: str
    framework: str  # the expected one ("not given" where the case does not say)
    problems: list[str] = field(default_factory=list)
    first_line: str = ""
    known_miss: str = ""  # the case says runtop reads it otherwise today, and why

    @property
    def ok(self) -> bool:
        return not self.problems


def _age(root: Path, age_s: float) -> None:
    when = time.time() - age_s
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (when, when), follow_symlinks=False)


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(list(argv))
    return code, out.getvalue()


def _close(got: Any, want: float) -> bool:
    return isinstance(got, (int, float)) and math.isclose(float(got), float(want), rel_tol=1e-6, abs_tol=1e-12)


def judge(case_dir: Path, scratch: Path | None = None) -> Judged:
    """Every way the case is read wrong (none: read right)."""
    exp = tomllib.loads((case_dir / "expected.toml").read_text())
    j = Judged(case_dir.name, exp.get("framework", "not given"), known_miss=exp.get("known_miss", ""))
    if not exp.get("source"):
        j.problems.append("no source: every case cites the public output it follows")
    owned = scratch is None
    work = Path(tempfile.mkdtemp(prefix="corpus-")) if owned else scratch
    try:
        run = work / "run"
        shutil.copytree(case_dir / "run", run, symlinks=True)
        _age(run, float(exp.get("age_s", 0)))
        target = str(run / exp.get("path", "."))
        more = ["--ckpt-dir", str(run / exp["ckpt_dir"])] if "ckpt_dir" in exp else []
        _check(j, exp, target, more)
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)
    return j


def _check(j: Judged, exp: dict[str, Any], target: str, more: list[str]) -> None:
    code, out = _run("check", target, *more)
    first = out.splitlines()[0] if out else ""
    j.first_line = first
    want = exp["verdict"]
    if not first.startswith(f"{want}:"):
        j.problems.append(f"verdict: want {want}, got {first.split(':', 1)[0] or f'nothing (exit {code})'}")
    elif code != EXIT[want]:
        j.problems.append(f"exit code {code} for {want}")
    for words in exp.get("first_line", []):
        if words not in first:
            j.problems.append(f"first line lacks {words!r}")
    low = first.lower()
    for alternatives in exp.get("cause_words", []):
        if not any(a.strip().lower() in low for a in alternatives.split("|")):
            j.problems.append(f"first line lacks any of {alternatives!r}")

    code, out = _run("status", "--json", target, *more)
    if code != 0:
        j.problems.append(f"status --json exit {code}")
        return
    doc = json.loads(out)
    if "framework" in exp and doc["framework"] != exp["framework"]:
        j.problems.append(f"framework: want {exp['framework']}, got {doc['framework']} ({doc.get('detection', '')})")
    if "layout" in exp and doc["layout"] != exp["layout"]:
        j.problems.append(f"layout: want {exp['layout']}, got {doc['layout']}")
    if doc["health"]["verdict"] != want:
        j.problems.append(f"status --json verdict {doc['health']['verdict']} (check said {first.split(':', 1)[0]})")
    for key in ("cause", "wrapper", "phase"):
        if key in exp and doc["health"].get(key) != exp[key]:
            j.problems.append(f"{key}: want {exp[key]!r}, got {doc['health'].get(key)!r}")
    if doc["health"].get("cause") in exp.get("cause_not", []):
        j.problems.append(f"cause is {doc['health'].get('cause')!r}, which the case rules out")
    steps = exp.get("steps", {})
    for key in ("trainer_step", "rollout_step", "max_steps"):
        if key in steps and doc["progress"].get(key) != steps[key]:
            j.problems.append(f"{key}: want {steps[key]}, got {doc['progress'].get(key)}")
    rows = {r["step"]: r for r in doc["steps"]}
    for step, values in steps.get("values", {}).items():
        row = rows.get(int(step))
        if row is None:
            j.problems.append(f"step {step}: no row")
            continue
        for name, value in values.items():
            got = row.get(name, row.get("extra", {}).get(name))
            if not _close(got, value):
                j.problems.append(f"step {step} {name}: want {value}, got {got}")
    if exp.get("status_words"):
        _code, md = _run("status", target, *more)
        for words in exp["status_words"]:
            if words not in md:
                j.problems.append(f"status lacks {words!r}")
