"""The fast backfill reads the same runs as the careful one: with the cheap first
passes switched back to their exhaustive forms (the two-pass skim, a literal_eval of every
logged dict) and every step line read record by record, every corpus case and every simulator
scenario gives the same state, field by field, as the fast path (step lines in batches, history
in columns) — and as the fast path with every log read through each backend of the scan stage
(Hyperscan, GNU grep's children, Python's own scan: used on their own only for long stretches),
each with the plug-in's keep rule: what a keep rule leaves out, and what a batch reads, changes
nothing."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest

import runtop.engine.reader as run_reader
import runtop.parsers.skyrl_numbers as skyrl_numbers
import runtop.sources.bulk_grep as bulk_grep
import runtop.sources.scan as scan
from runtop.config import Thresholds
from runtop.engine.reader import RunReader
from runtop.engine.snapshot import read_all
from runtop.frameworks import REGISTRY
from runtop.frameworks.discovery import discover
from runtop.frameworks.generic import under
from runtop.outputs.report_json import to_json
from runtop.parsers import progress
from runtop.rules.health import Facts, judge
from tests.inner import first_of_each
from tests.paths import REPO, TESTS
from tests.unit.parsers.test_skim import reference

CORPUS = TESTS / "corpus"
NOW = time.time()
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "run").is_dir())
# Every scan backend this machine has (CI runs once with the `fast` extra, once without).
BACKENDS = ["re"] + (["grep"] if bulk_grep.gnu_grep() is not None else []) + (["hyperscan"] if scan._hyperscan() is not None else [])
SCENARIOS = [(name, sc) for name, fw in REGISTRY.items() for sc in fw.scenarios]


def state_of(path: str) -> dict:
    reader = RunReader(discover(path))
    read_all(reader)
    # One clock for every reading: a freshly written run's "last write 3s ago" must not tick
    # between them.
    doc = to_json(reader.state, judge(reader.state, Facts(reader.state, NOW, Thresholds())))
    doc.pop("generated_at")
    return doc


def record_by_record(records, parse, batch, role):
    return under.read_records(records, parse, None, role)


def both_ways(path: str, monkeypatch) -> tuple[dict, dict]:
    with monkeypatch.context() as m:
        m.setattr(bulk_grep, "BULK_MIN", 1 << 62)  # Python reads every byte
        fast = state_of(path)
    for backend in BACKENDS:
        with monkeypatch.context() as m:
            m.setenv("RUNTOP_SCAN", backend)
            m.setattr(bulk_grep, "BULK_MIN", 0)  # the scan stage narrows every log first
            assert scan.backend() == backend
            assert state_of(path) == fast, f"read through the {backend} scan"
    with monkeypatch.context() as m:
        m.setattr(bulk_grep, "BULK_MIN", 1 << 62)
        m.setattr(run_reader, "skim", reference)  # the two-pass skim: every line looked at
        m.setattr(skyrl_numbers, "NUMERIC_VALUE_RE", re.compile(r""))  # every logged dict parsed
        m.setattr(skyrl_numbers, "flat_dict", lambda _t, bare=True: None)  # ... by the literal parser
        m.setattr(progress, "flat_dict", lambda _t, bare=True: None)
        m.setattr(run_reader, "read_records", record_by_record)  # no step line read in a batch
        careful = state_of(path)
    return fast, careful


# The inner loop reads two cases or scenarios of each family; CI reads them all (tests/inner.py).
@pytest.mark.parametrize("case", first_of_each(CASES, family=lambda c: c.split("-")[0]))
def test_every_corpus_case_reads_the_same_both_ways(case, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(CORPUS / case / "run", run, symlinks=True)
    import tomllib

    exp = tomllib.loads((CORPUS / case / "expected.toml").read_text())
    fast, careful = both_ways(str(run / exp.get("path", ".")), monkeypatch)
    assert fast == careful


@pytest.mark.parametrize(("framework", "scenario"), first_of_each(SCENARIOS, family=lambda c: c[0], ids=lambda c: f"{c[0]}-{c[1]}"))
def test_every_simulator_scenario_reads_the_same_both_ways(framework, scenario, tmp_path, monkeypatch):
    root = str(tmp_path / "run")
    REGISTRY[framework].simulator(root, scenario).run()
    fast, careful = both_ways(root, monkeypatch)
    assert fast == careful


BENCH_LOGS = ["prime-rl", "prime-rl-noisy", "skyrl-week", "vllm", "verl-week", "trl-week"]


@pytest.mark.parametrize("kind", [pytest.param(k, marks=() if k in ("prime-rl-noisy", "trl-week") else pytest.mark.slow) for k in BENCH_LOGS])
def test_every_benchmark_log_reads_the_same_both_ways(kind, tmp_path, monkeypatch):
    """The backfill benchmark's logs (benchmarks/backfill_logs.py), 3 MB each: a week's mixes of
    noise, step lines in batches, tables, transcripts, read through every backend and record by
    record say the same."""
    import sys

    sys.path.append(str(REPO))
    from benchmarks.backfill import KINDS

    root = str(tmp_path / "run")
    KINDS[kind][0](root, 3 << 20)
    fast, careful = both_ways(root, monkeypatch)
    assert fast == careful and (fast["progress"]["step"] or kind == "vllm")


def test_a_warning_and_a_failed_rollout_after_every_step_leave_the_step_lines_one_batch_and_the_run_reads_the_same(tmp_path, monkeypatch):
    """A warning counts by its kind whatever the step, and a failed rollout is cleared by the next
    rollout step whichever goes first, so the batch is folded past them (the last step's failure
    stays); an error between two step lines still cuts the batch (it is judged against the steps
    around it)."""
    from runtop.state.run import RunState

    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    lines = []
    for s in range(1, 61):
        t = f"14:{s // 60:02d}:{s % 60:02d}"
        lines.append(f"{t} SUCCESS Step {s} |   31.0s | Reward 0.{s:02d} | Seq. Length 512.0 tokens/sample")
        lines.append(f"{t} WARNING Reward function returned None for {s % 3 + 1} samples; counted as 0")
        lines.append(f"{t} WARNING Trace failed in group {s:032x} (reverse-text) \u2014 ProviderError: Request timed out.")
        if s == 30:
            lines.append(f"{t}   ERROR Failed to reach the env server: ConnectionRefusedError")
    (logs / "orchestrator.log").write_text("\n".join(lines) + "\n")
    sizes: list[int] = []
    fold = RunState.fold_steps
    monkeypatch.setattr(RunState, "fold_steps", lambda self, cols, source: (sizes.append(len(cols.steps)), fold(self, cols, source))[1])
    fast, careful = both_ways(str(tmp_path / "run"), monkeypatch)
    assert fast == careful and fast["progress"]["rollout_step"] == 60
    assert "ProviderError" in json.dumps(fast)  # the failure after the last step is still news
    assert set(sizes) == {30}, sizes  # two batches a reading, cut at the error
