"""`runtop watch`: a run (or every run of a directory) followed headless with the TUI's engine,
paging on incidents, pinging a heartbeat, printing each change of verdict and appending a
check-in every `--every`; ended between two polls by ctrl+c or SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtop.cli.common import _err, _thresholds, layout_of, print
from runtop.cli.live import duration_watchdog, names_of, notify_config
from runtop.config import NotifyConfig, Thresholds
from runtop.exit_codes import EXIT_OK, EXIT_USAGE
from runtop.fleet.runs import run_name
from runtop.frameworks.discovery import discover
from runtop.parsers.hygiene import shown

if TYPE_CHECKING:
    from runtop.engine.engine import Engine
    from runtop.outputs.alerting import Alerting


@dataclass
class _Watched:
    """One run `runtop watch` follows: its engine and alerting, and what was said of it."""

    name: str  # the run's directory name: each line of a fleet's watch begins with it ("" for one run)
    engine: Engine
    alerting: Alerting
    checkin_path: str
    last: str = ""
    told: int = 0

    def line(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {self.name + ': ' if self.name else ''}{text}", flush=True)


def cmd_watch(args: argparse.Namespace) -> int:
    """Follow a run headless with the TUI's engine: page on incidents, ping a heartbeat, print
    each change of verdict, and append a check-in every `--every`. A directory of runs is
    every run it holds (the runs table's decision): each judged as one run is, each line and
    each alert naming its run, one heartbeat for them all (it fails when any is Down)."""
    from runtop.cli.fleet import fleet_of, one_run_option
    from runtop.outputs.checkin import append_checkin
    from runtop.outputs.delivery import Heartbeat, Worker, http_get, private
    from runtop.outputs.report import to_markdown
    from runtop.sources.writes import OutputError

    every: float | None = args.every  # seconds: the parser read its units, as every duration's
    cfg = _thresholds(args)
    ncfg = notify_config(args)
    runs = fleet_of(args.path)
    if runs is not None:
        refusal = one_run_option(args, runs, args.path)
        if refusal is not None:
            _err(f"watch: {refusal}")
            return EXIT_USAGE
    watched = _watch_fleet(runs, args, cfg, ncfg) if runs is not None else [_watch_one(args, cfg, ncfg)]
    # One heartbeat for a fleet: the service hears one watcher, not one per run.
    beat = Heartbeat(ncfg.heartbeat, ncfg.heartbeat_every_s) if runs is not None and ncfg.heartbeat else None
    beats = Worker(private(ncfg.heartbeat), http_get, backoff=(5.0,)) if beat is not None and ncfg.heartbeat else None
    first = watched[0].alerting
    targets = [w.status.name for w in first.targets]
    beat_name = beats.status.name if beats is not None else first.beats.status.name if first.beats else None
    what = shown(watched[0].engine.layout.root) if runs is None else f"{len(runs)} runs under {args.path} ({names_of(runs)})"
    print(f"{time.strftime('%H:%M:%S')} watching {what}: "
          + (f"alerts to {', '.join(targets)}" if targets else "no alert targets (--notify URL or [notify] urls)")
          + (f"; heartbeat {beat_name}" if beat_name else "")
          + (f"; on alert: {' '.join(ncfg.on_alert)}" if ncfg.on_alert else ""), flush=True)
    done, failed = 0, False
    deadline = time.monotonic() + args.duration if args.duration else None
    dog = duration_watchdog("watch", args.duration)
    next_at = time.monotonic()
    stop = _Stop()
    try:
        while (args.count is None or done < args.count) and (deadline is None or time.monotonic() < deadline) and not stop.signum:
            for w in watched:
                w.engine.step()
                verdict = w.engine.verdict
                said = f"{verdict.verdict}: {verdict.reasons[0]}" if verdict.reasons else verdict.verdict
                if said != w.last:
                    w.line(said)
                    w.last = said
                for msg in w.alerting.sent[w.told:] if len(w.alerting.sent) > w.told else []:
                    w.line(f"alert ({msg.event}): {msg.title}")
                    if ncfg.terminal and msg.event == "incident":
                        _page_terminal(msg.title, msg.body.splitlines()[0])
                w.told = len(w.alerting.sent)
            if beat is not None and beats is not None:
                worst = "Down" if any(w.engine.verdict.verdict == "Down" for w in watched) else "Healthy"
                for url in beat.due(worst, time.time()):
                    beats.put(url)
            if every is not None and time.monotonic() >= next_at:
                done += 1
                for w in watched:
                    verdict = w.engine.verdict
                    try:
                        append_checkin(w.checkin_path, to_markdown(w.engine.state, verdict))
                    except (OSError, OutputError) as e:
                        # The watch goes on: the next check-in may find the file writable again.
                        w.line(f"check-in ({verdict.verdict}) NOT written: {e}")
                        failed = True
                    else:
                        w.line(f"appended a check-in ({verdict.verdict}) to {w.checkin_path}")
                next_at += every
                continue
            if runs is None:
                stop.wait(args.interval, watched[0].engine.wait)
            else:
                stop.wait(args.interval, None)  # a fleet's runs are polled: no one run's writes wake the loop
    finally:
        stop.restore()
        problems: list[str] = []
        for w in watched:
            w.engine.close()  # what is queued is delivered (within a few seconds)
            problems += [p for p in w.alerting.problems() if p not in problems]
        if beats is not None:
            beats.close(5.0)
            problems += [p for p in (beats.status.problem(),) if p]
        for problem in problems:
            print(f"{time.strftime('%H:%M:%S')} alerts not delivered: {problem}", flush=True)
        if dog is not None:
            dog.cancel()
    if stop.signum:
        return 128 + stop.signum  # ctrl+c 130, SIGTERM 143: stopped, after the alerts were handed on
    return EXIT_USAGE if failed else EXIT_OK


class _Stop:
    """ctrl+c and SIGTERM end `watch` between two polls, never inside one: a KeyboardInterrupt
    raised in the middle of an import or a delivery is swallowed there, and the watch went on
    deaf to it (seen under load); SIGTERM (systemd stopping the unit) used to skip the flush."""

    def __init__(self) -> None:
        self.signum = 0
        self._old = {sig: signal.signal(sig, self._on) for sig in (signal.SIGINT, signal.SIGTERM)}

    def _on(self, signum: int, _frame: object) -> None:
        self.signum = signum

    def wait(self, seconds: float, waiter: Callable[[float], object] | None) -> None:
        """Up to `seconds` (a run's write may end it early through `waiter`), or until a signal."""
        until = time.monotonic() + seconds
        while not self.signum and (left := until - time.monotonic()) > 0:
            if waiter is not None:
                if waiter(min(left, 0.25)):
                    return  # the run wrote: poll now
            else:
                time.sleep(min(left, 0.25))

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _watch_one(args: argparse.Namespace, cfg: Thresholds, ncfg: NotifyConfig) -> _Watched:
    from runtop.engine.engine import Engine
    from runtop.outputs.alerting import Alerting
    from runtop.outputs.checkin import status_path

    layout = layout_of(args)
    alerting = Alerting(ncfg, os.path.basename(layout.root.rstrip("/")) or layout.root, layout.root)
    watching: list[Engine] = []
    engine = Engine(layout, interval=args.interval, poll=args.poll, thresholds=cfg, alerting=alerting, vllm_url=None, publishing=False,
                    slurm_job=args.slurm_job, ray_address=args.ray_address, launcher=lambda: _launcher_lines(watching[0], args))
    watching.append(engine)
    engine.forensics_on_stall = True  # a stall saves its stacks before anyone restarts the run
    return _Watched("", engine, alerting, status_path(layout.root))


def _launcher_lines(engine: Engine, args: argparse.Namespace) -> list[str]:
    """The Launcher pane's last lines, as the TUI reads them: finding the pane while the run
    lives records it, so a `runtop send resume` after a kill knows where the run was launched."""
    import copy

    from runtop.actions.vetted import Context, launcher_lines

    with engine.lock:  # a probe's thread: a copy of what the pane is found by
        state = copy.copy(engine.state)
        state.processes = {role: list(pids) for role, pids in (engine.state.processes or {}).items()}
        ctx = Context.for_run(state, socket=args.tmux_socket, session=args.tmux_session)
    return launcher_lines(ctx)


def _watch_fleet(runs: list[str], args: argparse.Namespace, cfg: Thresholds, ncfg: NotifyConfig) -> list[_Watched]:
    """Every run under the directory, judged by the same rules as one run; the machine's GPUs
    are no run's own news here (as in the runs table), and each run's processes are looked
    at every 30 s rather than every interval (a /proc walk per run is a fleet's largest cost)."""
    from dataclasses import replace

    from runtop.engine.engine import Engine
    from runtop.fleet.runs import FLEET_PROCESS_S
    from runtop.outputs.alerting import Alerting
    from runtop.outputs.checkin import status_path

    out = []
    for run in runs:
        layout = discover(run, getattr(args, "framework", None))
        name = os.path.basename(layout.root.rstrip("/")) or layout.root
        alerting = Alerting(replace(ncfg, heartbeat=None), name, layout.root)
        engine = Engine(layout, interval=args.interval, poll=True, thresholds=cfg, alerting=alerting, vllm_url=None, publishing=False,
                        gpus=False, process_period=max(args.interval, FLEET_PROCESS_S))
        engine.forensics_on_stall = True
        out.append(_Watched(run_name(run), engine, alerting, status_path(layout.root)))
    return out


def _page_terminal(title: str, first_line: str) -> None:
    from runtop.outputs.terminal_notify import osc, tmux_message

    if sys.stdout.isatty():
        sys.stdout.write(osc(title, first_line))
        sys.stdout.flush()
    problem = tmux_message(f"{title}: {first_line}")
    if problem:
        print(f"{time.strftime('%H:%M:%S')} tmux display-message failed: {problem}", flush=True)
