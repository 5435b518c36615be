"""Numbers and JSON from untrusted text, total: a bad value is None, never an exception.

Issue 10: `'²'.isdigit()` is true and `int('²')` raises; `float('1.2.3')` raises;
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
