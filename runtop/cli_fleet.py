"""Several runs at once (issue 17, "a fleet of runs"): `runtop status --all DIR` and
`runtop check --all DIR` judge every run under DIR (each subdirectory runtop recognises, or
DIR itself), most troubled first; `check --all` exits with the worst run's code."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from runtop.cli import CHECK_EXIT, EXIT_CANNOT_READ, _thresholds, print
from runtop.config import Thresholds
from runtop.discovery import DiscoveryError
from runtop.fleet import TROUBLE, runs_of


def judge_all(args: argparse.Namespace) -> list[tuple[str, str, object, object]]:
    """(path, verdict word, state or None, verdict or error text) for each run, worst first."""
    from runtop.snapshot import BOUNDED_TAIL

    return judge(runs_of([args.path]), _thresholds(args), tail=None if getattr(args, "full", False) else BOUNDED_TAIL)


def judge(runs: list[str], cfg: Thresholds, tail: int | None = None) -> list[tuple[str, str, object, object]]:
    from runtop.snapshot import read_and_judge

    out: list[tuple[str, str, object, object]] = []
    for run in runs:
        try:
            state, verdict = read_and_judge(run, cfg=cfg, tail=tail)
        except DiscoveryError as e:
            out.append((run, "cannot read", None, str(e)))
            continue
        out.append((run, verdict.verdict, state, verdict))
    out.sort(key=lambda r: (TROUBLE.get(r[1], 9), r[0]))
    return out


def cmd_status_all(args: argparse.Namespace) -> int:
    from runtop.report_json import to_json

    rows = judge_all(args)
    if not args.json:
        return _table(rows)
    docs = [to_json(state, verdict, include_steps=False) if state is not None else {"path": run, "error": verdict}  # type: ignore[arg-type]
            for run, _word, state, verdict in rows]
    json.dump(docs, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


def print_table(runs: list[str], cfg: Thresholds) -> int:
    """`runtop DIR` without a terminal: the runs table once, as `status --all` prints it."""
    from runtop.snapshot import BOUNDED_TAIL

    return _table(judge(runs, cfg, tail=BOUNDED_TAIL))


def _table(rows: list[tuple[str, str, object, object]]) -> int:
    now = time.time()
    print(f"{'verdict':<9} {'run':<32} {'framework':<9} {'step':>11} {'last write':>10}  cause")
    for run, word, state, verdict in rows:
        name = os.path.basename(run.rstrip(os.sep)) or run
        if state is None:
            print(f"{word:<9} {name:<32} {'?':<9} {'':>11} {'':>10}  {verdict}")
            continue
        step = f"{state.step if state.step is not None else '-'}/{state.max_steps or '?'}"  # type: ignore[attr-defined]
        writes = state.write_times()  # type: ignore[attr-defined]
        age = f"{int(now - max(writes))}s" if writes else "-"
        cause = "; ".join(verdict.reasons[:1])  # type: ignore[attr-defined]
        print(f"{word:<9} {name[:32]:<32} {state.framework:<9} {step:>11} {age:>10}  {cause}")  # type: ignore[attr-defined]
    return 0


def cmd_check_all(args: argparse.Namespace) -> int:
    rows = judge_all(args)
    codes = []
    for run, word, state, verdict in rows:
        name = os.path.basename(run.rstrip(os.sep)) or run
        if state is None:
            print(f"cannot read: {name} — {verdict}")
            codes.append(EXIT_CANNOT_READ)
            continue
        reasons = f" — {'; '.join(verdict.reasons)}" if verdict.reasons else ""  # type: ignore[attr-defined]
        print(f"{word}: {name}{reasons}")
        codes.append(CHECK_EXIT.get(word, 1))
    # The worst run's code, in the same order of trouble as the listing.
    order = {2: 0, EXIT_CANNOT_READ: 1, 1: 2, 4: 3, 0: 4}
    return min(codes, key=lambda c: order.get(c, 9)) if codes else EXIT_CANNOT_READ
