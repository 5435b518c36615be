"""`runtop actions` and `runtop send`: the vetted actions from the command line (the TUI's
keys plan the same actions through the same registry, `runtop.actions.vetted`)."""

from __future__ import annotations

import argparse
import sys

from runtop.actions.vetted import Context
from runtop.cli.common import _err, _thresholds, files, print
from runtop.exit_codes import EXIT_OK, EXIT_READ_ONLY, EXIT_USAGE


def _action_context(args: argparse.Namespace, *, judged: bool = False) -> Context:
    """The run's context for planning; `judged`: read and judged by the engine, as a check-in
    sent from here writes its verdict."""
    from runtop.actions.vetted import Context
    from runtop.config import load_actions
    from runtop.engine.snapshot import read_and_judge, read_run
    from runtop.sources.slurm import read_job

    verdict = None
    if judged:
        state, verdict = read_and_judge(args.path, cfg=_thresholds(args), **files(args))
    else:
        state = read_run(args.path, **files(args))
    # A run in a SLURM job resumes by sbatch and stops by scancel: its job is read first.
    state.slurm = read_job(state.path, args.slurm_job, [p for ps in (state.processes or {}).values() for p in ps])
    return Context.for_run(
        state,
        cfg=load_actions(args.config),
        socket=args.tmux_socket,
        session=args.tmux_session,
        target=args.tmux_target,
        launch_cmd=args.launch_cmd,
        read_only=args.read_only,
        verdict=verdict,
    )


def cmd_actions(args: argparse.Namespace) -> int:
    from runtop.actions.vetted import REGISTRY, plans

    ctx = _action_context(args)
    if ctx.read_only:
        print("read-only: no actions")
        return EXIT_OK
    keys = {a.name: a.key for a in REGISTRY}
    for p in plans(ctx):
        head = f"{p.name:<10} [{keys[p.name]}] {p.description}"
        if p.disabled:
            print(f"{head}\n    disabled: {p.disabled}" + (f"\n    would send: {p.text}" if p.text else ""))
            continue
        print(f"{head}\n    sends: {p.text}")
        if p.confirm:
            print(f"    confirm by typing: {p.confirm}")
        for note in p.notes:
            print(f"    {note}")
    return EXIT_OK


def cmd_send(args: argparse.Namespace) -> int:
    from runtop.actions.dispatch import dispatch
    from runtop.actions.vetted import ActionError, ReadOnly, plan

    ctx = _action_context(args, judged=args.action == "checkin")
    try:
        p = plan(args.action, ctx)
        if p.disabled:
            _err(f"{p.name} is disabled: {p.disabled}")
            return EXIT_USAGE
        if args.step is not None and p.confirm != str(args.step):
            _err(f"not sent: --step {args.step} is not the last complete checkpoint of this run ({p.confirm or 'none'}); {p.name} would send: {p.text}")
            return EXIT_USAGE
        if not args.yes:
            _err(f"not sent: add --yes to send exactly this: {p.text}")
            return EXIT_USAGE
        step = f" (step {p.confirm})" if p.name in ("resume", "restart") else ""
        where = f" to {ctx.pane().target}" if any(s.kind in ("keys", "interrupt") for s in p.steps) else ""
        print(f"sending {p.name}{step}{where}: {p.text}", file=sys.stderr)
        print(dispatch(p, ctx, confirmation=p.confirm, progress=lambda m: print(f"  {m}", file=sys.stderr)))
    except ReadOnly as e:
        _err(str(e))
        return EXIT_READ_ONLY
    except ActionError as e:
        _err(str(e))
        return EXIT_USAGE
    return EXIT_OK
