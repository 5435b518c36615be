"""Find regexes whose cost grows faster than the line (quadratic backtracking).

Shared by tests/unit/parsers/test_regex_linear.py and benchmarks/regex_worst_case.py. Each compiled
pattern of a module is run (search and findall) over lines built from its own alphabet:
every character its source names, one or two at a time, repeated to the line's length.
"""

from __future__ import annotations

import gc
import itertools
import re
import time
from collections.abc import Callable
from types import ModuleType

try:  # Python 3.11+: the parser's home; `sre_parse` is its deprecated alias
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

MAX_PAIRS = 300
KNOWN_PAIRS = ["7_", "_a", "7f", "'\\", '"\\', "7s", "7.", "a=", "a:", "E.", " a"]
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


def units(p: re.Pattern[str], quick: bool = False) -> list[str]:
    """The repeated units lines are built of: every character and an even sample of pairs of
    the pattern's alphabet, or (`quick`) the pairs that found quadratic patterns before."""
    lit = _literal(p)
    if quick:
        return KNOWN_PAIRS + lit
    a = alphabet(p)
    pairs = ["".join(pair) for pair in itertools.combinations(a, 2)]
    # Big alphabets (the redaction's words) give thousands of pairs: an even sample of them,
    # plus the pairs that found quadratic patterns before.
    stride = max(1, len(pairs) // MAX_PAIRS)
    return list(a) + pairs[::stride] + KNOWN_PAIRS + lit


def _literal(p: re.Pattern[str]) -> list[str]:
    """The pattern's own literal text, to be repeated: `Step 7 | Step 7 | …`."""
    lit = re.sub(r"\\[dws]|[\\()\[\]?*+{}^$|]", "", p.pattern)[:40]
    return [lit] if lit else []


def cost(p: re.Pattern[str], line: str) -> float:
    # CPU time of this thread, not the wall clock: the cost is the pattern's, whatever else
    # the machine runs (the suite runs in parallel workers).
    # Without the collector: findall's many small tuples would trigger collections whose
    # cost grows with everything else alive, a quadratic that is not the pattern's.
    gc.disable()
    try:
        t0 = time.thread_time()
        p.search(line)
        p.findall(line)
        return time.thread_time() - t0
    finally:
        gc.enable()


def worst(p: re.Pattern[str], small: int, large: int, quick: bool = False) -> tuple[float, float, str]:
    """(cost at `small`, cost at `large`, unit) for the unit whose cost grows most."""
    best = (0.0, 0.0, "")
    for unit in units(p, quick):
        reps = max(1, small // len(unit))
        a = cost(p, unit * reps)
        if a < 2e-5 and best[1] > 0:
            continue  # cheap at the small size: a quadratic pattern shows here already
        b = cost(p, unit * (reps * large // small))
        if b / max(a, 1e-6) > 12:  # looks superlinear: best of three before believing it
            a = min(cost(p, unit * reps) for _ in range(3))
            b = min(cost(p, unit * (reps * large // small)) for _ in range(3))
        if b > best[1]:
            best = (a, b, unit)
    return best


# ---- whole parsers: hostile lines built from their patterns' alphabets ------------------
PARSER_MODULES = (
    "text", "records", "primerl", "vllm", "skyrl", "skyrl_records", "skyrl_agent", "skyrl_numbers", "skyrl_lifecycle", "crashes",
    "metrics_jsonl", "rollouts", "hygiene", "numbers", "checkpoints", "configs", "pyspy", "progress", "ends",
)


def parser_entries() -> dict[str, tuple[Callable[[str], object], list[str]]]:
    """name → (a parser entry point taking one line, the heads its lines start with)."""
    from runtop.parsers import metrics_jsonl, rollouts
    from runtop.parsers.configs import parse_config
    from runtop.parsers.hygiene import mask, public
    from runtop.parsers.skyrl_agent import called_functions, launch_config
    from runtop.parsers.text import parse_duration, split_fields
    from tests.helpers import events_of, skyrl_events_of

    prime_heads = [
        "14:01:58 SUCCESS Step 7 | ", "14:01:58    INFO rollout done: id=1 ", "14:01:58    INFO Train batch ",
        "14:01:58 WARNING ", "14:01:58   ERROR Fatal error in train\n", "E0821 14:05:23.118000 2210 api.py:882] ", "",
    ]
    vllm_heads = ["(APIServer pid=1) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: ", "INFO:     127.0.0.1:1 - \"GET ", ""]
    sky_heads = [
        "(skyrl_entrypoint pid=1) Rubric evaluation complete for instance x: ", "(skyrl_entrypoint pid=1) {'policy_loss': ",
        "(skyrl_entrypoint pid=1) Step 1: {", "Policy Train epoch [1/1]: ", "Training Batches Processed: ",
        "(skyrl_entrypoint pid=1) 2026-02-19 11:00:58.123 | WARNING  | x:y:1 - Code execution took 1.0 seconds. Code:\n", "+ python -m x ", "",
    ]
    return {
        "prime-rl orchestrator": (lambda s: events_of(s, "orchestrator"), prime_heads),
        "prime-rl trainer": (lambda s: events_of(s, "trainer"), prime_heads),
        "vLLM": (lambda s: events_of(s, "inference"), vllm_heads),
        "SkyRL driver": (lambda s: skyrl_events_of(s), sky_heads),
        "metrics.jsonl": (lambda s: metrics_jsonl.parse_line(s), ['{"step": 1, "loss/mean": ', ""]),
        "traces.jsonl": (lambda s: rollouts.parse_line(s, 1), ['{"traces": [{"rewards": ', ""]),
        "config": (lambda s: (parse_config(s, "json"), parse_config(s, "toml")), ["a = ", ""]),
        "text helpers": (lambda s: (parse_duration(s), split_fields(s)), ["Step 7 | ", ""]),
        "SkyRL launch and code": (lambda s: (launch_config(s), called_functions(s)), ["python -m x ", ""]),
        "redaction": (lambda s: (public(s), mask(s)), ["API_KEY=", "--api-key ", "Authorization: ", "https://u:", ""]),
    }


def parser_units(quick: bool = False) -> list[str]:
    import importlib

    # Pairs that made patterns quadratic before, and a few of each kind.
    pairs = ["7 ", "7.", "a ", "a=", "_a", "7_", "'\\", '"\\', "| ", "a:", "E.", "[a", "a\t", "=a", "7f", "-a"]
    if quick:
        return pairs

    chars: set[str] = set()
    for m in PARSER_MODULES:
        for p in patterns_of(importlib.import_module(f"runtop.parsers.{m}")).values():
            chars.update(alphabet(p))
    single = sorted(chars)
    return single + pairs


def line_cost(fn: Callable[[str], object], line: str, repeat: int = 3) -> float:
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.thread_time()
            fn(line)
            best = min(best, time.thread_time() - t0)
    finally:
        gc.enable()
    return best


def parser_worst(
    fn: Callable[[str], object], heads: list[str], small: int = 8 << 10, large: int = 64 << 10, quick: bool = False,
) -> tuple[float, float, str]:
    """(cost of the `small` line, cost of the `large` one, what it was) for the line whose
    cost grew most from `small` to `large` bytes."""
    worst_case = (0.0, 0.0, "")
    for head in heads:
        for unit in parser_units(quick):
            a = line_cost(fn, head + unit * (small // len(unit)), repeat=1)
            if a < 2e-4 and worst_case[1] > 0:
                continue  # cheap at 8 KB: a quadratic line costs ms there already
            b = line_cost(fn, head + unit * (large // len(unit)), repeat=1)
            if b / a > 12:  # looks superlinear: measure again, best of three, before believing it
                a = line_cost(fn, head + unit * (small // len(unit)))
                b = line_cost(fn, head + unit * (large // len(unit)))
            if b > worst_case[1]:
                worst_case = (a, b, f"{head!r} + {unit!r}×")
    return worst_case
