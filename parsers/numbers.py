"""Numbers and JSON from untrusted text, total: a bad value is None, never an exception.

`'²'.isdigit()` is true and `int('²')` raises; `float('1.2.3')` raises;
JSON nested 1000 deep raises RecursionError; an int of 5,000 digits raises
ValueError (CPython's digit limit). Every parser reads numbers through here.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# ASCII only (`re.ASCII`): `\d` would otherwise accept Arabic-Indic and other digits.
_INT_RE = re.compile(r"[-+]?[0-9]{1,18}", re.ASCII)
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][-+]?[0-9]{1,4})?|[-+]?(?:nan|inf|infinity)", re.ASCII | re.I)


# The step lines' numbers, one object per distinct value: a week of step lines repeats the same
# few (`Turns 1.0`, `Error 0.0%`, `31.0s`) and each copy was 24 bytes a row of a 200k-step run.
# Bounded: past this many values each number is its own again.
MAX_SHARED_FLOATS = 4096
_SHARED: dict[float, float] = {}
_ZERO, _MINUS_ZERO = 0.0, float("-0.0")  # equal as keys, so kept apart by sign


def shared(v: float) -> float:
    """`v`, as the same object as an equal number seen before (a NaN is never equal: itself)."""
    if not v:
        return _ZERO if math.copysign(1.0, v) > 0 else _MINUS_ZERO
    got = _SHARED.get(v)
    if got is not None:
        return got
    if v == v and len(_SHARED) < MAX_SHARED_FLOATS:
        _SHARED[v] = v
    return v


def shared_float(text: str, percent: bool = False) -> float:
    """`float(text)` (divided by 100 for a percentage), shared."""
    return shared(float(text) / 100.0 if percent else float(text))


def strict_int(text: str | None) -> int | None:
    """An ASCII integer of at most 18 digits (`-3`, `+12`), else None."""
    if text is None:
        return None
    text = text.strip()
    if not _INT_RE.fullmatch(text):
        return None
    return int(text)


def strict_float(text: str | None) -> float | None:
    """An ASCII decimal (`0.5`, `3e-06`, `nan`), else None. Non-finite values are kept:
    whoever prints them decides (`null` in JSON, `nan` on screen)."""
    if text is None:
        return None
    text = text.strip()
    if not _FLOAT_RE.fullmatch(text):
        return None
    return float(text)


def finite(v: float | None) -> float | None:
    """`v` when it is a finite number, else None."""
    return v if v is not None and math.isfinite(v) else None


def loads(text: str | bytes) -> Any:
    """`json.loads`, but every failure (bad text, nesting deeper than the interpreter's
    recursion limit) is a ValueError, the one exception callers handle."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except (TypeError, UnicodeDecodeError) as e:
        raise ValueError(str(e)) from None
