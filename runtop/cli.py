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
import builtins
import math
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from runtop import __version__
from runtop.discovery import DiscoveryError

if TYPE_CHECKING:  # imported where used: `runtop --help` stays fast
    from runtop.config import Thresholds
from runtop.parsers.hygiene import public, shown

COMMANDS = ("status", "demo", "follow", "tui", "check", "watch", "actions", "send", "notify", "forensics", "export", "serve")
EXIT_OK, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 70, 130
# `runtop check`: an Unknown is not a Healthy; a script must be able to tell.
CHECK_EXIT = {"Healthy": 0, "Finished": 0, "Degraded": 1, "Down": 2, "Unknown": 4}
EXIT_CANNOT_READ = 3
EXIT_READ_ONLY = 4
CHUNK_BYTES = 4 << 20


class _Parser(argparse.ArgumentParser):
    """A bad argument is one line and an exit code: 2, or 3 for `check`, whose
    codes scripts read (3: runtop could not judge the run)."""

    def error(self, message: str) -> NoReturn:
        code = EXIT_CANNOT_READ if self.prog.split()[-1] == "check" else EXIT_USAGE
        self.exit(code, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _bounded(parse: Callable[[str], float], low: float, *, above: bool, what: str, hint: str, high: float = math.inf) -> Callable[[str], Any]:
    """An argparse type: `parse` the text, then insist on a finite value from `low` (or
    `above` it) to `high`. `--interval 0` was a busy loop and `nan` a traceback."""

    def check(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value < low or (above and value == low) or value > high:
            raise argparse.ArgumentTypeError(f"{text!r}: {hint}")
        return value

    return check


seconds = _bounded(float, 0, above=True, what="a number of seconds", hint="give a number of seconds above 0")
speed = _bounded(float, 0, above=True, what="a number", hint="give a speed above 0 (20: twenty simulated seconds a second)")
count = _bounded(int, 1, above=False, what="a whole number", hint="give 1 or more")
step_number = _bounded(int, 0, above=False, what="a step number", hint="a step is 0 or more")


def slurm_job_id(text: str) -> str:
    """A SLURM job id (`4242`, an array task `4242_7`): it goes into squeue's argv, so
    nothing else passes."""
    from runtop.sources.slurm import JOB_ID_RE

    if not JOB_ID_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a SLURM job id (digits, or 4242_7 for an array task)")
    return text


port = _bounded(int, 0, above=False, what="a port number", hint="give a port from 0 to 65535", high=65535)


def _config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, metavar="FILE", help="thresholds and actions (default ~/.config/runtop/config.toml)")
    p.add_argument("--read-only", action="store_true", help="no action can send anything (also [actions] read_only)")


def _tmux_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tmux-session", default=None, metavar="NAME", help="the run's tmux session (default: found from its processes)")
    p.add_argument("--tmux-socket", default=None, metavar="NAME", help="tmux's -L server name")
    p.add_argument(
        "--tmux-target", default=None, metavar="SESSION:WINDOW.PANE",
        help="the run's Launcher pane, named by you (default: the pane whose shell started the run's processes)",
    )
    p.add_argument("--launch-cmd", default=None, metavar="CMD", help="the run's launch command (default: [actions] launch_cmd, else the argv of the launcher process, live or as runtop recorded it)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--poll", action="store_true", help="poll files instead of using inotify (automatic on NFS)")
    p.add_argument("--interval", type=seconds, default=2.0, metavar="S", help="refresh interval in seconds (default 2)")


def build_parser(scenario_help: bool = True) -> argparse.ArgumentParser:
    """The command line; `scenario_help=False` leaves out the demo scenarios' list, whose
    simulators cost every `status` and `check` 25 ms of imports."""
    parser = _Parser(
        prog="runtop",
        description="Live monitor for RL training runs. `runtop PATH` follows a run; `runtop status PATH` reports once.",
    )
    parser.add_argument("--version", action="version", version=f"runtop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    st = sub.add_parser("status", help="print a check-in (markdown) or --json for a run")
    st.add_argument("path", help="a run dir, a log file, or a directory of runs (then every run, as --all)")
    st.add_argument("--json", action="store_true", help="print the state as JSON")
    st.add_argument("--append", action="store_true", help="append the check-in to STATUS.md in the run dir (never overwrites)")
    st.add_argument("--full", action="store_true", help="read every log whole (default: the last 8 MB of a longer one, said)")
    st.add_argument("--all", action="store_true", help="one line per run under PATH (every run it holds), worst first; with --json, a list")
    _ckpt_dir(st)
    _config(st)

    ch = sub.add_parser("check", help="judge a run: findings on stdout; exit 0 Healthy/Finished, 1 Degraded, 2 Down, 3 cannot read, 4 Unknown")
    ch.add_argument("path", help="a run dir, a log file, or a directory of runs (then every run, as --all)")
    ch.add_argument("--json", action="store_true", help="print the status JSON (every finding in `alerts`)")
    ch.add_argument("--full", action="store_true", help="read every log whole (default: the last 8 MB of a longer one, said)")
    ch.add_argument("--all", action="store_true", help="every run under PATH, worst first; the exit code is the worst run's")
    _ckpt_dir(ch)
    _config(ch)

    ac = sub.add_parser("actions", help="list the vetted actions with their exact text (or why each is disabled)")
    ac.add_argument("path")
    _ckpt_dir(ac)
    _config(ac)
    _tmux_opts(ac)

    se = sub.add_parser("send", help="dispatch one vetted action into the run's tmux Launcher window")
    se.add_argument("action", help="resume, stop, restart, open-logs, checkin")
    se.add_argument("path")
    se.add_argument("--yes", action="store_true", help="confirm: without it nothing is sent")
    se.add_argument("--step", type=step_number, default=None, metavar="N", help="resume/restart: send only if N is still the last complete checkpoint")
    _ckpt_dir(se)
    _config(se)
    _tmux_opts(se)

    wa = sub.add_parser("watch", help="follow a run headless: page on incidents (--notify), ping a heartbeat, append check-ins (--every)")
    wa.add_argument("path", help="a run dir, a log file, or a directory of runs (then every run, each line naming its run)")
    wa.add_argument("--every", default=None, metavar="DURATION", help="append a check-in to STATUS.md this often: 30m, 1h, 90s (default: none)")
    wa.add_argument("--count", type=count, default=None, metavar="N", help="stop after N check-ins")
    wa.add_argument("--duration", type=seconds, default=None, metavar="S", help="stop after S seconds")
    _ckpt_dir(wa)
    _config(wa)
    _common(wa)
    _notify_opts(wa)
    # The Launcher pane is remembered while the run lives: `runtop send resume` after its death proves it.
    wa.add_argument("--tmux-session", default=None, metavar="NAME", help="the run's tmux session (default: found from its processes)")
    wa.add_argument("--tmux-socket", default=None, metavar="NAME", help="tmux's -L server name")

    fx = sub.add_parser("forensics", help="save hang forensics: py-spy stacks of every run process, process states, GPUs, log tails, disks")
    fx.add_argument("path")
    _ckpt_dir(fx)
    _config(fx)

    ex = sub.add_parser("export", help="serve runtop's verdicts as Prometheus metrics on /metrics, or write a node_exporter textfile")
    ex.add_argument("paths", nargs="+", metavar="PATH", help="runs, log files, or directories of runs (every run in them)")
    ex.add_argument("--port", type=port, default=9464, help="the /metrics port (default 9464)")
    ex.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
    ex.add_argument("--textfile", default=None, metavar="FILE", help="write FILE (a .prom for node_exporter's textfile collector) instead of serving")
    ex.add_argument("--once", action="store_true", help="read each run once, write the textfile, and exit (for cron)")
    ex.add_argument("--duration", type=seconds, default=None, metavar="S", help="stop after S seconds")
    _config(ex)
    _common(ex)

    sv = sub.add_parser("serve", help="the TUI in a browser (textual-serve's page), on 127.0.0.1, behind a token, read-only unless --allow-actions")
    sv.add_argument("path")
    sv.add_argument("--port", type=port, default=8765, help="the port (default 8765)")
    sv.add_argument("--host", default="127.0.0.1", help="the address (default 127.0.0.1, this machine only: reach it with ssh -L)")
    sv.add_argument("--allow-actions", action="store_true", help="let browser sessions send vetted actions (loopback only; the token is needed as always)")
    sv.add_argument("--token-file", default=None, metavar="FILE",
                    help="write this start's token to FILE (created 0600, must not exist; removed at exit) instead of printing it")
    sv.add_argument("--max-sessions", type=count, default=3, metavar="N", help="browser sessions at once (default 3; each is a TUI process)")
    sv.add_argument("--client-timeout", type=seconds, default=10.0, metavar="S",
                    help="a browser silent (no pong) or not reading its screen this long is gone: its session ends (default 10)")
    _config(sv)
    _common(sv)

    no = sub.add_parser("notify", help="send a test message to alert targets and say whether it arrived")
    no.add_argument("--test", action="append", required=True, metavar="URL", help="an apprise URL (repeatable): slack://…, ntfys://topic, json://host:port/path")

    tu = sub.add_parser("tui", help="open the live TUI on a run, or the runs table on several (default for `runtop PATH`)")
    tu.add_argument("path", nargs="?", default=None, help="a run, a log file or a directory of runs (or give --runs FILE)")
    tu.add_argument("more", nargs="*", metavar="PATH", help="more runs (or dirs of runs): the runs table lists them all")
    tu.add_argument("--runs", default=None, metavar="FILE", help="a file naming runs, one path a line (# comments)")
    _ckpt_dir(tu)
    _config(tu)
    _common(tu)
    _tui_opts(tu)
    _tmux_opts(tu)
    _notify_opts(tu)
    # `runtop serve`'s read-only sessions: a visitor's TUI runs nothing and writes nothing
    # (no forensics, no alerts, no record in the run dir). Not for people: serve passes it.
    tu.add_argument("--visitor", action="store_true", help=argparse.SUPPRESS)

    fo = sub.add_parser("follow", help="print a rolling status as the run writes (no TUI)")
    fo.add_argument("path")
    _ckpt_dir(fo)
    _config(fo)
    _common(fo)

    de = sub.add_parser("demo", help="simulate a live prime-rl or SkyRL run in a temp dir and follow it")
    from runtop.frameworks import simulated

    names = tuple(fw.name for fw in simulated())
    de.add_argument("--framework", choices=names, default=names[0], help="which framework's files to simulate")
    de.add_argument(
        "--scenario",
        default="healthy",
        help="; ".join(f"{fw.name}: {', '.join(fw.scenarios)}" for fw in simulated())
        if scenario_help
        else "what the simulated run goes through (runtop demo --help lists them)",
    )
    de.add_argument("--speed", type=speed, default=20.0, help="simulated seconds per real second (default 20)")
    de.add_argument("--dir", default=None, help="write the run here instead of a temp dir")
    de.add_argument("--steps", type=count, default=None, help="max_steps of the simulated run (default 20 prime-rl, 8 SkyRL)")
    de.add_argument("--duration", type=seconds, default=None, metavar="S", help="stop after S real seconds")
    de.add_argument("--keep", action="store_true", help="keep the simulated run's temp dir when the demo ends (it is printed)")
    _config(de)
    _common(de)
    _tui_opts(de, vllm_url="")
    _tmux_opts(de)
    return parser


def _tui_opts(p: argparse.ArgumentParser, vllm_url: str = "http://localhost:8000/metrics") -> None:
    # The demo has no vLLM server: it probes none unless asked (a port of the user's own
    # machine is not the simulated run's).
    p.add_argument("--vllm-url", default=vllm_url, metavar="URL", help=f"vLLM's Prometheus endpoint (default {vllm_url or 'none'})")
    p.add_argument("--headless", action="store_true", help="print a rolling status instead of opening the TUI (automatic when stdout is not a terminal)")


def _notify_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--notify", action="append", default=None, metavar="URL",
                   help="send each incident, recovery and the finish here (apprise URL, repeatable; also [notify] urls)")
    p.add_argument("--heartbeat", default=None, metavar="URL", help="a dead-man's switch: /start, a ping a minute while not Down, /fail on Down")
    p.add_argument("--on-alert", default=None, metavar="CMD",
                   help="run CMD (split like a shell would, never run by one) on each message, with RUNTOP_* in its environment")


def _ckpt_dir(p: argparse.ArgumentParser) -> None:
    """The run's files that its directory does not lead to."""
    p.add_argument("--ckpt-dir", default=None, metavar="DIR", help="the checkpoint dir where the log does not say it (SkyRL, verl, TRL)")
    p.add_argument("--metrics", action="append", default=None, metavar="FILE",
                   help='a JSONL of {"step": N, …} (or {"step": N, "data": {…}}) rows to read too; [metrics] maps its keys onto runtop\'s metric names')
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="the run's Ray cluster for the state API (default: RAY_ADDRESS of its processes, or their local cluster)")
    p.add_argument("--slurm-job", type=slurm_job_id, default=None, metavar="ID",
                   help="the run's SLURM job (default: the newest job_<id>.log or slurm-<id>.out in the run dir, else SLURM_JOB_ID of its processes)")
    p.add_argument("--framework", default=None, metavar="NAME", choices=framework_names(),
                   help="read the run as this framework's (default: the one its files' evidence names; `generic` for none)")


