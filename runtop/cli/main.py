"""`runtop` command line. Headless paths never import Textual.

Exit codes: 0 ok; 2 a bad argument or a file runtop cannot write (one line on stderr, never
a traceback); 3 a path runtop cannot read (no such path, not a text log), the same for every
command; 130 interrupted; 70 an internal error (one line; RUNTOP_DEBUG=1 shows the
traceback). `runtop check` has its own: 0 Healthy or Finished, 1 Degraded, 2 Down, 3 cannot
read the run or the config, 4 Unknown (nothing to judge yet). `runtop send` exits 4 in
read-only mode (nothing sent).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from runtop.cli.args import build_parser
from runtop.cli.common import _err as _err  # what every command module shares, re-exported
from runtop.cli.common import _thresholds as _thresholds
from runtop.cli.common import files as files
from runtop.cli.common import print as print  # noqa: A004 - shadows the builtin on purpose
from runtop.exit_codes import CHECK_EXIT as CHECK_EXIT  # the exit codes, re-exported for every command module
from runtop.exit_codes import EXIT_CANNOT_READ as EXIT_CANNOT_READ
from runtop.exit_codes import EXIT_INTERNAL as EXIT_INTERNAL
from runtop.exit_codes import EXIT_INTERRUPTED
from runtop.exit_codes import EXIT_OK as EXIT_OK
from runtop.exit_codes import EXIT_READ_ONLY as EXIT_READ_ONLY
from runtop.exit_codes import EXIT_USAGE as EXIT_USAGE
from runtop.frameworks.discovery import DiscoveryError
from runtop.parsers.hygiene import shown

COMMANDS = ("status", "demo", "follow", "tui", "check", "watch", "actions", "send", "notify", "forensics", "export", "serve", "mcp", "compare")


def cmd_status(args: argparse.Namespace) -> int:
    from runtop.cli.fleet import cmd_status_all, fleet_of
    from runtop.engine.snapshot import BOUNDED_TAIL, read_and_judge
    from runtop.outputs.report import to_markdown
    from runtop.outputs.report_json import write_json

    if args.all or fleet_of(args.path):
        return cmd_status_all(args)
    state, verdict = read_and_judge(args.path, cfg=_thresholds(args), slurm_job=args.slurm_job, ray_address=args.ray_address,
                                    tail=None if args.full else BOUNDED_TAIL, **files(args))
    if args.append:
        from runtop.outputs.checkin import append_checkin, status_path
        from runtop.sources.writes import OutputError

        path = status_path(state.path)
        try:
            append_checkin(path, to_markdown(state, verdict))
        except OutputError as e:
            _err(str(e))
            return EXIT_USAGE
        print(f"runtop: appended a check-in ({verdict.verdict}) to {path}", file=sys.stderr)
    elif args.json:
        write_json(state, sys.stdout, verdict)
    else:
        sys.stdout.write(to_markdown(state, verdict))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from runtop.cli.fleet import cmd_check_all, fleet_of
    from runtop.engine.snapshot import BOUNDED_TAIL, read_and_judge
    from runtop.outputs.report_json import write_json

    if args.all or fleet_of(args.path):
        return cmd_check_all(args)
    state, verdict = read_and_judge(args.path, cfg=_thresholds(args), slurm_job=args.slurm_job, ray_address=args.ray_address,
                                    tail=None if args.full else BOUNDED_TAIL, **files(args))
    if args.json:
        write_json(state, sys.stdout, verdict)
    else:
        said = list(verdict.reasons)
        if verdict.verdict == "Healthy":
            from runtop.rules.health import progress_text

            said.insert(0, progress_text(state))  # what a healthy run's one line is for: where it is
        reasons = f" — {'; '.join(r for r in said if r)}" if any(said) else ""
        # The run is named by its directory, as the fleet, `status --all`, alerts and the exporter name it.
        name = os.path.basename(os.path.normpath(state.path)) if state.path else ""
        name = f"{name} ({state.run_name})" if state.run_name and state.run_name != name else (name or state.run_name or "")
        name = shown(name)  # one line: a newline in a run's name must not forge a second
        print(f"{verdict.verdict}: {name}{reasons}")
        for a in verdict.alerts:
            where = f"  [{a.evidence}]" if a.evidence else ""
            print(f"{a.label:<8} {a.rule:<22} since {a.since or 'n/a':<8} {a.message}{where}")
    return CHECK_EXIT.get(verdict.verdict, 1)


# Commands that act on one run: given a directory of runs, they name the runs and pick none
# (sending a resume into the newest run's Launcher because it is the newest is a guess).
ONE_RUN_COMMANDS = ("actions", "send", "forensics", "follow")


def _several_runs(path: str) -> str | None:
    from runtop.cli.fleet import fleet_of
    from runtop.fleet.runs import run_names

    runs = fleet_of(path)
    return f"{path} holds {len(runs)} runs ({run_names(runs)}): give one run's directory" if runs is not None else None


def misspelt_command(word: str) -> str | None:
    """The command `word` was probably meant to be, when it is no path that exists and reads
    as a command name with a slip (`stauts`, `chek`); else None and it is taken as a path.
    A word with a `/` or a `.` is a path the user meant, misspelt or not: runtop says the
    path is missing rather than guess a command."""
    import difflib

    if os.path.lexists(word) or any(c in word for c in "/." + os.sep):
        return None
    if word == "help":
        return "runtop --help"
    close = difflib.get_close_matches(word.lower(), COMMANDS, n=1, cutoff=0.6)
    return close[0] if close else None


# Each command's module, imported only when that command runs: `runtop status` needs none of
# the live view's (asyncio), the actions' (HTTP, psutil) or MCP's modules, and importing them
# all cost a third of its first answer under load (docs/design.md, "Start-up").
HANDLERS = {
    "status": ("runtop.cli.main", "cmd_status"), "check": ("runtop.cli.main", "cmd_check"),
    "follow": ("runtop.cli.live", "cmd_follow"), "demo": ("runtop.cli.live", "cmd_demo"), "tui": ("runtop.cli.live", "cmd_tui"),
    "notify": ("runtop.cli.live", "cmd_notify"), "forensics": ("runtop.cli.live", "cmd_forensics"), "export": ("runtop.cli.live", "cmd_export"),
    "watch": ("runtop.cli.watch", "cmd_watch"), "actions": ("runtop.cli.actions", "cmd_actions"), "send": ("runtop.cli.actions", "cmd_send"),
    "serve": ("runtop.cli.serve", "cmd_serve"), "mcp": ("runtop.mcp.server", "cmd_mcp"), "compare": ("runtop.cli.compare", "cmd_compare"),
}


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    import importlib

    module, name = HANDLERS[command]
    found: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
    return found


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `runtop PATH` is `runtop tui PATH` (a rolling status when stdout is not a terminal).
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        meant = misspelt_command(argv[0])
        if meant is not None:
            _err(f"unknown command {argv[0]!r} (did you mean {meant!r}?)")
            return EXIT_USAGE
        argv = ["tui", *argv]
    parser = build_parser(scenario_help=bool({"-h", "--help"} & set(argv)))
    args, extra = parser.parse_known_args(argv)
    if extra:
        code = EXIT_CANNOT_READ if args.command == "check" else EXIT_USAGE
        prog = f"runtop {args.command}" if args.command else "runtop"
        _err(f"{args.command + ': ' if args.command else ''}unrecognized arguments: {' '.join(extra)} (see {prog} --help)")
        return code
    if args.command is None:
        parser.print_usage(sys.stderr)
        _err("give a run directory, e.g. `runtop outputs/my-run`, or try `runtop demo`")
        return EXIT_USAGE
    handler = _handler(args.command)
    from runtop.config import ConfigError

    try:
        if args.command in ONE_RUN_COMMANDS:
            refusal = _several_runs(args.path)
            if refusal is not None:
                _err(f"{args.command}: {refusal}")
                return EXIT_USAGE
        return handler(args)
    except DiscoveryError as e:
        _err(shown(str(e)), e.hint)
        return EXIT_CANNOT_READ  # `status --json` and `check` agree: 3 is a run runtop cannot read
    except ConfigError as e:
        _err(str(e))
        return EXIT_CANNOT_READ if args.command == "check" else EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `runtop status … | head`: the reader left; nothing to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        if os.environ.get("RUNTOP_DEBUG"):
            raise
        _err(f"internal error: {type(e).__name__}: {e} (set RUNTOP_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
