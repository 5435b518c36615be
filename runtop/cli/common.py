"""What every command module shares, below `runtop.cli.main` (which imports the command modules):
printing run text safely, the one-line error, the thresholds and the run options as readers take
them. A command module imports these from here, so no command module imports `runtop.cli.main`."""

from __future__ import annotations

import argparse
import builtins
import sys
from typing import TYPE_CHECKING, Any

from runtop.parsers.hygiene import public

if TYPE_CHECKING:  # imported where used: `runtop --help` stays fast
    from runtop.config import Thresholds
    from runtop.frameworks.layout import RunLayout


def files(args: argparse.Namespace) -> dict[str, Any]:
    """`--ckpt-dir`, `--metrics` and the `[metrics]` mapping, as the readers take them."""
    from runtop.config import load_metrics_map

    metrics = getattr(args, "metrics", None)
    return {"ckpt_dir": args.ckpt_dir, "metrics": metrics, "metrics_map": load_metrics_map(getattr(args, "config", None)) if metrics else None,
            "framework": getattr(args, "framework", None)}


def print(*parts: object, **kw: Any) -> None:  # noqa: A001 - shadows the builtin on purpose
    """Every line the commands print passes here: run text (a finding, a launch command, an
    error) loses its controls and secrets. What is sent to tmux is not printed."""
    builtins.print(*(public(str(p)) for p in parts), **kw)


def _err(msg: str, hint: str | None = None) -> None:
    """One short line saying what went wrong, and perhaps a second saying what to do."""
    print(f"runtop: {msg}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def _thresholds(args: argparse.Namespace) -> Thresholds:
    from runtop.config import load_judging

    return load_judging(getattr(args, "config", None), getattr(args, "simulated_speed", None))


def layout_of(args: argparse.Namespace) -> RunLayout:
    """The run at `args.path`, with `--ckpt-dir` and `--metrics` applied."""
    from runtop.frameworks.discovery import discover, with_ckpt_dir, with_metrics

    f = files(args)
    return with_metrics(with_ckpt_dir(discover(args.path, f["framework"]), f["ckpt_dir"]), f["metrics"], f["metrics_map"])