def framework_names() -> list[str]:
    from runtop.frameworks import REGISTRY

    return list(REGISTRY)


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


def _err(msg: str) -> None:
    print(f"runtop: {msg}", file=sys.stderr)


def _thresholds(args: argparse.Namespace) -> Thresholds:
    from runtop.config import in_simulated_time, load

    cfg = load(getattr(args, "config", None))
    speed = getattr(args, "simulated_speed", None)
    return in_simulated_time(cfg, speed) if speed else cfg


def cmd_status(args: argparse.Namespace) -> int:
    from runtop.cli_fleet import cmd_status_all, fleet_of
    from runtop.report import to_markdown
    from runtop.report_json import write_json
    from runtop.snapshot import BOUNDED_TAIL, read_and_judge

    if args.all or fleet_of(args.path):
        return cmd_status_all(args)
    state, verdict = read_and_judge(args.path, cfg=_thresholds(args), slurm_job=args.slurm_job, ray_address=args.ray_address,
                                    tail=None if args.full else BOUNDED_TAIL, **files(args))
    if args.append:
        from runtop.checkin import append_checkin, status_path
        from runtop.outputs import OutputError

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
    from runtop.cli_fleet import cmd_check_all, fleet_of
    from runtop.report_json import write_json
    from runtop.snapshot import BOUNDED_TAIL, read_and_judge

    if args.all or fleet_of(args.path):
        return cmd_check_all(args)
    state, verdict = read_and_judge(args.path, cfg=_thresholds(args), slurm_job=args.slurm_job, ray_address=args.ray_address,
                                    tail=None if args.full else BOUNDED_TAIL, **files(args))
    if args.json:
        write_json(state, sys.stdout, verdict)
    else:
        said = list(verdict.reasons)
        if verdict.verdict == "Healthy":
            from runtop.health import progress_text

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
    from runtop.cli_fleet import fleet_of, run_names

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
    from runtop.cli_actions import cmd_actions, cmd_send
    from runtop.cli_live import cmd_demo, cmd_export, cmd_follow, cmd_forensics, cmd_notify, cmd_tui
    from runtop.cli_serve import cmd_serve
    from runtop.cli_watch import cmd_watch

    handlers = {
        "status": cmd_status, "follow": cmd_follow, "demo": cmd_demo, "tui": cmd_tui, "check": cmd_check,
        "watch": cmd_watch, "actions": cmd_actions, "send": cmd_send, "notify": cmd_notify, "forensics": cmd_forensics, "export": cmd_export, "serve": cmd_serve,
    }
    from runtop.config import ConfigError

    try:
        if args.command in ONE_RUN_COMMANDS:
            refusal = _several_runs(args.path)
            if refusal is not None:
                _err(f"{args.command}: {refusal}")
                return EXIT_USAGE
        return handlers[args.command](args)
    except DiscoveryError as e:
        _err(shown(str(e)))
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
