"""The commands that keep running: `runtop watch` (headless check-ins), `follow` (a rolling
status), the TUI and `demo` (a simulated run followed live). The one-shot commands and the
argument parser are `runtop.cli`'s."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from runtop.cli import CHUNK_BYTES, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, _err, _thresholds, print
from runtop.discovery import DiscoveryError, RunLayout, discover, with_ckpt_dir
from runtop.sources.gpu import GpuProbe


def cmd_watch(args: argparse.Namespace) -> int:
    from runtop.checkin import append_checkin, status_path
    from runtop.outputs import OutputError
    from runtop.parsers.text import parse_duration
    from runtop.report import to_markdown
    from runtop.snapshot import RunJudge, look_at_processes, read_all
    from runtop.sources.run_reader import RunReader

    every = parse_duration(args.every)
    if every is None or every <= 0:
        _err(f"--every {args.every!r}: give a duration such as 90s, 30m or 1h")
        return EXIT_USAGE
    cfg = _thresholds(args)
    layout = with_ckpt_dir(discover(args.path), args.ckpt_dir)
    path = status_path(layout.root)
    # One reader, read once and then followed: each check-in judges what it has (no re-read),
    # and the judge keeps its findings' start times and the disks' growth between entries.
    reader = RunReader(layout)
    read_all(reader)
    judge = RunJudge(reader, cfg)
    done = 0
    failed = False
    next_at = time.monotonic()
    while args.count is None or done < args.count:
        reader.poll(max_bytes=CHUNK_BYTES, rescan_every=args.interval, ckpt_every=max(args.interval, 5.0))
        if time.monotonic() >= next_at:
            look_at_processes(reader)
            verdict = judge.verdict()
            done += 1
            try:
                append_checkin(path, to_markdown(reader.state, verdict))
            except (OSError, OutputError) as e:
                # The watch goes on: the next check-in may find the file writable again.
                print(f"{time.strftime('%H:%M:%S')} check-in ({verdict.verdict}) NOT written: {e}", flush=True)
                failed = True
            else:
                print(f"{time.strftime('%H:%M:%S')} appended a check-in ({verdict.verdict}) to {path}", flush=True)
            next_at += every
            continue
        time.sleep(min(args.interval, max(0.05, next_at - time.monotonic())))
    return EXIT_USAGE if failed else EXIT_OK


def cmd_follow(args: argparse.Namespace) -> int:
    from runtop.live import follow

    layout = with_ckpt_dir(discover(args.path), args.ckpt_dir)
    return follow(layout, interval=args.interval, poll=args.poll)


def _use_tui(args: argparse.Namespace) -> bool:
    # Textual draws on stderr: all three must be the terminal.
    return not getattr(args, "headless", False) and sys.stdout.isatty() and sys.stdin.isatty() and sys.stderr.isatty()


def _run_tui(layout: RunLayout, args: argparse.Namespace, deadline: float | None = None, gpu: GpuProbe | None = None) -> int:
    from runtop.config import load_actions
    from runtop.tui.app import RuntopApp

    acfg = load_actions(args.config)
    quit_after = max(0.1, deadline - time.monotonic()) if deadline is not None else None
    action_options = {
        "cfg": acfg, "socket": args.tmux_socket, "session": args.tmux_session, "launch_cmd": args.launch_cmd, "target": args.tmux_target,
    }
    app = RuntopApp(
        layout, interval=args.interval, poll=args.poll, vllm_url=args.vllm_url or None, quit_after=quit_after,
        thresholds=_thresholds(args), read_only=args.read_only or acfg.read_only, action_options=action_options,
        gpu=gpu,  # None: NVML
    )
    app.run()
    if app.return_code:
        # Textual has shown what failed above; the shell must see it too (issue 10).
        _err(f"the TUI stopped on an internal error (exit {app.return_code}); `runtop status PATH` still reads the run")
        return EXIT_INTERNAL
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    layout = with_ckpt_dir(discover(args.path), args.ckpt_dir)
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
            if _has_logs(os.path.join(sim.root, "logs")):
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


