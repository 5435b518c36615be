"""Several runs at once: `runtop status --all DIR` and `runtop check --all DIR` judge every
run under DIR (each subdirectory runtop recognises, or DIR itself), most troubled first;
`check --all` exits with the worst run's code.

A directory that holds several runs is a fleet for every command that reads runs, by the
same decision the runs table makes (`fleet.runs_of`): `status DIR` and `check DIR` behave
as `--all`, `export DIR` serves every run and `watch DIR` watches every run. A single run's
directory reads as it always did."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from runtop.cli.common import _err, _thresholds, print
from runtop.config import Thresholds
from runtop.exit_codes import CHECK_EXIT, EXIT_CANNOT_READ, EXIT_USAGE
from runtop.fleet.runs import TROUBLE, run_name, run_names, runs_of
from runtop.frameworks.discovery import DiscoveryError
from runtop.parsers.hygiene import shown


def fleet_of(path: str | None) -> list[str] | None:
    """The runs under `path` when it is a directory holding more than one (the runs table's
    own decision); None for a single run, a log file or a path runtop cannot read (which the
    one-run path then names in its one line)."""
    if path is None or not os.path.isdir(path):
        return None
    try:
        runs = runs_of([path])
    except DiscoveryError:
        return None
    return runs if len(runs) > 1 else None


# Options that name one run's files or job: given with several runs, which run they are for
# is a guess runtop does not make.
ONE_RUN_OPTIONS = (("ckpt_dir", "--ckpt-dir"), ("metrics", "--metrics"), ("slurm_job", "--slurm-job"),
                   ("ray_address", "--ray-address"), ("append", "--append"))


def one_run_option(args: argparse.Namespace, runs: list[str], where: str) -> str | None:
    """The one-line refusal when an option of one run is given with several runs, else None."""
    given = [flag for name, flag in ONE_RUN_OPTIONS if getattr(args, name, None)]
    if not given:
        return None
    return f"{given[0]} is for one run, and {where} holds {len(runs)} runs ({run_names(runs)}): give one run's directory with {given[0]}"


def judge_all(args: argparse.Namespace) -> list[tuple[str, str, object, object]] | int:
    """(path, verdict word, state or None, verdict or error text) for each run, worst first;
    an exit code when an option of one run was given with several."""
    from runtop.engine.snapshot import BOUNDED_TAIL

    runs = runs_of([args.path])
    refusal = one_run_option(args, runs, args.path) if len(runs) > 1 else None
    if refusal is not None:
        _err(f"{args.command}: {refusal}")
        return EXIT_CANNOT_READ if args.command == "check" else EXIT_USAGE
    return judge(runs, _thresholds(args), tail=None if getattr(args, "full", False) else BOUNDED_TAIL,
                 framework=getattr(args, "framework", None))


def judge(runs: list[str], cfg: Thresholds, tail: int | None = None, framework: str | None = None) -> list[tuple[str, str, object, object]]:
    from runtop.engine.snapshot import read_and_judge

    out: list[tuple[str, str, object, object]] = []
    for run in runs:
        try:
            state, verdict = read_and_judge(run, cfg=cfg, tail=tail, framework=framework)
        except DiscoveryError as e:
            out.append((run, "cannot read", None, shown(str(e))))
            continue
        out.append((run, verdict.verdict, state, verdict))
    out.sort(key=lambda r: (TROUBLE.get(r[1], 9), r[0]))
    return out


def cmd_status_all(args: argparse.Namespace) -> int:
    from runtop.outputs.report_json import to_json

    rows = judge_all(args)
    if isinstance(rows, int):
        return rows
    if not args.json:
        return _table(rows)
    docs = [to_json(state, verdict, include_steps=False) if state is not None else {"path": run, "error": verdict}  # type: ignore[arg-type]
            for run, _word, state, verdict in rows]
    json.dump(docs, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


def print_table(runs: list[str], cfg: Thresholds) -> int:
    """`runtop DIR` without a terminal: the runs table once, as `status --all` prints it."""
    from runtop.engine.snapshot import BOUNDED_TAIL

    return _table(judge(runs, cfg, tail=BOUNDED_TAIL))


def _table(rows: list[tuple[str, str, object, object]]) -> int:
    now = time.time()
    print(f"{'verdict':<9} {'run':<32} {'framework':<9} {'step':>11} {'last write':>10}  cause")
    for run, word, state, verdict in rows:
        name = run_name(run)
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
    if isinstance(rows, int):
        return rows
    codes = []
    for run, word, state, verdict in rows:
        name = run_name(run)
        if state is None:
            print(f"cannot read: {name} — {verdict}")
            codes.append(EXIT_CANNOT_READ)
            continue
        said = list(verdict.reasons)  # type: ignore[attr-defined]
        if word == "Healthy":
            from runtop.rules.health import progress_text

            said.insert(0, progress_text(state))  # type: ignore[arg-type] # as `check RUN` says it: where the run is
        reasons = f" — {'; '.join(r for r in said if r)}" if any(said) else ""
        print(f"{word}: {name}{reasons}")
        codes.append(CHECK_EXIT.get(word, 1))
    # The worst run's code, in the same order of trouble as the listing.
    order = {2: 0, EXIT_CANNOT_READ: 1, 1: 2, 4: 3, 0: 4}
    return min(codes, key=lambda c: order.get(c, 9)) if codes else EXIT_CANNOT_READ
