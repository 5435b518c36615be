"""Every regex and every parser costs linear time in the line's length (one
64 KB `Step 7 | 777…` line cost 70 s of CPU, on the engine thread, holding the lock).

A ratio, not a wall-clock limit: from 8 KB to 64 KB a linear cost grows about 8×, a
quadratic one 64×. Lines are built from each pattern's own alphabet, one or two
characters repeated, behind the heads real lines start with. The figures are printed by
`python benchmarks/regex_worst_case.py`.

Both sweeps are marked `slow`, like the fuzz: CI runs them, the full one over every character
and pair of every alphabet, the quick one over the shapes that were quadratic before and each
pattern's own text. While you work, a test checks that the quick sweep still catches a
quadratic pattern.
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


MODULES = [*PARSER_MODULES, "configs", "checkpoints", "skim", "slurm"]
# Both sweeps run in CI; the inner loop keeps the test that the quick one still catches a
# quadratic pattern (below).
SWEEPS = [pytest.param(True, id="known-shapes", marks=pytest.mark.slow), pytest.param(False, id="full-sweep", marks=pytest.mark.slow)]


@pytest.mark.parametrize("quick", SWEEPS)
@pytest.mark.parametrize("module", MODULES)
def test_every_pattern_is_linear_on_its_own_alphabet(module, quick):
    mod = importlib.import_module(f"runtop.parsers.{module}")
    for name, p in patterns_of(mod).items():
        small, large, unit = worst(p, 4 << 10, 32 << 10, quick)
        assert _grows_linearly(small, large), f"{module}.{name}: {small * 1e3:.1f} ms → {large * 1e3:.1f} ms on {unit!r}×"


@pytest.mark.parametrize("quick", SWEEPS)
@pytest.mark.parametrize("entry", list(parser_entries()))
def test_every_parser_is_linear_on_8_and_64_kb_lines(entry, quick):
    fn, heads = parser_entries()[entry]
    small, large, what = parser_worst(fn, heads, quick=quick)
    assert _grows_linearly(small, large), f"{entry}: {small * 1e3:.1f} ms at 8 KB → {large * 1e3:.1f} ms at 64 KB on {what}"


def test_the_quick_sweep_still_catches_a_quadratic_pattern():
    """The known shapes are not a formality: a pattern that rescans the rest of the line from
    every start (`[\\d ]+\\|` on `7 7 7 …` without the bar) fails the quick check."""
    import re

    p = re.compile(r"[\d ]+\|", re.ASCII)
    small, large, unit = worst(p, 1 << 10, 8 << 10, quick=True)
    assert not _grows_linearly(small, large), (small, large, unit)
