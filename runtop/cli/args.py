"""runtop's argument parser: every command's options, and a bad argument as one line and an
exit code (2, or 3 for `check`, whose codes scripts read)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn

from runtop import __version__
from runtop.exit_codes import EXIT_CANNOT_READ, EXIT_USAGE


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


def _duration_s(text: str) -> float:
    """Seconds from `90`, `90s`, `30m`, `1h`, `1h 30m`, `500ms`: every option that takes a time
    reads the same units (`--every 30m` and `--duration S` did not)."""
    from runtop.parsers.text import parse_duration

    try:
        return float(text)
    except ValueError:
        pass
    value = parse_duration(text)
    if value is None:
        raise ValueError(text)
    return value


seconds = _bounded(_duration_s, 0, above=True, what="a duration (90, 90s, 30m, 1h)", hint="give a duration above 0: 90, 90s, 30m, 1h")
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


# The path of a command that acts on one run (a directory of several is refused, naming them).
ONE_RUN = "the run: its directory or a log file of it"

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
    p.add_argument("--interval", type=seconds, default=2.0, metavar="DURATION", help="refresh interval: 2 (seconds), 500ms, 1m (default 2)")


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
    ac.add_argument("path", help=ONE_RUN)
    _ckpt_dir(ac)
    _config(ac)
    _tmux_opts(ac)

    se = sub.add_parser("send", help="dispatch one vetted action into the run's tmux Launcher window")
    se.add_argument("action", help="resume, stop, restart, open-logs, checkin")
    se.add_argument("path", help=ONE_RUN)
    se.add_argument("--yes", action="store_true", help="confirm: without it nothing is sent")
    se.add_argument("--step", type=step_number, default=None, metavar="N", help="resume/restart: send only if N is still the last complete checkpoint")
    _ckpt_dir(se)
    _config(se)
    _tmux_opts(se)

    wa = sub.add_parser("watch", help="follow a run headless: page on incidents (--notify), ping a heartbeat, append check-ins (--every)")
    wa.add_argument("path", help="a run dir, a log file, or a directory of runs (then every run, each line naming its run)")
    wa.add_argument("--every", type=seconds, default=None, metavar="DURATION", help="append a check-in to STATUS.md this often: 30m, 1h, 90s (default: none)")
    wa.add_argument("--count", type=count, default=None, metavar="N", help="stop after N check-ins")
    wa.add_argument("--duration", type=seconds, default=None, metavar="DURATION", help="stop after this long: 90 (seconds), 90s, 30m, 1h")
    _ckpt_dir(wa)
    _config(wa)
    _common(wa)
    _notify_opts(wa)
    # The Launcher pane is remembered while the run lives: `runtop send resume` after its death proves it.
    wa.add_argument("--tmux-session", default=None, metavar="NAME", help="the run's tmux session (default: found from its processes)")
    wa.add_argument("--tmux-socket", default=None, metavar="NAME", help="tmux's -L server name")

    fx = sub.add_parser("forensics", help="save hang forensics: py-spy stacks of every run process, process states, GPUs, log tails, disks")
    fx.add_argument("path", help=ONE_RUN)
    _ckpt_dir(fx)
    _config(fx)

    ex = sub.add_parser("export", help="serve runtop's verdicts as Prometheus metrics on /metrics, or write a node_exporter textfile")
    ex.add_argument("paths", nargs="+", metavar="PATH", help="runs, log files, or directories of runs (every run in them)")
    ex.add_argument("--port", type=port, default=9464, help="the /metrics port (default 9464)")
    ex.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
    ex.add_argument("--textfile", default=None, metavar="FILE", help="write FILE (a .prom for node_exporter's textfile collector) instead of serving")
    ex.add_argument("--once", action="store_true", help="read each run once, write the textfile, and exit (for cron)")
    ex.add_argument("--duration", type=seconds, default=None, metavar="DURATION", help="stop after this long: 90 (seconds), 90s, 30m, 1h")
    _ckpt_dir(ex)
    _config(ex)
    _common(ex)

    sv = sub.add_parser("serve", help="the TUI in a browser (textual-serve's page), on 127.0.0.1, behind a token, read-only unless --allow-actions")
    sv.add_argument("path", help=ONE_RUN)
    sv.add_argument("--port", type=port, default=8765, help="the port (default 8765)")
    sv.add_argument("--host", default="127.0.0.1", help="the address (default 127.0.0.1, this machine only: reach it with ssh -L)")
    sv.add_argument("--allow-actions", action="store_true", help="let browser sessions send vetted actions (loopback only; the token is needed as always)")
    sv.add_argument("--token-file", default=None, metavar="FILE",
                    help="write this start's token to FILE (created 0600, must not exist; removed at exit) instead of printing it")
    sv.add_argument("--max-sessions", type=count, default=3, metavar="N", help="browser sessions at once (default 3; each is a TUI process)")
    sv.add_argument("--client-timeout", type=seconds, default=10.0, metavar="DURATION",
                    help="a browser silent (no pong) or not reading its screen this long is gone: its session ends (default 10)")
    _ckpt_dir(sv)
    _config(sv)
    _common(sv)

    mc = sub.add_parser("mcp", help="serve runs to an AI agent over the Model Context Protocol (stdio): verdicts, findings, metrics, logs, proposed actions")
    mc.add_argument("paths", nargs="*", metavar="PATH", help="runs, log files or directories of runs (default: the current directory)")
    mc.add_argument("--http", default=None, metavar="127.0.0.1:PORT",
                    help="serve over streamable HTTP on a loopback address instead of stdio, behind a token (Authorization: Bearer TOKEN)")
    mc.add_argument("--token-file", default=None, metavar="FILE",
                    help="with --http: write this start's token to FILE (created 0600, must not exist; removed at exit) instead of printing it")
    _ckpt_dir(mc)
    _config(mc)
    _common(mc)
    _tmux_opts(mc)

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
    _columns(tu)
    # `runtop serve`'s read-only sessions: a visitor's TUI runs nothing and writes nothing
    # (no forensics, no alerts, no record in the run dir). Not for people: serve passes it.
    tu.add_argument("--visitor", action="store_true", help=argparse.SUPPRESS)

    cm = sub.add_parser("compare", help="runs side by side: a chart per metric with every run overlaid, and each run's latest values and trends")
    cm.add_argument("paths", nargs="+", metavar="RUN", help="two runs or more (run dirs, or a directory of runs: each of them)")
    cm.add_argument("--json", action="store_true", help="print each run's latest value and trend per metric as JSON (also printed as a table without a terminal)")
    cm.add_argument("--last", type=count, default=20, metavar="N", help="the trend compares the newer half of the last N steps with the older (default 20)")
    cm.add_argument("--full", action="store_true", help="read every log whole (default: the last 8 MB of a longer one, as status does)")
    cm.add_argument("--framework", default=None, metavar="NAME", choices=framework_names(), help="read the runs as this framework's")
    _columns(cm)
    _config(cm)
    _common(cm)
    _tui_opts(cm)
    _tmux_opts(cm)
    _notify_opts(cm)

    fo = sub.add_parser("follow", help="print a rolling status as the run writes (no TUI)")
    fo.add_argument("path", help=ONE_RUN)
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
    de.add_argument("--duration", type=seconds, default=None, metavar="DURATION", help="stop after this long, in real time: 90 (seconds), 90s, 30m")
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


def metric_list(text: str) -> tuple[str, ...]:
    """`reward,entropy,step_time` → the registry's names; an unknown one is one line."""
    from runtop.fleet.compare import parse_metrics

    try:
        return parse_metrics(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _columns(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", type=metric_list, default=(), metavar="METRICS",
                   help="the runs table shows these metrics' latest values too: reward,entropy,step_time (the step table's names)")


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
