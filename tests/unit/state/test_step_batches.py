"""Step lines read in batches give exactly the events the record reader gives them one by one:
every prime-rl and verl step line hypothesis can write (keys of every table and none, numbers in
every form a log prints, percentages, step times, a trainable ratio of nothing, a `nan`), in runs
of one shape and mixed; and a week of a prime-rl orchestrator's and a verl driver's step lines
is read by the batch, not by the record reader, into the same rows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.frameworks.verl.parse import VerlParser
from runtop.frameworks.verl.steps import VerlSteps
from runtop.parsers import primerl
from runtop.parsers.events import Event, StepMetrics
from runtop.parsers.primerl_steps import PrimeSteps
from runtop.parsers.records import Record
from runtop.parsers.step_batches import StepRun, events_of_columns
from tests.inner import examples

ORCH_KEYS = ["Reward", "Seq. Length", "Truncation", "Error", "Cancelled", "Turns", "Branches", "Max Off-Policy", "Async Level", "Throughput"]
TRAINER_KEYS = ["Loss", "Entropy", "Mismatch KL", "Grad. Norm", "LR", "Throughput", "MFU", "Peak Mem.", "Max Vio"]
OTHER_KEYS = ["Step", "Frobnication", "Pass Rate", "Trainable"]
NUMBERS = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda v: f"{v:.4f}"),
    st.floats(min_value=1e-9, max_value=1e9).map(lambda v: f"{v:.2e}"),
    st.integers(min_value=0, max_value=10**6).map(str),
    st.sampled_from(["0", "0.0", "-0.0", ".5", "1.", "+3", "1e400", "nan", "inf", "007"]),
)
DURATIONS = st.sampled_from(["31.0s", "  1m 18s ", "412ms", "2h 5m", "1d 3h", "0.5s", "1.2.3s", "s", "9"])


@st.composite
def prime_lines(draw: st.DrawFn, keys: list[str] | None = None) -> str:
    keys = keys or draw(st.lists(st.sampled_from(ORCH_KEYS + TRAINER_KEYS + OTHER_KEYS), min_size=0, max_size=9))
    parts = [f"Step {draw(st.integers(min_value=0, max_value=10**7))}"]
    if draw(st.booleans()):
        parts.append(f" {draw(DURATIONS)} ")
    for k in keys:
        if k == "Trainable":
            parts.append(f" Trainable {draw(st.integers(0, 200))}/{draw(st.sampled_from([0, 64, 128]))} ({draw(NUMBERS)}%) ")
        else:
            parts.append(f" {k} {draw(NUMBERS)}{draw(st.sampled_from(['', '%', ' tokens/s', ' GiB']))} ")
    return "|".join(parts).rstrip()


def by_records(records: list[Record], role: str) -> list[Event]:
    return [e for rec in records for e in primerl.parse_record(rec, role)]


def by_batch(batch: PrimeSteps | VerlSteps, records: list[Record], reference) -> list[Event]:
    out: list[Event] = []
    k = 0
    for item in batch.read(records):
        if isinstance(item, StepRun):
            run = records[k : k + item.n]
            for cols in item.stamped(batch.stamp(run)):
                out.extend(events_of_columns(cols))
            k += item.n
        else:
            out.extend(reference([item]))
            k += 1
    return out


def same_per_role(a: list[Event], b: list[Event]) -> bool:
    """The same events, each role's in the same order (a batch gives a run's events role by
    role; the record reader, line by line: they fold to the same rows)."""
    roles = {e.role for e in a + b if isinstance(e, StepMetrics)}
    return sorted(map(repr, a)) == sorted(map(repr, b)) and all(
        [repr(e) for e in a if isinstance(e, StepMetrics) and e.role == r] == [repr(e) for e in b if isinstance(e, StepMetrics) and e.role == r]
        for r in roles)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(prime_lines(), min_size=1, max_size=12), st.sampled_from(["orchestrator", "trainer"]))
def test_any_prime_rl_step_lines_read_in_a_batch_give_the_record_reader_s_events(lines, role):
    records = [Record("prime", f"12:00:{i % 60:02d}", "SUCCESS", line) for i, line in enumerate(lines)]
    got = by_batch(PrimeSteps(role), records, lambda recs: by_records(recs, role))
    want = by_records(records, role)
    assert [repr(e) for e in got] == [repr(e) for e in want]


@settings(max_examples=examples(200), deadline=None)
@given(st.data(), st.sampled_from(["orchestrator", "trainer"]))
def test_a_run_of_one_shape_is_read_by_the_batch_and_its_numbers_land_as_the_record_reader_s(data, role):
    keys = data.draw(st.lists(st.sampled_from(ORCH_KEYS + TRAINER_KEYS), min_size=1, max_size=8, unique=True))
    lines = data.draw(st.lists(prime_lines(keys), min_size=2, max_size=30))
    records = [Record("prime", "12:00:00", "SUCCESS", line) for line in lines]
    batch = PrimeSteps(role)
    got = by_batch(batch, records, lambda recs: by_records(recs, role))
    assert [repr(e) for e in got] == [repr(e) for e in by_records(records, role)]


def test_a_week_of_orchestrator_step_lines_is_read_by_the_batch_not_the_record_reader(monkeypatch, tmp_path):
    import sys

    from tests.paths import REPO

    sys.path.append(str(REPO))
    from benchmarks.backfill_logs import generate_week
    from runtop.engine.reader import RunReader
    from runtop.engine.snapshot import read_all
    from runtop.frameworks.discovery import discover

    generate_week(str(tmp_path), 4 << 20)
    calls = []
    real = primerl._step_line
    monkeypatch.setattr(primerl, "_step_line", lambda rec, role: calls.append(rec) or real(rec, role))
    reader = RunReader(discover(str(tmp_path)))
    read_all(reader)
    steps = len(reader.state.steps)
    assert steps > 100 and len(calls) <= 2, f"{len(calls)} of {steps} step lines read record by record"
    row = reader.state.steps[steps // 2]
    assert row.rollout["step_time_s"] == 31.0 and row.extra == {"trainable_frac": 0.875} and row.rollout["truncated"] == 0.008


VERL_KEYS = ["actor/entropy", "actor/pg_loss", "critic/score/mean", "response_length/mean", "timing_s/step", "timing_s/gen", "perf/throughput",
             "global_seqlen/min", "val-core/openai/gsm8k/acc/mean@1", "train/loss", "actor_grad_norm", "training/epoch", "actor/entropy_loss"]
VERL_NUMBERS = st.one_of(NUMBERS, st.sampled_from(["-inf", "1e-06", "1E+3", "12345678901234567890123456789012345678901234"]))


@st.composite
def verl_lines(draw: st.DrawFn, keys: list[str] | None = None) -> str:
    keys = keys or draw(st.lists(st.sampled_from(VERL_KEYS), min_size=0, max_size=10))
    pairs = " - ".join(f"{k}:{draw(VERL_NUMBERS)}" for k in keys)
    return f"step:{draw(st.integers(min_value=0, max_value=10**6))} - {pairs}".rstrip(" -") if keys else f"step:{draw(st.integers(0, 99))} - "


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_any_verl_step_lines_read_in_a_batch_give_the_record_reader_s_events(data):
    keys = data.draw(st.lists(st.sampled_from(VERL_KEYS), min_size=1, max_size=10))
    lines = data.draw(st.lists(st.one_of(verl_lines(keys), verl_lines()), min_size=1, max_size=12))
    times = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["10:00:00", "10:00:05"])), min_size=len(lines), max_size=len(lines)))
    records = [Record("verl-step", t, None, f"{line} ", proc="TaskRunner") for line, t in zip(lines, times)]
    reference = VerlParser()
    want = reference.parse(records)
    parser = VerlParser()
    got = by_batch(VerlSteps(parser), records, parser.parse)
    assert same_per_role(got, want)
    assert parser.last_time == reference.last_time
