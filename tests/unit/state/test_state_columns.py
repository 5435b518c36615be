"""The step history in columns keeps what rows of dicts kept: whatever steps come (out of order,
again, from another source, from a new attempt that redoes them, from the history read behind a
live tail), every row reads as the rows-of-dicts reducer would have left it, blocks split and
are copied as they must, and a frozen copy (a published view) never sees a later write."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtop.state.columns as state_columns
from runtop.parsers.events import ORCHESTRATOR, TRAINER, Resumed, StepMetrics
from runtop.parsers.step_batches import StepColumns
from runtop.state.parts import ORIGIN_RANK, StepRow
from runtop.state.run import RunState
from tests.inner import examples


class Reference:
    """The reducer as it was when a row was a dict per side (the rules of what wins)."""

    def __init__(self) -> None:
        self.rows: dict[int, StepRow] = {}
        self.lost: list[StepRow] = []
        self.attempt = 1

    def step(self, ev: StepMetrics) -> None:
        row = self.rows.get(ev.step)
        if row is not None and row.attempt < self.attempt:
            row.superseded = True
            self.lost.append(row)
            row = None
        if row is None:
            row = self.rows[ev.step] = StepRow(ev.step, self.attempt, {}, {}, {}, {}, {})
        target = row.trainer if ev.role == TRAINER else row.rollout
        for name, value in ev.values.items():
            key = f"{ev.role}.{name}"
            old = row.origin.get(key)
            if old is not None and ORIGIN_RANK.get(ev.origin, 2) < ORIGIN_RANK.get(old, 2):
                continue
            target[name] = value
            row.origin[key] = ev.origin
        for name, value in ev.phases_s.items():
            if ev.origin == "dump" and name in row.phases_s:
                continue
            row.phases_s[name] = value
        row.extra.update(ev.extra)

    def resume(self, step: int) -> None:
        for s in sorted(self.rows):
            if s > step and self.rows[s].attempt < self.attempt:
                row = self.rows.pop(s)
                row.superseded = True
                self.lost.append(row)


def plain(row: StepRow) -> tuple:
    def d(m: dict) -> dict:
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in m.items()}

    return row.step, row.attempt, d(row.trainer), d(row.rollout), dict(row.origin), d(row.phases_s), d(row.extra), row.superseded


VALUES = st.dictionaries(st.sampled_from(["reward", "loss", "seq_len", "grad_norm", "step_time_s"]),
                         st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0), st.just(0.0)), max_size=3)
EVENT = st.builds(
    StepMetrics, st.sampled_from([TRAINER, ORCHESTRATOR, "generator"]), st.integers(0, 40), VALUES,
    st.dictionaries(st.sampled_from(["gen", "train"]), st.floats(0, 100), max_size=2),
    st.sampled_from(["log", "metrics", "dump", "bar", "status"]), st.sampled_from([None, "12:00:00"]),
    st.dictionaries(st.sampled_from(["kl", "pg", "trainable_frac"]), st.floats(allow_nan=False), max_size=2),
)
OP = st.one_of(EVENT.map(lambda e: ("step", e)), st.just(("attempt", None)), st.integers(0, 40).map(lambda s: ("resume", s)),
               st.just(("freeze", None)), st.lists(EVENT, max_size=6).map(lambda evs: ("batch", evs)))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # BLOCK is the same for every input
@given(st.lists(OP, max_size=60))
def test_every_row_reads_as_rows_of_dicts_would_have_whatever_comes_in_whatever_order(monkeypatch, ops):
    monkeypatch.setattr(state_columns, "BLOCK", 4)  # many blocks: splits and copies are exercised
    from runtop.view.publish import Publisher

    s, ref, pub = RunState(), Reference(), Publisher()
    frozen: list[tuple[RunState, list[tuple]]] = []
    for kind, arg in ops:
        if kind == "step":
            s.apply(arg, "log")
            ref.step(arg)
        elif kind == "batch":
            # one role's run of rising steps of one shape, as a batch reader gives it
            evs = sorted({e.step: e for e in arg if e.role == ORCHESTRATOR}.values(), key=lambda e: e.step)
            if not evs:
                continue
            first = evs[0]
            evs = [e for e in evs if (set(e.values), set(e.phases_s), set(e.extra), e.origin) == (set(first.values), set(first.phases_s), set(first.extra), first.origin)]
            cols = StepColumns(ORCHESTRATOR, first.origin, [e.step for e in evs], [e.time for e in evs],
                               {n: [e.values[n] for e in evs] for n in first.values}, {n: [e.phases_s[n] for e in evs] for n in first.phases_s},
                               {n: [e.extra[n] for e in evs] for n in first.extra})
            s.fold_steps(cols, "log")
            for e in evs:
                ref.step(e)
        elif kind == "attempt":
            if s.new_attempt("relaunch"):
                ref.attempt += 1
        elif kind == "resume":
            s.apply(Resumed(TRAINER, arg), "log")
            ref.resume(arg)
        else:
            view = pub.freeze(s)
            frozen.append((view, [plain(r) for r in view.rows()]))
    assert [plain(r) for r in s.rows()] == [plain(ref.rows[k]) for k in sorted(ref.rows)]
    assert s.step_keys() == sorted(ref.rows) and len(s.steps) == len(ref.rows)
    assert [plain(r) for r in s.lost_steps] == [plain(r) for r in ref.lost[-len(s.lost_steps):]] if s.lost_steps else not ref.lost
    for view, rows in frozen:
        assert [plain(r) for r in view.rows()] == rows  # a published view never saw a later write
    # What the rules read at every poll, from the columns, is what the rows say.
    for name in ("reward", "loss", "seq_len", "grad_norm", "step_time_s"):
        for window in (1, 3, 7, 50):
            rows = s.rows(window)
            want = [(r.step, v) for r in rows if r.attempt == s.attempt and (v := r.value(name)) is not None]
            assert _marked(s.value_series(name, window)) == _marked(want)
            for side, of in ((state_columns.TRAINER, lambda r: r.trainer), (state_columns.ROLLOUT, lambda r: r.rollout)):
                assert _marked(s.steps.series(side, name, window)) == _marked([(r.step, of(r)[name]) for r in rows if name in of(r)])


def _marked(series: list[tuple[int, float]]) -> list[tuple[int, object]]:
    return [(step, "nan" if math.isnan(v) else v) for step, v in series]


def test_the_history_behind_a_live_tail_is_spliced_below_its_first_step(monkeypatch):
    monkeypatch.setattr(state_columns, "BLOCK", 4)
    s = RunState()
    for k in range(100, 111):
        s.apply(StepMetrics(ORCHESTRATOR, k, {"reward": k / 1000}), "log")
    view = s.steps.frozen()
    history = [StepRow(k, 1, {}, {"reward": k / 1000}, {"orchestrator.reward": "log"}, {}, {"kl": 0.1}) for k in range(1, 100)]
    assert s.merge_history(history[:50]) and s.merge_history(history[50:])
    assert s.step_keys() == list(range(1, 111)) and s.steps[42].rollout == {"reward": 0.042} and s.steps[42].extra == {"kl": 0.1}
    assert s.steps[105].value("reward") == 0.105 and view.keys_list() == list(range(100, 111))
    with pytest.raises(KeyError):
        view[42]
