"""`runtop compare RUN RUN…`: runs side by side. In a terminal it opens the runs table on
those runs with the compare screen on top (one chart per metric, every run overlaid, a
legend by run, a smoothing key, the latest values and trends); without one (a pipe, a
script) or with `--json` it prints each run's latest value and trend per metric once.

A directory of runs counts as its runs. Exit codes: 0; 2 fewer than two runs named; 3 a run
runtop cannot read, or runs that share no metric (nothing to put side by side).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from runtop.cli.common import _err, print
from runtop.exit_codes import EXIT_CANNOT_READ, EXIT_OK, EXIT_USAGE
from runtop.fleet.compare import ARROW, FLAT, RunSeries, common_metrics, label, metrics_of, series_of
from runtop.fleet.runs import run_name
from runtop.frameworks.discovery import DiscoveryError, discover


def runs_named(paths: Sequence[str]) -> list[str] | str:
    """Every run the paths name (a directory of runs gives each), once each; or the one line
    that says why not."""
    from runtop.fleet.runs import runs_of

    runs: list[str] = []
    for path in paths:
        try:
            found = runs_of([path])
            if found == [path]:
                discover(path)  # a path that is no run says why here, not as a row later
        except DiscoveryError as e:
            return str(e)
        runs += [r for r in found if r not in runs]
    if len(runs) < 2:
        return f"give two runs or more to compare ({len(runs)} given: {', '.join(map(run_name, runs)) or 'none'})"
    return runs


def read_series(runs: Sequence[str], args: argparse.Namespace) -> list[RunSeries] | str:
    """Each run read once (the last 8 MB of each log, as `status` reads it; `--full` for all)."""
    from runtop.engine.snapshot import BOUNDED_TAIL, read_run

    out = []
    for run in runs:
        try:
            state = read_run(run, processes=False, tail=None if args.full else BOUNDED_TAIL, framework=args.framework)
        except DiscoveryError as e:
            return str(e)
        out.append(series_of(state, run_name(run), run, trend_steps=args.last))
    return out


def doc_of(series: Sequence[RunSeries], trend_steps: int) -> dict[str, object]:
    metrics = metrics_of(series)
    return {
        "metrics": metrics, "common": common_metrics(series), "trend_steps": trend_steps,
        "runs": [{"run": s.name, "path": s.path, "step": s.step, "latest": {m: s.latest.get(m) for m in metrics},
                  "trend": {m: s.trends.get(m) for m in metrics}} for s in series],
    }


def table_lines(series: Sequence[RunSeries]) -> list[str]:
    """One line per metric, one column per run: the latest value and its trend (↑ ↓ →)."""
    from runtop.widgets.render import column_format

    metrics = metrics_of(series)
    label_w = max(len("metric"), *(len(label(m)) for m in metrics))
    widths = [max(12, len(s.name)) for s in series]
    lines = [f"{'metric':<{label_w}}" + "".join(f"  {s.name:>{w}}" for s, w in zip(series, widths)),
             f"{'step':<{label_w}}" + "".join(f"  {s.step if s.step is not None else '-':>{w}}" for s, w in zip(series, widths))]
    for m in metrics:
        fmt = column_format([s.latest[m] for s in series if m in s.latest])  # one format per line: the runs read alike
        cells = []
        for s, w in zip(series, widths):
            v = s.latest.get(m)
            cells.append(f"  {fmt(v) + ' ' + ARROW[s.trends.get(m, FLAT)] if v is not None else '-':>{w}}")
        lines.append(f"{label(m):<{label_w}}" + "".join(cells))
    return lines


def cmd_compare(args: argparse.Namespace) -> int:
    runs = runs_named(args.paths)
    if isinstance(runs, str):
        _err(f"compare: {runs}")
        return EXIT_USAGE if runs.startswith("give two runs") else EXIT_CANNOT_READ
    from runtop.cli.live import _use_tui

    if not args.json and _use_tui(args):
        from runtop.cli.live import _run_fleet

        args.path, args.more = runs[0], runs[1:]  # the runs table's summary names where the runs came from
        return _run_fleet(runs, args, compare=True)
    series = read_series(runs, args)
    if isinstance(series, str):
        _err(f"compare: {series}")
        return EXIT_CANNOT_READ
    if not common_metrics(series):
        logs = "; ".join(f"{s.name}: {', '.join(metrics_of([s])[:4]) or 'no step metrics yet'}" for s in series)
        _err(f"compare: these runs share no metric, nothing to put side by side ({logs})")
        return EXIT_CANNOT_READ
    if args.json:
        json.dump(doc_of(series, args.last), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    for line in table_lines(series):
        print(line)
    print(f"(latest value and its trend over the last {args.last} steps: ↑ rising, ↓ falling, → flat)")
    return EXIT_OK
