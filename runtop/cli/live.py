"""The commands that keep running: `follow` (a rolling status), the TUI, `demo` (a simulated
run followed live) and `export`; `runtop watch` is `runtop.cli.watch`'s. The one-shot commands and the
argument parser are `runtop.cli.main`'s."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from runtop.cli.common import _err, _thresholds, files, layout_of, print
from runtop.config import NotifyConfig
from runtop.exit_codes import EXIT_CANNOT_READ, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from runtop.fleet.runs import run_name
from runtop.frameworks.discovery import DiscoveryError, RunLayout, discover
from runtop.serve.session import SERVED_DRIVER
from runtop.sources.deadline import END_GRACE_S, Watchdog, stop_now
from runtop.sources.gpu import GpuProbe


def notify_config(args: argparse.Namespace) -> NotifyConfig:
    """`[notify]` of the config file, with `--notify`, `--heartbeat` and `--on-alert` over it."""
    import shlex

    from runtop.config import ConfigError, load_notify

    on_alert: tuple[str, ...] = ()
    if getattr(args, "on_alert", None):
        try:
            on_alert = tuple(shlex.split(args.on_alert))
        except ValueError as e:
            raise ConfigError(f"--on-alert {args.on_alert!r}: {e}") from None
        if not on_alert:
            raise ConfigError("--on-alert: give a command")
    return load_notify(getattr(args, "config", None), urls=tuple(getattr(args, "notify", None) or ()),
                       heartbeat=getattr(args, "heartbeat", None), on_alert=on_alert)


def duration_watchdog(command: str, duration: float | None) -> Watchdog | None:
    """A command given `--duration` ends then, whatever it waits on (docs/reading.md, "Files that are
    not files"): past its grace, one line and exit 3."""
    if not duration:
        return None
    return Watchdog(duration + END_GRACE_S, f"{command}: still running {END_GRACE_S:g} s past --duration {duration:g} (a read or a "
                    "child that never returned, such as a file on a hung network filesystem); stopped", EXIT_CANNOT_READ)


def cmd_notify(args: argparse.Namespace) -> int:
    """`runtop notify --test URL`: send a test message now and say whether it arrived."""
    from runtop.outputs.delivery import apprise_sender, private
    from runtop.outputs.notify import trial_message

    bad = 0
    for url in args.test:
        try:
            apprise_sender(url)(trial_message())
        except Exception as e:  # noqa: BLE001 - each target's answer is a line, not a traceback
            print(f"{private(url)}: NOT delivered: {e}")
            bad += 1
        else:
            print(f"{private(url)}: delivered")
    return 1 if bad else EXIT_OK


def cmd_follow(args: argparse.Namespace) -> int:
    from runtop.cli.follow import follow

    layout = layout_of(args)
    return follow(layout, interval=args.interval, poll=args.poll)


def _use_tui(args: argparse.Namespace) -> bool:
    # Textual draws on stderr: all three must be the terminal.
    if getattr(args, "headless", False):
        return False
    # Under `runtop serve` the TUI runs through pipes, its web driver named here.
    driver = os.environ.get("TEXTUAL_DRIVER", "")
    if "web_driver" in driver or driver == SERVED_DRIVER:
        return True
    return sys.stdout.isatty() and sys.stdin.isatty() and sys.stderr.isatty()


def _run_fleet(runs: list[str], args: argparse.Namespace, compare: bool = False) -> int:
    """The runs table; Enter opens a run in its full view, Esc there comes back. `compare`:
    every run marked and the compare screen open first (`runtop compare`)."""
    from runtop.cli.fleet import print_table
    from runtop.fleet.runs import BACK, Fleet, dirs_of_runs

    if not _use_tui(args):
        return print_table(runs, _thresholds(args))
    from runtop.tui.end_on_signal import EndOnSignal
    from runtop.tui.fleet_app import FleetApp

    named = [p for p in (args.path, *getattr(args, "more", [])) if p]
    fleet = Fleet(runs, thresholds=_thresholds(args), poll=True, roots=dirs_of_runs(named))
    fleet.start()
    try:
        selected: str | None = None
        while True:
            where = " ".join([p for p in (args.path, *getattr(args, "more", [])) if p] + ([f"--runs {args.runs}"] if getattr(args, "runs", None) else []))
            table = FleetApp(fleet, select=selected, where=where, metrics=getattr(args, "columns", ()) or (),
                             compare=runs if compare and selected is None else ())
            with EndOnSignal(table) as ended:
                chosen = table.run()
            if ended.code is not None:
                return ended.code  # a signal ends runtop, not only the table
            if not chosen:
                return EXIT_OK
            selected, fleet.open = chosen, chosen
            try:
                code = _run_tui(discover(chosen), args, fleet=True)
            finally:
                fleet.open = None
            if code != BACK:
                return code
    finally:
        fleet.close()


# How long `q` waits for the engine's thread to finish its step (a step reads about 1.5 s at most).
ENGINE_STOP_S = 5.0


def _run_tui(layout: RunLayout, args: argparse.Namespace, deadline: float | None = None, gpu: GpuProbe | None = None,
             fleet: bool = False, no_launcher: str | None = None) -> int:
    from runtop.config import load_actions
    from runtop.tui.app import RuntopApp
    from runtop.tui.end_on_signal import EndOnSignal

    acfg = load_actions(args.config)
    from runtop.outputs.alerting import Alerting

    # The same alerting as `runtop watch`: a TUI left open in tmux pages too.
    ncfg = notify_config(args)
    alerting = Alerting(ncfg, os.path.basename(layout.root.rstrip("/")) or layout.root, layout.root)
    quit_after = max(0.1, deadline - time.monotonic()) if deadline is not None else None
    visitor = bool(getattr(args, "visitor", False))  # a `runtop serve` read-only session: runs and writes nothing
    action_options = {
        "cfg": acfg, "socket": args.tmux_socket, "session": args.tmux_session, "launch_cmd": args.launch_cmd, "target": args.tmux_target,
        "records": not visitor,
    }
    app = RuntopApp(
        layout, interval=args.interval, poll=args.poll, vllm_url=args.vllm_url or None, quit_after=quit_after,
        thresholds=_thresholds(args), read_only=args.read_only or acfg.read_only, visitor=visitor, action_options=action_options,
        gpu=gpu,  # None: NVML
        alerting=alerting if (alerting.active or alerting.errors) and not visitor else None,
        terminal_notify=ncfg.terminal, slurm_job=getattr(args, "slurm_job", None), fleet=fleet,
        ray_address=getattr(args, "ray_address", None), no_launcher=no_launcher,
    )
    app.monitor.forensics_on_stall = not visitor  # a stall saves its stacks before anyone restarts the run
    app.monitor.processes_over_time.records = not visitor
    # SIGTERM, SIGHUP and SIGINT leave the terminal as `q` does (alternate screen, mouse, cursor).
    with EndOnSignal(app) as ended:
        result = app.run()
    if not app.engine_idle.wait(ENGINE_STOP_S):
        # The engine's thread is stuck in a read that never returns (a hung network filesystem):
        # the interpreter would wait for it at exit for ever, and `q` would seem dead.
        stop_now("the TUI closed while a read it was waiting on had not returned; stopped", EXIT_OK)
    from runtop.fleet.runs import BACK

    if ended.code is not None:
        return ended.code  # as a shell reports a process a signal ended: 128 + its number
    if fleet and result == BACK:
        return BACK
    if app.return_code:
        # Textual has shown what failed above; the shell must see it too.
        _err(f"the TUI stopped on an internal error (exit {app.return_code}); `runtop status PATH` still reads the run")
        return EXIT_INTERNAL
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    from runtop.fleet.runs import runs_of

    named = [p for p in (args.path, *getattr(args, "more", [])) if p is not None]
    if not named and getattr(args, "runs", None) is None:
        _err("tui: give a run directory, a log file, a directory of runs, or --runs FILE")
        return EXIT_USAGE
    runs = runs_of(named, getattr(args, "runs", None))
    if not runs:
        _err(f"tui: --runs {args.runs} names no run")
        return EXIT_USAGE
    if len(runs) > 1:
        return _run_fleet(runs, args)
    args.path = runs[0]  # the one run named (perhaps only in --runs FILE)
    layout = layout_of(args)
    if not _use_tui(args):
        from runtop.cli.follow import follow

        return follow(layout, interval=args.interval, poll=args.poll)
    return _run_tui(layout, args)


def cmd_demo(args: argparse.Namespace) -> int:
    from runtop.cli.follow import follow
    from runtop.frameworks import get as get_framework

    fw = get_framework(args.framework)
    if args.scenario not in fw.scenarios:
        _err(f"unknown scenario {args.scenario!r} for {args.framework}; choose one of: {', '.join(fw.scenarios)}")
        return EXIT_USAGE
    kw = {"max_steps": args.steps} if args.steps else {}
    sim = fw.simulator(args.dir, args.scenario, speed=args.speed, **kw)
    # The rules judge in simulated time (at 20× a stall took 15 real minutes to be
    # called): every duration they wait for is divided by the speed.
    args.simulated_speed = args.speed
    # SIGTERM and SIGHUP (a closed terminal, `kill`) end the demo like ctrl+c: the temp dir
    # goes. Installed before the dir is announced, so no signal finds the default handler.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _end_demo)
    try:
        # Inside the `try`: a signal may land while the line is still being written.
        # The run's titled processes live and die with the script: the process pane, the
        # simulated GPUs and the rules that read them see the run the logs describe.
        sim.start(processes=True)
        print(f"runtop demo: simulating a {args.framework} run ({args.scenario}) in {sim.root}", file=sys.stderr)
        deadline = time.monotonic() + args.duration if args.duration else None
        # Wait until the simulator's first lines say whose run it is (a driver log's first
        # line is a shell trace that names no framework yet), so discovery finds the run.
        layout = None
        give_up = time.monotonic() + 30.0
        while layout is None:
            if _has_logs(os.path.join(sim.root, "logs")) or _has_logs(sim.root):
                try:
                    layout = discover(sim.root)
                    break
                except DiscoveryError:
                    if time.monotonic() > give_up:
                        raise  # the simulator wrote something runtop cannot read: say so
            if deadline is not None and time.monotonic() > deadline:
                return EXIT_OK
            time.sleep(0.05)
        if _use_tui(args):
            from runtop.actions.vetted import REGISTRY
            from runtop.simulator.gpu import SimulatedGpuProbe

            # The simulated run's processes are runtop's own children, in no tmux pane: resume, stop,
            # restart and open-logs have no Launcher window to type into, so their keys are not
            # offered (a --tmux-target names one by hand).
            sent = ", ".join(a.key for a in REGISTRY if a.name != "checkin")
            no_launcher = None if args.tmux_target else (
                f"the demo's simulated run has no tmux Launcher window: {sent} act on a real run's (s still writes a check-in)")
            return _run_tui(layout, args, deadline, gpu=SimulatedGpuProbe(sim.procs) if sim.procs else None, no_launcher=no_launcher)
        return follow(layout, interval=min(args.interval, 1.0), poll=args.poll, deadline=deadline, cfg=_thresholds(args))
    finally:
        sim.stop(keep=args.keep)
        kept = args.keep or args.dir is not None
        print(f"runtop demo: the simulated run {'is kept in' if kept else 'was removed from'} {sim.root}", file=sys.stderr)


def _end_demo(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through cmd_demo's `finally`: the simulator stops, its dir goes


def _has_logs(path: str) -> bool:
    try:
        return any(os.path.getsize(os.path.join(path, n)) > 0 for n in os.listdir(path) if n.endswith(".log")) or any(
            n.startswith("attempt_") or n == "latest" for n in os.listdir(path)
        )
    except OSError:
        return False




def cmd_export(args: argparse.Namespace) -> int:
    """Serve each run's verdict as Prometheus metrics, or write them to a textfile."""
    from prometheus_client import generate_latest, start_http_server

    from runtop.cli.fleet import one_run_option
    from runtop.engine.engine import Engine
    from runtop.fleet.exporter import registry_for
    from runtop.fleet.runs import runs_of
    from runtop.sources.writes import OutputError, replace_file

    cfg = _thresholds(args)
    # A directory of runs is every run it holds, as the runs table reads it; a run dir is one run.
    paths = runs_of(args.paths)
    refusal = one_run_option(args, paths, " ".join(args.paths)) if len(paths) > 1 else None
    if refusal is not None:
        _err(f"export: {refusal}")
        return EXIT_USAGE
    if args.once:
        from runtop.engine.snapshot import RunJudge, read_run_reader

        # Each run read to its end and judged once, with every probe (cron writes the textfile).
        judges = [RunJudge(read_run_reader(p, **files(args)), cfg, slurm_job=args.slurm_job, ray_address=args.ray_address) for p in paths]
        for judge in judges:
            judge.verdict()
        engines = [judge.engine for judge in judges]
    else:
        engines = []
        for p in paths:
            args.path = p  # one run (several refuse the options of one run above)
            engines.append(Engine(layout_of(args), interval=args.interval, poll=args.poll, thresholds=cfg, vllm_url=None,
                                  publishing=False, slurm_job=args.slurm_job, ray_address=args.ray_address))
        for engine in engines:
            engine.step()  # the first scrape answers with what was read, not an unread run's runtop_up 0
    registry = registry_for(engines)
    if args.textfile is None:
        try:
            start_http_server(args.port, addr=args.host, registry=registry)
        except OSError as e:
            _err(f"export: cannot listen on {args.host}:{args.port}: {e.strerror or e}")
            return EXIT_USAGE
        print(f"{time.strftime('%H:%M:%S')} serving {len(engines)} run(s) on http://{args.host}:{args.port}/metrics: {names_of(paths)}", flush=True)
    deadline = time.monotonic() + args.duration if args.duration else None
    dog = duration_watchdog("export", args.duration)
    try:
        while True:
            if not args.once:
                for engine in engines:
                    engine.step()
            if args.textfile is not None:
                try:
                    # Written aside and renamed: never half-read; never through a planted link.
                    replace_file(args.textfile, generate_latest(registry))
                except OutputError as e:
                    _err(f"export: {e}")
                    return EXIT_USAGE
            if args.once or (deadline is not None and time.monotonic() >= deadline):
                return EXIT_OK
            time.sleep(args.interval)
    finally:
        for engine in engines:
            engine.close()
        if dog is not None:
            dog.cancel()


def names_of(paths: list[str], most: int = 8) -> str:
    names = [run_name(p) for p in paths]
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def cmd_forensics(args: argparse.Namespace) -> int:
    """Hang forensics now, into RUN/.runtop/forensics/<UTC time>/."""
    from runtop.engine.snapshot import RunJudge, read_run_reader
    from runtop.outputs.forensics import collect
    from runtop.sources.writes import OutputError

    reader = read_run_reader(args.path, **files(args))
    judge = RunJudge(reader, _thresholds(args))
    verdict = judge.verdict()
    system = judge.engine.system
    try:
        result = collect(reader.state, verdict, system.procs, system.gpu, system.disk)
    except OutputError as e:
        _err(f"forensics not saved: {e}")  # a full disk, nowhere to write: one line
        return EXIT_USAGE  # as `status --append` that cannot write
    print(f"forensics ({verdict.verdict}): {result.line()}")
    return EXIT_OK
