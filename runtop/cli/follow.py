"""`runtop follow`: a rolling status, and the TUI's stand-in off a terminal. The run is read and
judged by the same engine the TUI steps (its processes, disks and GPUs too), and each look is
printed: the check-in's shape on a terminal, one line per look elsewhere."""

from __future__ import annotations

import sys
import time
from typing import IO

from runtop.config import Thresholds
from runtop.engine.engine import Engine
from runtop.engine.live import LiveRun
from runtop.frameworks.layout import RunLayout
from runtop.outputs.report import to_markdown
from runtop.parsers.hygiene import public
from runtop.state.run import RunState
from runtop.units import words


def _summary_line(state: RunState, verdict: str, reason: str | None = None) -> str:
    rows = state.rows()
    reward = next((r.value("reward") for r in reversed(rows) if r.value("reward") is not None), None)
    parts = [
        time.strftime("%H:%M:%S"),
        state.step_text(),
        verdict if reason is None else f"{verdict}: {words(reason, 120)}",
    ]
    if reward is not None:
        parts.append(f"reward {reward:.4f}")
    phase = state.current_phase()
    if phase:
        parts.append(phase)
    elif state.batch:
        parts.append(f"batch {state.batch.done}/{state.batch.total or '?'}")
    if state.errors:
        e = state.errors[-1]
        parts.append(f"last error {e.kind} at {e.time or '?'}")
    return " | ".join(parts)


QUIET_RECHECK = 5  # intervals between two judgments of a run that wrote nothing


def follow(
    layout: RunLayout, *, interval: float = 2.0, poll: bool = False, deadline: float | None = None, out: IO[str] | None = None,
    cfg: Thresholds | None = None,
) -> int:
    """Print a rolling status until Ctrl-C (`runtop follow`, and the TUI's stand-in off a terminal).

    The engine judges whenever a probe answers (its processes every interval), so a run that
    writes nothing is judged again all the same: silence is what a stall is, and a status that
    waits for news never calls one. It is printed at least every few intervals."""
    out = out or sys.stdout
    tty = out.isatty()
    live = LiveRun(layout, poll=poll, interval=interval, processes=False)  # the engine's process probe samples them
    engine = Engine(layout, interval=interval, thresholds=cfg, run=live, publishing=False)  # no screen: no frozen views
    last_print = float("-inf")
    dirty = True
    try:
        while deadline is None or time.monotonic() < deadline:
            dirty |= engine.step()
            now = time.monotonic()
            quiet_recheck = now - last_print >= QUIET_RECHECK * interval
            if (dirty or quiet_recheck) and now - last_print >= interval:
                with engine.lock:
                    state, verdict = engine.state, engine.verdict
                    if tty:
                        bf = live.backfill_progress()
                        footer = f"following {layout.root} ({live.waiter.mode})"
                        if bf < 1.0:
                            footer += f" — reading history {bf:.0%}"
                        out.write("\x1b[H\x1b[2J" + to_markdown(state, verdict) + "\n" + footer + " — Ctrl-C to quit\n")
                    else:
                        # A run not Healthy says why on its line ("Down" alone named nothing).
                        why = verdict.reasons[0] if verdict.reasons and verdict.verdict in ("Down", "Degraded") else None
                        out.write(public(_summary_line(state, verdict.verdict, why)) + "\n")
                out.flush()
                last_print, dirty = now, False
            engine.wait(interval if deadline is None else max(0.05, min(interval, deadline - time.monotonic())))
    except KeyboardInterrupt:
        return 130
    finally:
        engine.close()
    return 0
