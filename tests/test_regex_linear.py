"""Every regex and every parser costs linear time in the line's length (issue 10: one
64 KB `Step 7 | 777…` line cost 70 s of CPU, on the engine thread, holding the lock).

A ratio, not a wall-clock limit: from 8 KB to 64 KB a linear cost grows about 8×, a
quadratic one 64×. Lines are built from each pattern's own alphabet, one or two
characters repeated, behind the heads real lines start with. The figures are printed by
`python benchmarks/regex_worst_case.py`.
"""

from __future__ import annotations

import importlib

import pytest

from tests.regex_audit import PARSER_MODULES, parser_entries, parser_worst, patterns_of, worst

# 8× is linear; allow noise and constant overheads, never 64×.
MAX_GROWTH = 24.0
# Below this a 64 KB line is plainly not quadratic (that costs seconds), whatever the ratio.
NOISE_S = 0.004


def _grows_linearly(small: float, large: float) -> bool:
    return large < NOISE_S or large / max(small, 1e-5) < MAX_GROWTH


@pytest.mark.parametrize("module", [*PARSER_MODULES, "configs", "checkpoints", "skim"])
def test_every_pattern_is_linear_on_its_own_alphabet(module):
    mod = importlib.import_module(f"runtop.parsers.{module}")
    for name, p in patterns_of(mod).items():
        small, large, unit = worst(p, 4 << 10, 32 << 10)
        assert _grows_linearly(small, large), f"{module}.{name}: {small * 1e3:.1f} ms → {large * 1e3:.1f} ms on {unit!r}×"


@pytest.mark.parametrize("entry", list(parser_entries()))
def test_every_parser_is_linear_on_8_and_64_kb_lines(entry):
    fn, heads = parser_entries()[entry]
    small, large, what = parser_worst(fn, heads)
    assert _grows_linearly(small, large), f"{entry}: {small * 1e3:.1f} ms at 8 KB → {large * 1e3:.1f} ms at 64 KB on {what}"
