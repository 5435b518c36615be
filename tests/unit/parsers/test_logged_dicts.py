"""A trainer's logged dict read in one pattern pass reads as the literal parser reads it: every
dict a console prints at every step, with its numbers plain or quoted, its bare `nan`, its odd
keys, or something no flat reading may take (escapes, `007`, `1_000`, nesting, numpy)."""

from __future__ import annotations

import ast
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers.progress import _evaluated_dict, flat_dict, literal_dict, logged_dict
from tests.inner import examples

NUMBERS = st.one_of(
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["1.", ".5", "-.5", "00", "-0", "007", "01.5", "1e5", "1E-3", "1e400", "-0.0", "1_000", "0x1f", "1j", "١"]),
)
BARE = st.sampled_from(["nan", "inf", "-inf", "-nan", "True", "False", "None", "true", "nanx"])
STRINGS = st.one_of(st.text(max_size=12), st.sampled_from(["nan", ", nan}", "x: inf,", "\\n", "'", "é", "0.1146"]))
VALUES = st.one_of(NUMBERS, BARE, STRINGS.map(lambda s: "'" + s + "'"), st.just("{'a': 1}"), st.just("np.float64(0.5)"))
KEYS = st.one_of(st.sampled_from(["loss", "grad_norm", "nan", "a, nan]", "completions/mean_length"]), st.text(max_size=10))


def _literal_eval_alone(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(type(a[k]) is type(b[k]) and _same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.tuples(KEYS, VALUES), max_size=8), st.sampled_from([", ", ","]))
def test_a_flat_reading_is_the_literal_parsers_reading_or_none(pairs, sep):
    text = "{" + sep.join(f"'{k}': {v}" for k, v in pairs) + "}"
    flat = flat_dict(text)
    if flat is not None:
        assert _same(flat, _evaluated_dict(text)), text
    alone = flat_dict(text, bare=False)  # as SkyRL's reader has it: ast.literal_eval alone
    if alone is not None:
        assert _same(alone, _literal_eval_alone(text)), text


def test_the_dicts_trl_prints_at_every_step_are_read_flat():
    for text in ["{'loss': -0.0470, 'grad_norm': 0.000126, 'learning_rate': 3.2e-08, 'epoch': 0.0000}",
                 "{'loss': '0.0470', 'reward': '0.41', 'num_tokens': '248282.0', 'epoch': '0.01'}",
                 "{'loss': 0.0, 'grad_norm': nan, 'kl': inf}"]:
        assert flat_dict(text) is not None, text
        assert _same(literal_dict(text), _evaluated_dict(text))
    assert logged_dict("{'loss': 0.0, 'grad_norm': nan}") is not None
    assert math.isnan(logged_dict("{'loss': 0.0, 'grad_norm': nan}")["grad_norm"])


def test_what_no_flat_reading_may_take_goes_to_the_literal_parser():
    for text in ["{'a': 007}", "{'a': 1_000}", "{'a': {'b': 1}}", "{'a': np.float64(0.5)}", "{'a\\'b': 1}", "{'a': 1j}"]:
        assert flat_dict(text) is None, text
    assert literal_dict("{'a': np.float64(0.5)}") == {"a": 0.5}
    assert literal_dict("{'a': 007}") is None
