"""The commands that keep running: `runtop watch` (headless check-ins), `follow` (a rolling
status), the TUI and `demo` (a simulated run followed live). The one-shot commands and the
argument parser are `runtop.cli`'s."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from runtop.cli import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, _err, _thresholds, files, print
from runtop.config import NotifyConfig
from runtop.discovery import DiscoveryError, RunLayout, discover, with_ckpt_dir
from runtop.sources.gpu import GpuProbe


def layout_of(args: argparse.Namespace) -> RunLayout:
    """The run at `args.path`, with `--ckpt-dir` and `--metrics` applied."""
    from runtop.discovery import with_metrics

    f = files(args)
    return with_metrics(with_ckpt_dir(discover(args.path, f["framework"]), f["ckpt_dir"]), f["metrics"], f["metrics_map"])


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


def cmd_watch(args: argparse.Namespace) -> int:
    """Follow a run headless with the TUI's engine: page on incidents, ping a heartbeat, print
    each change of verdict, and append a check-in every `--every` (issue 15)."""
    from runtop.alerting import Alerting
    from runtop.checkin import append_checkin, status_path
    from runtop.engine import Engine
    from runtop.outputs import OutputError
    from runtop.parsers.text import parse_duration
    from runtop.report import to_markdown

    every = None
    if args.every is not None:
        every = parse_duration(args.every)
        if every is None or every <= 0:
            _err(f"--every {args.every!r}: give a duration such as 90s, 30m or 1h")
            return EXIT_USAGE
    cfg = _thresholds(args)
    ncfg = notify_config(args)
    layout = layout_of(args)
    alerting = Alerting(ncfg, os.path.basename(layout.root.rstrip("/")) or layout.root, layout.root)
    engine = Engine(layout, interval=args.interval, poll=args.poll, thresholds=cfg, alerting=alerting, vllm_url=None, publishing=False,
                    slurm_job=args.slurm_job, ray_address=args.ray_address)
    engine.forensics_on_stall = True  # a stall saves its stacks before anyone restarts the run
    targets = [w.status.name for w in alerting.targets]
    print(f"{time.strftime('%H:%M:%S')} watching {layout.root}: "
          + (f"alerts to {', '.join(targets)}" if targets else "no alert targets (--notify URL or [notify] urls)")
          + (f"; heartbeat {alerting.beats.status.name}" if alerting.beats else "")
          + (f"; on alert: {' '.join(ncfg.on_alert)}" if ncfg.on_alert else ""), flush=True)
    path = status_path(layout.root)
    done, failed, told, last = 0, False, 0, ""
    deadline = time.monotonic() + args.duration if args.duration else None
    next_at = time.monotonic()
    try:
        while (args.count is None or done < args.count) and (deadline is None or time.monotonic() < deadline):
            engine.step()
            verdict = engine.verdict
            said = f"{verdict.verdict}: {verdict.reasons[0]}" if verdict.reasons else verdict.verdict
            if said != last:
                print(f"{time.strftime('%H:%M:%S')} {said}", flush=True)
                last = said
            for msg in alerting.sent[told:] if len(alerting.sent) > told else []:
                print(f"{time.strftime('%H:%M:%S')} alert ({msg.event}): {msg.title}", flush=True)
                if ncfg.terminal and msg.event == "incident":
                    _page_terminal(msg.title, msg.body.splitlines()[0])
            told = len(alerting.sent)
            if every is not None and time.monotonic() >= next_at:
                done += 1
                try:
                    append_checkin(path, to_markdown(engine.state, verdict))
                except (OSError, OutputError) as e:
                    # The watch goes on: the next check-in may find the file writable again.
                    print(f"{time.strftime('%H:%M:%S')} check-in ({verdict.verdict}) NOT written: {e}", flush=True)
                    failed = True
                else:
                    print(f"{time.strftime('%H:%M:%S')} appended a check-in ({verdict.verdict}) to {path}", flush=True)
                next_at += every
                continue
            engine.wait(args.interval)
    finally:
        engine.close()  # what is queued is delivered (within a few seconds)
        for problem in alerting.problems():
            print(f"{time.strftime('%H:%M:%S')} alerts not delivered: {problem}", flush=True)
    return EXIT_USAGE if failed else EXIT_OK


def _page_terminal(title: str, first_line: str) -> None:
    from runtop.terminal_notify import osc, tmux_message

    if sys.stdout.isatty():
        sys.stdout.write(osc(title, first_line))
        sys.stdout.flush()
    problem = tmux_message(f"{title}: {first_line}")
    if problem:
        print(f"{time.strftime('%H:%M:%S')} tmux display-message failed: {problem}", flush=True)


def cmd_notify(args: argparse.Namespace) -> int:
    """`runtop notify --test URL`: send a test message now and say whether it arrived."""
    from runtop.delivery import apprise_sender, private
    from runtop.notify import trial_message

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
    from runtop.live import follow

    layout = layout_of(args)
    return follow(layout, interval=args.interval, poll=args.poll)


def _use_tui(args: argparse.Namespace) -> bool:
    # Textual draws on stderr: all three must be the terminal.
    if getattr(args, "headless", False):
        return False
    # Under `runtop serve` textual-serve runs the TUI through pipes, its web driver named here.
    if "web_driver" in os.environ.get("TEXTUAL_DRIVER", ""):
        return True
    return sys.stdout.isatty() and sys.stdin.isatty() and sys.stderr.isatty()


def _run_fleet(runs: list[str], args: argparse.Namespace) -> int:
    """The runs table; Enter opens a run in its full view, Esc there comes back (issue 17)."""
    from runtop.cli_fleet import print_table
    from runtop.fleet import BACK, Fleet

    if not _use_tui(args):
        return print_table(runs, _thresholds(args))
    from runtop.tui.fleet_app import FleetApp

    fleet = Fleet(runs, thresholds=_thresholds(args), poll=True)
    fleet.start()
    try:
        selected: str | None = None
        while True:
            chosen = FleetApp(fleet, select=selected, where=" ".join([args.path, *getattr(args, "more", [])])).run()
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


def _run_tui(layout: RunLayout, args: argparse.Namespace, deadline: float | None = None, gpu: GpuProbe | None = None,
             fleet: bool = False) -> int:
    from runtop.config import load_actions
    from runtop.tui.app import RuntopApp

    acfg = load_actions(args.config)
    from runtop.alerting import Alerting

    # The same alerting as `runtop watch` (issue 15): a TUI left open in tmux pages too.
    ncfg = notify_config(args)
    alerting = Alerting(ncfg, os.path.basename(layout.root.rstrip("/")) or layout.root, layout.root)
    quit_after = max(0.1, deadline - time.monotonic()) if deadline is not None else None
    action_options = {
        "cfg": acfg, "socket": args.tmux_socket, "session": args.tmux_session, "launch_cmd": args.launch_cmd, "target": args.tmux_target,
    }
    app = RuntopApp(
        layout, interval=args.interval, poll=args.poll, vllm_url=args.vllm_url or None, quit_after=quit_after,
        thresholds=_thresholds(args), read_only=args.read_only or acfg.read_only, action_options=action_options,
        gpu=gpu,  # None: NVML
        alerting=alerting if alerting.active or alerting.errors else None,
        terminal_notify=ncfg.terminal, slurm_job=getattr(args, "slurm_job", None), fleet=fleet,
        ray_address=getattr(args, "ray_address", None),
    )
    app.monitor.forensics_on_stall = True  # a stall saves its stacks before anyone restarts the run
    result = app.run()
    from runtop.fleet import BACK

    if fleet and result == BACK:
        return BACK
    if app.return_code:
        # Textual has shown what failed above; the shell must see it too (issue 10).
        _err(f"the TUI stopped on an internal error (exit {app.return_code}); `runtop status PATH` still reads the run")
        return EXIT_INTERNAL
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    from runtop.fleet import runs_of

    runs = runs_of([args.path, *getattr(args, "more", [])], getattr(args, "runs", None))
    if len(runs) > 1:
        return _run_fleet(runs, args)
    layout = layout_of(args)
    if not _use_tui(args):
        from runtop.live import follow

        return follow(layout, interval=args.interval, poll=args.poll)
    return _run_tui(layout, args)


def cmd_demo(args: argparse.Namespace) -> int:
    from runtop.frameworks import get as get_framework
    from runtop.live import follow

    fw = get_framework(args.framework)
    if args.scenario not in fw.scenarios:
        _err(f"unknown scenario {args.scenario!r} for {args.framework}; choose one of: {', '.join(fw.scenarios)}")
        return EXIT_USAGE
    kw = {"max_steps": args.steps} if args.steps else {}
    sim = fw.simulator(args.dir, args.scenario, speed=args.speed, **kw)
    # The rules judge in simulated time (issue 14: at 20× a stall took 15 real minutes to be
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
            from runtop.simulator.gpu import SimulatedGpuProbe

            return _run_tui(layout, args, deadline, gpu=SimulatedGpuProbe(sim.procs) if sim.procs else None)
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
    """Serve each run's verdict as Prometheus metrics, or write them to a textfile (issue 17)."""
    from prometheus_client import start_http_server, write_to_textfile

    from runtop.engine import Engine
    from runtop.exporter import registry_for

    cfg = _thresholds(args)
    if args.once:
        from runtop.snapshot import RunJudge, read_run_reader

        # Each run read to its end and judged once, with every probe (cron writes the textfile).
        judges = [RunJudge(read_run_reader(p), cfg) for p in args.paths]
        for judge in judges:
            judge.verdict()
        engines = [judge.engine for judge in judges]
    else:
        engines = [Engine(discover(p), interval=args.interval, poll=args.poll, thresholds=cfg, vllm_url=None, publishing=False)
                   for p in args.paths]
    registry = registry_for(engines)
    if args.textfile is None:
        try:
            start_http_server(args.port, addr=args.host, registry=registry)
        except OSError as e:
            _err(f"export: cannot listen on {args.host}:{args.port}: {e.strerror or e}")
            return EXIT_USAGE
        print(f"{time.strftime('%H:%M:%S')} serving {len(engines)} run(s) on http://{args.host}:{args.port}/metrics", flush=True)
    deadline = time.monotonic() + args.duration if args.duration else None
    try:
        while True:
            if not args.once:
                for engine in engines:
                    engine.step()
            if args.textfile is not None:
                try:
                    write_to_textfile(args.textfile, registry)  # written aside and renamed: never half-read
                except OSError as e:
                    _err(f"export: cannot write {args.textfile}: {e.strerror or e}")
                    return EXIT_USAGE
            if args.once or (deadline is not None and time.monotonic() >= deadline):
                return EXIT_OK
            time.sleep(args.interval)
    finally:
        for engine in engines:
            engine.close()


def cmd_forensics(args: argparse.Namespace) -> int:
    """Hang forensics now, into RUN/.runtop/forensics/<UTC time>/ (issue 15)."""
    from runtop.forensics import collect
    from runtop.snapshot import RunJudge, read_run_reader

    reader = read_run_reader(args.path, **files(args))
    judge = RunJudge(reader, _thresholds(args))
    verdict = judge.verdict()
    system = judge.engine.system
    result = collect(reader.state, verdict, system.procs, system.gpu, system.disk)
    print(f"forensics ({verdict.verdict}): {result.line()}")
    return EXIT_OK
