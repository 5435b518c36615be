"""Carry out a confirmed plan: one dispatch at a time per run, the audit entry on disk
before any key, and every key only to the proven pane at a shell prompt.

Planning (what would be sent, or why not) lives in `runtop.actions.vetted`; this module is the
only one that types into tmux.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable

from runtop.actions.vetted import ActionError, Context, Plan, ReadOnly, alive, complete_step
from runtop.parsers.hygiene import public
from runtop.sources.tmux import Pane, TmuxError, user_and_host
from runtop.sources.writes import OutputError, append_locked, open_dir
from runtop.state.run import RunState

_busy: set[str] = set()
_busy_lock = threading.Lock()


def dispatch(p: Plan, ctx: Context, *, confirmation: str | None, progress: Callable[[str], None] | None = None) -> str:
    """Carry out a confirmed plan; returns the outcome line. Audited whatever happens."""
    if ctx.read_only:
        raise ReadOnly("read-only: nothing sent")  # the guard behind every screen and script
    if p.disabled:
        raise ActionError(f"{p.name} is disabled: {p.disabled}")
    if p.confirm is not None and confirmation != p.confirm:
        raise ActionError(f"{p.name} needs the confirmation {p.confirm!r}")
    with _busy_lock:
        if p.name in _busy:
            raise ActionError(f"{p.name} is already running")
        _busy.add(p.name)
    outcome = "error"
    pane: Pane | None = None
    lock_fd: int | None = None
    audited = False
    try:
        # One dispatch at a time for this run, across processes (two `runtop send`s
        # at once merged into one line), and the audit entry on disk before any key goes.
        lock_fd = _lock(ctx)
        sends_keys = any(s.kind in ("keys", "interrupt") for s in p.steps)
        if sends_keys:
            try:
                pane = ctx.pane()
            except ActionError:
                pane = None
        try:
            audit(ctx, p, pane, "sending")
            audited = True
        except ActionError as e:
            outcome = "not sent: the audit log cannot be written"
            raise ActionError(f"{p.name}: nothing sent, the audit log cannot be written ({e})") from None
        for step in p.steps:
            if step.kind == "keys":
                if p.name in ("resume", "restart"):
                    _same_step(ctx, p)
                pane = _idle_pane(ctx)
                if p.name == "resume" and alive(ctx):
                    raise ActionError("the run is still running: stop it first")
                ctx.tmux.send_literal(pane, step.arg)
            elif step.kind == "wait_prompt":
                _wait_prompt(ctx, float(step.arg), progress)
            elif step.kind == "interrupt":
                pane = ctx.pane()
                ctx.tmux.send_interrupt(pane)
            elif step.kind == "wait_gone":
                _wait_gone(ctx, float(step.arg), progress)
            elif step.kind == "select_window":
                pane = ctx.pane()
                ctx.tmux.select_window(pane.session, step.arg)
            elif step.kind == "checkin":
                from runtop.outputs.checkin import append_checkin
                from runtop.outputs.report import to_markdown

                if ctx.verdict is None:
                    raise ActionError("checkin: no verdict on this run to write (a check-in is the engine's verdict)")
                append_checkin(step.arg, to_markdown(ctx.state, ctx.verdict))
        outcome = "ok"
        return f"{p.name}: done"
    except (TmuxError, OSError, OutputError) as e:
        outcome = f"error: {e}"
        raise ActionError(f"{p.name} failed: {e}") from None
    except ActionError as e:
        outcome = f"error: {e}"
        raise
    finally:
        with _busy_lock:
            _busy.discard(p.name)
        if lock_fd is not None:
            try:
                if audited:
                    audit(ctx, p, pane, outcome)
            finally:
                os.close(lock_fd)  # releases the flock


LOCK_WAIT_S = 10.0


def _lock(ctx: Context) -> int:
    """An exclusive `flock` on `RUN/.runtop/dispatch.lock`, waited for up to LOCK_WAIT_S."""
    try:
        with open_dir(ctx.run_root, ".runtop") as d:
            fd = d.open_append("dispatch.lock")
    except OutputError as e:
        raise ActionError(f"nothing sent: cannot take the dispatch lock ({e})") from None
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise ActionError(f"nothing sent: another runtop has been sending to this run for {LOCK_WAIT_S:g} s") from None
            time.sleep(0.05)


def _same_step(ctx: Context, p: Plan) -> None:
    """What was confirmed is what is sent: the checkpoints are listed again from
    disk, and if the last complete one is not the step the user confirmed, nothing goes."""
    from runtop.frameworks import get as get_framework
    from runtop.frameworks.discovery import DiscoveryError

    planned = ctx.state.checkpoints.get(int(p.confirm)) if p.confirm and p.confirm.isdigit() else None
    try:
        fresh = get_framework(ctx.state.framework).relist_checkpoints(ctx.run_root, planned)
    except (OSError, DiscoveryError) as e:
        raise ActionError(f"nothing sent: cannot list the checkpoints again ({e})") from None
    try:
        step, _path = complete_step(RunState(path=ctx.run_root, framework=ctx.state.framework, checkpoints=fresh))
    except ActionError as e:
        raise ActionError(f"nothing sent: {e}") from None
    if str(step) != p.confirm:
        raise ActionError(f"nothing sent: the last complete checkpoint is now step {step}, not the confirmed {p.confirm}; plan the resume again")


def _idle_pane(ctx: Context) -> Pane:
    """The proven pane, as it is now: the same shell, at its prompt (text typed
    while a program runs in the foreground goes to that program, or waits in the tty)."""
    proven = ctx.pane()
    now = ctx.tmux.pane(proven.pane_id)
    if now is None or now.pid != proven.pid:
        raise ActionError(f"the Launcher pane {proven.pane_id} is gone or has another shell now: nothing typed")
    if not now.at_prompt:
        raise ActionError(f"the Launcher pane is running {now.command or 'a program'}, not a shell prompt: nothing typed")
    return now


def _wait_prompt(ctx: Context, timeout: float, progress: Callable[[str], None] | None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _idle_pane(ctx)
            return
        except ActionError as e:
            if time.monotonic() > deadline:
                raise ActionError(f"the shell prompt did not come back within {timeout:.0f}s: {e}") from None
        if progress:
            progress("waiting for the shell prompt")
        time.sleep(0.3)


def _wait_gone(ctx: Context, timeout: float, progress: Callable[[str], None] | None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        running = alive(ctx)
        if not running:
            if progress:
                progress("the run's processes are gone")
            return
        if time.monotonic() > deadline:
            raise ActionError(f"still running after {timeout:.0f}s: {', '.join(sorted(running))}")
        if progress:
            progress("waiting for " + ", ".join(f"{r} ({len(p)})" for r, p in sorted(running.items())))
        time.sleep(0.5)


def audit(ctx: Context, p: Plan, pane: Pane | None, outcome: str) -> None:
    """A JSON line: time, user, host, run, action, exact text, pane and its shell, outcome.
    A dispatch writes two with the same `id`: `sending` (fsynced before any key goes),
    then its outcome. `json.dumps` escapes newlines, so no text can split or forge a line."""
    path = ctx.audit_path or os.path.join(ctx.run_root, ".runtop", "audit.log")
    user, host = user_and_host()
    entry = {
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "user": user,
        "host": host,
        "id": f"{os.getpid():x}-{id(p):x}",
        "action": p.name,
        "run": ctx.run_root,
        "text": public(p.text or ""),
        "pane": f"{pane.session}:{pane.window} {pane.pane_id}" if pane else None,
        "shell_pid": pane.pid if pane else None,
        "outcome": public(outcome),
    }
    # The run's own audit log must stay inside the run; one the user configured is theirs.
    inside = None if ctx.audit_path else ctx.run_root
    try:
        append_locked(path, json.dumps(entry) + "\n", inside=inside)
    except OutputError as e:
        raise ActionError(f"{p.name}: {outcome}, but the audit log was not written: {e}") from None
