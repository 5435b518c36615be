"""What the inner loop (`pytest -m "not slow and not live"`, or `-m "not slow"`) reads in less than
CI's full suite does: a property test draws a tenth of its examples, and a family of cases (the
corpus, the simulators' scenarios) is read through its first few; `slow` marks the rest, which CI
reads (docs/architecture.md, "Tests")."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

INNER = False  # set by conftest before collection: the marker expression leaves `slow` out


def examples(n: int) -> int:
    """A property test's example count: all of them in CI, a tenth (at least 20) in the inner loop."""
    return max(20, n // 10) if INNER else n


def first_of_each(cases: Iterable[Any], family: Callable[[Any], str], keep: int = 2, ids: Callable[[Any], str] | None = None) -> list[Any]:
    """`cases` as parameters, all but the first `keep` of each family marked `slow`."""
    seen: dict[str, int] = {}
    out = []
    for case in cases:
        k = family(case)
        seen[k] = seen.get(k, 0) + 1
        marks = () if seen[k] <= keep else (pytest.mark.slow,)
        out.append(pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=marks, id=ids(case) if ids else None))
    return out
