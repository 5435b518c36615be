"""Vetted actions: the one registry of what runtop may send to a run's tmux `Launcher` window.

The runbooks' rule: never kill or launch from runtop's own shell; type the command into
the Launcher window, where the researcher sees what ran, and only after they confirmed
the exact text. So an action is *planned* first (its final text, or why it is
disabled), shown in full, and *dispatched* only with confirmation:

- every value put into a command is validated against a strict type (a step is an
  int naming an existing *complete* checkpoint; a path lies inside the run's
  checkpoint dir) and quoted; the base launch command itself must be plain words,
  flags and a trailing redirect (no `;`, `|`, `&&`, `$(`, backticks, newlines);
- keys go with `send-keys -l` (literal) to an exact pane id, Enter separately;
- read-only mode removes every action here, at one chokepoint (`plan` and `dispatch`);
- every dispatch is appended to an audit log.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from runtop.action_error import ActionError as ActionError  # re-exported: every caller of an action catches it here
from runtop.action_error import ReadOnly as ReadOnly
from runtop.actions.context import Context as Context  # re-exported: an action is planned for a Context
from runtop.actions.launch_command import check_command as check_command
from runtop.actions.launch_command import resolve_launch_cmd, resume_command
from runtop.actions.launcher import recorded_pane
from runtop.frameworks import get as get_framework
from runtop.frameworks import process_roles
from runtop.parsers.checkpoints import Problem
from runtop.rules.advice import change_first
from runtop.rules.resumable import disk_refusal
from runtop.sources.processes import run_processes
from runtop.state.run import RunState


@dataclass
class Step:
    kind: str  # "keys" | "interrupt" | "wait_gone" | "wait_prompt" | "select_window" | "checkin"
    arg: str = ""


@dataclass
class Plan:
    name: str
    description: str
    text: str  # what the user confirms: the exact command, or what will happen
    steps: list[Step] = field(default_factory=list)
    confirm: str | None = None  # destructive: the token the user must type
    disabled: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ActionSpec:
    """One vetted action: its key is defined here only (the TUI's bindings and the
    read-only guard come from this table), and `destructive` alone decides that the user
    must type a token to confirm it."""

    name: str
    key: str
    description: str
    destructive: bool
    build: Callable[[Context], Plan]
    label: str = ""  # the key bar's word
    shown: bool = False  # in the key bar (else in the help screen only)


# ---- validation ------------------------------------------------------------------------
def complete_step(state: RunState) -> tuple[int, str]:
    """(step, path) of the last complete checkpoint, validated; else ActionError saying why."""
    ambiguous = [c for c in state.checkpoints.values() if c.problem is Problem.AMBIGUOUS]
    if ambiguous:
        raise ActionError(f"checkpoint dirs are ambiguous ({ambiguous[0].reason}): rename or remove one, then resume")
    ck = state.last_complete_checkpoint()
    if ck is None:
        partial = sorted(state.checkpoints)
        raise ActionError("no complete checkpoint to resume from" + (f" (incomplete: {', '.join(map(str, partial))})" if partial else ""))
    if not isinstance(ck.step, int) or ck.step < 0:
        raise ActionError(f"checkpoint step {ck.step!r} is not a step number")
    if not os.path.isdir(ck.path):
        raise ActionError(f"checkpoint {ck.path} is gone")
    return ck.step, ck.path


def _inside(path: str, root: str) -> bool:
    p, r = os.path.realpath(path), os.path.realpath(root)
    return p == r or p.startswith(r + os.sep)


# ---- the actions -----------------------------------------------------------------------
def alive(ctx: Context) -> dict[str, list[int]]:
    roles = process_roles(get_framework(ctx.state.framework))
    return {r: p for r, p in run_processes(ctx.run_root, ctx.log_paths, roles).items() if p and r != "ray"}


def launcher_lines(ctx: Context, lines: int = 60) -> list[str]:
    """The Launcher pane's last lines for the engine's launcher probe (the shell's `Killed`
    names a death). Finding the pane while the run lives records it in `.runtop/launch.json`,
    which a resume after a kill needs. Before the run's processes are seen no pane can be
    proven: nothing yet, rather than an error that would keep the probe away for its idle period
    (a run killed in its first half-minute could not be resumed from runtop)."""
    if not ctx.live_pids() and ctx.session is None and ctx.target is None and recorded_pane(ctx.run_root)[0] is None:
        return []
    return list(ctx.tmux.capture(ctx.pane(), lines))


def _target_note(ctx: Context) -> str:
    pane = ctx.pane()
    return f"target: {pane.target}; {ctx.pane_proof}"


def _slurm_plan(ctx: Context, name: str) -> Plan | None:
    """A run in a SLURM job resumes by `sbatch` of its script and stops by `scancel`;
    None: not a SLURM run, or the user gave the launch command themselves."""
    from runtop.actions.slurm import NoProof, resume_text, stop_text

    snap = ctx.state.slurm
    if snap is None or ctx.launch_cmd:
        return None
    try:
        if name == "stop":
            text, notes, confirm = stop_text(snap), [f"the run's job, found by {snap.ref.how}"], "stop"
        else:
            text, notes = resume_text(ctx.run_root, snap)
            confirm = str(complete_step(ctx.state)[0]) if ctx.state.last_complete_checkpoint() else "resume"
    except NoProof as e:
        raise ActionError(str(e)) from None
    check_command(text)
    p = Plan(name, "cancel the run's SLURM job" if name == "stop" else "submit the run's batch script again", text,
             [Step("keys", text)], confirm=confirm, notes=notes)
    try:
        p.notes.append(_target_note(ctx))
    except ActionError as e:
        p.disabled = str(e)
    return p


def _resume_plan(ctx: Context, *, after_stop: bool = False) -> Plan:
    slurm = None if after_stop else _slurm_plan(ctx, "resume")
    if slurm is None and not after_stop:
        running = alive(ctx)
        if running:
            # A resume typed while the launcher runs sits in its tty and runs by itself when
            # it exits, minutes later.
            raise ActionError(f"the run is still running ({', '.join(sorted(running))}): stop it first (X), or restart (T)")
    full = disk_refusal(ctx.state, ctx.disk())
    if full is not None:
        # A resume onto a full disk dies at its first save (docs/design.md, "Advice that would work").
        raise ActionError(full)
    if slurm is not None:
        return slurm
    step, path = complete_step(ctx.state)
    ckpt_root = os.path.dirname(path)
    if get_framework(ctx.state.framework).checkpoints_in_run_dir and not _inside(path, ctx.run_root):
        raise ActionError(f"checkpoint {path} is outside the run dir {ctx.run_root}")
    if not _inside(path, ckpt_root):
        raise ActionError(f"checkpoint {path} is outside the checkpoint dir")
    base = resolve_launch_cmd(ctx)
    text = resume_command(ctx.state, base, step, path)
    check_command(text)
    later = sorted(s for s, c in ctx.state.checkpoints.items() if s > step and not c.complete)
    why = f"the last complete checkpoint is step {step}"
    if later:
        why += "; " + ", ".join(f"step {s} is incomplete ({ctx.state.checkpoints[s].reason})" for s in later)
    notes = [why, f"launch command {ctx.launch_cmd_source or 'given'}"]
    first = change_first(ctx.state)
    if first is not None:
        # Offered all the same: the change may be in a config file runtop cannot see.
        notes.insert(0, f"first: {first} (the same command and config die the same way)")
    p = Plan("resume", "resume from the last complete checkpoint", text, [Step("keys", text)], confirm=str(step), notes=notes)
    try:
        p.notes.append(_target_note(ctx))
    except ActionError as e:
        p.disabled = str(e)  # the text is still shown: what would be sent, once the pane is proven
    return p


def _stop_plan(ctx: Context) -> Plan:
    slurm = _slurm_plan(ctx, "stop")
    if slurm is not None:
        return slurm
    note = _target_note(ctx)
    if not alive(ctx):
        raise ActionError("the run has no live process to stop")
    return Plan(
        "stop",
        "send C-c to the Launcher, then wait until the run's processes are gone",
        "C-c",
        [Step("interrupt"), Step("wait_gone", str(ctx.stop_timeout_s))],
        confirm="stop",
        notes=[note],
    )


def _restart_plan(ctx: Context) -> Plan:
    if ctx.state.slurm is not None and not ctx.launch_cmd:
        raise ActionError("a SLURM run restarts in two steps: stop (X: scancel), then resume (R) once its job has ended")
    stop = _stop_plan(ctx)
    resume = _resume_plan(ctx, after_stop=True)
    if resume.disabled:
        raise ActionError(resume.disabled)
    # After C-c: the processes gone and the shell back at its prompt, then the resume.
    steps = [*stop.steps, Step("wait_prompt", "15"), *resume.steps]
    return Plan("restart", "stop, then resume from the last complete checkpoint", f"C-c, then: {resume.text}", steps, confirm=resume.confirm, notes=resume.notes)


def _logs_plan(ctx: Context) -> Plan:
    pane = ctx.pane()
    return Plan("open-logs", f"switch to the {ctx.logs_window} window", f"select-window {pane.session}:{ctx.logs_window}", [Step("select_window", ctx.logs_window)])


def _checkin_plan(ctx: Context) -> Plan:
    path = os.path.join(ctx.run_root, "STATUS.md")
    return Plan("checkin", "append a check-in to STATUS.md", f"append a check-in to {path}", [Step("checkin", path)])


REGISTRY: tuple[ActionSpec, ...] = (
    ActionSpec("resume", "R", "resume from the last complete checkpoint", True, _resume_plan, "Resume", shown=True),
    ActionSpec("stop", "X", "stop the run (C-c in the Launcher)", True, _stop_plan, "Stop", shown=True),
    ActionSpec("restart", "T", "stop, then resume from the last complete checkpoint", True, _restart_plan, "Restart"),
    ActionSpec("open-logs", "O", "switch tmux to the Logs window", False, _logs_plan, "tmux Logs window"),
    ActionSpec("checkin", "s", "append a check-in to STATUS.md", False, _checkin_plan, "Check-in", shown=True),
)
BY_NAME = {a.name: a for a in REGISTRY}


def plan(name: str, ctx: Context) -> Plan:
    """The action's final text, or the reason it is disabled. Read-only: every action is refused here."""
    if ctx.read_only:
        raise ReadOnly("read-only: actions are off")
    spec = BY_NAME.get(name)
    if spec is None:
        raise ActionError(f"unknown action {name!r}; actions: {', '.join(BY_NAME)}")
    try:
        p = spec.build(ctx)
    except ActionError as e:
        return Plan(spec.name, spec.description, "", disabled=str(e))
    # The registry decides what needs a typed token: a destructive plan always has one (its
    # builder's, or the action's name); a harmless one never asks.
    if spec.destructive and not p.disabled and not p.confirm:
        p.confirm = spec.name
    elif not spec.destructive:
        p.confirm = None
    return p


def plans(ctx: Context) -> list[Plan]:
    if ctx.read_only:
        return []
    return [plan(a.name, ctx) for a in REGISTRY]
