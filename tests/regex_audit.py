"""Find regexes whose cost grows faster than the line (issue 10: quadratic backtracking).

Shared by tests/test_regex_linear.py and benchmarks/regex_worst_case.py. Each compiled
pattern of a module is run (search and findall) over lines built from its own alphabet:
every character its source names, one or two at a time, repeated to the line's length.
"""

from __future__ import annotations

import itertools
import re
import sre_parse
import time
from types import ModuleType

# Stand-ins for the classes a pattern names (`\d`, `\w`, `\s`, `.`, `[^…]`).
CLASS_REPS = "7a .-:|=_/@({['\"x"


def patterns_of(module: ModuleType) -> dict[str, re.Pattern[str]]:
    return {name: v for name, v in vars(module).items() if isinstance(v, re.Pattern) and isinstance(v.pattern, str)}


def alphabet(p: re.Pattern[str]) -> list[str]:
    chars: set[str] = set(CLASS_REPS)

    def walk(tokens) -> None:
        for op, av in tokens:
            if op is sre_parse.LITERAL:
                chars.add(chr(av))
            elif op is sre_parse.IN:
                for op2, av2 in av:
                    if op2 is sre_parse.LITERAL:
                        chars.add(chr(av2))
                    elif op2 is sre_parse.RANGE:
                        chars.add(chr(av2[0]))
            elif isinstance(av, (list, tuple)):
                for sub in av:
                    if isinstance(sub, sre_parse.SubPattern):
                        walk(sub)
                    elif isinstance(sub, (list, tuple)):
                        for s in sub:
                            if isinstance(s, sre_parse.SubPattern):
                                walk(s)

    try:
        walk(sre_parse.parse(p.pattern, p.flags))
    except Exception:  # noqa: BLE001 - an unusual pattern: the stand-ins still apply
        pass
    return sorted(c for c in chars if c.isprintable() and c != "\n")


def units(p: re.Pattern[str]) -> list[str]:
    a = alphabet(p)
    out = list(a) + ["".join(pair) for pair in itertools.combinations(a, 2)]
    # The pattern's own literal text, repeated: `Step 7 | Step 7 | …`.
    lit = re.sub(r"\\[dws]|[\\()\[\]?*+{}^$|]", "", p.pattern)[:40]
    if lit:
        out.append(lit)
    return out


def cost(p: re.Pattern[str], line: str) -> float:
    t0 = time.perf_counter()
    p.search(line)
    p.findall(line)
    return time.perf_counter() - t0


def worst(p: re.Pattern[str], small: int, large: int) -> tuple[float, float, str]:
    """(cost at `small`, cost at `large`, unit) for the unit whose cost grows most."""
    best = (0.0, 0.0, "")
    for unit in units(p):
        reps = max(1, small // len(unit))
        a = cost(p, unit * reps)
        if a < 2e-5 and best[1] > 0:
            continue  # cheap at the small size: a quadratic pattern shows here already
        b = cost(p, unit * (reps * large // small))
        if b > best[1]:
            best = (a, b, unit)
    return best
