"""The launch command a resume types: where it comes from, and what of it runtop will send
(docs/design.md, "The run dir is untrusted"). `--launch-cmd` or the config; else the argv of the
process the proven pane's shell started, with its launch variables and its output's redirect
from its own file descriptors, live or as runtop recorded it while the run lived; never the
pane's screen (a line the run printed can look like a prompt)."""

from __future__ import annotations

import re
import shlex

from runtop.action_error import ActionError
from runtop.actions.context import Context
from runtop.actions.launcher import launcher_argv, launcher_redirect, recorded_pane
from runtop.frameworks import get as get_framework
from runtop.state.run import RunState

# Plain words, flags, `key=value`, paths and quotes; a redirect may end the line (`&> logs/x.log`).
# ASCII only: no NEL, NBSP, ideographic space or look-alike digits in what is typed.
SAFE_WORDS_RE = re.compile(r"^[\w@%+=:,./'\"\- ]+$", re.ASCII)
REDIRECT_RE = re.compile(r"(\s+(?:\d?>>?|&>>?)\s*[\w./-]+(?:\s+2>&1)?)+\s*$")



def check_command(cmd: str) -> str:
    """The launch command if it is plain words, flags and a trailing redirect; else ActionError."""
    if any(ord(c) < 32 or ord(c) == 127 for c in cmd):
        raise ActionError("the launch command contains control characters")
    if not cmd.isascii():
        # NEL, NBSP, ideographic space, Arabic-Indic digits: what the user reads is not what bash runs.
        bad = " ".join(sorted({f"U+{ord(c):04X}" for c in cmd if not c.isascii()}))
        raise ActionError(f"the launch command has non-ASCII characters runtop will not send ({bad})")
    body = REDIRECT_RE.sub("", cmd).strip()
    if not body or not SAFE_WORDS_RE.match(body):
        chars = sorted({c for c in body if not re.match(r"[\w@%+=:,./'\"\- ]", c, re.ASCII)})
        raise ActionError(f"the launch command has shell syntax runtop will not send ({' '.join(chars) or 'empty'}): {cmd[:120]}")
    try:
        shlex.split(body)
    except ValueError as e:
        raise ActionError(f"the launch command does not parse: {e}") from None
    return cmd.strip()


def _split_redirect(cmd: str) -> tuple[str, str]:
    m = REDIRECT_RE.search(cmd)
    return (cmd[: m.start()], cmd[m.start() :]) if m else (cmd, "")


def resume_command(state: RunState, base: str, step: int, ckpt_path: str) -> str:
    """The base launch command with the resume flags of this framework and generation."""
    head, redirect = _split_redirect(base)
    try:
        words = get_framework(state.framework).resume_words(state, shlex.split(head), step, ckpt_path)
    except NotImplementedError as e:
        raise ActionError(str(e)) from None
    return " ".join(shlex.quote(w) for w in words) + redirect


def resolve_launch_cmd(ctx: Context) -> str:
    """`--launch-cmd` / `[actions] launch_cmd`; else the argv of the process the proven pane's
    shell started, with the launch variables of its environment, live or as runtop recorded it
    in `.runtop/launch.json` while the run lived. Never the pane's screen: a line the run
    printed can look like a prompt (docs/design.md, "The run dir is untrusted")."""
    if ctx.launch_cmd:
        return check_command(ctx.launch_cmd)
    pane = ctx.pane()
    pids = ctx.live_pids()
    argv = launcher_argv(pane, pids) if pids else None
    redirect = launcher_redirect(pane, pids) if argv else ""
    source = ("the launcher process's argv and the launch variables of its environment, its output's redirect from its own file"
              " descriptors (give --launch-cmd to change it)")
    if argv is None:
        rec, why = recorded_pane(ctx.run_root)
        ctx.ignored = why or ctx.ignored
        if rec and rec.get("pane_id") == pane.pane_id and rec.get("shell_pid") == pane.pid and rec.get("argv"):
            argv = list(rec["argv"])
            redirect = str(rec.get("redirect") or "")
            source = ("the launcher process's argv, launch variables and redirect, recorded by runtop in .runtop/launch.json while"
                      " the run lived (give --launch-cmd to change it)")
    if not argv:
        extra = f"; {ctx.ignored}" if ctx.ignored else ""
        raise ActionError(f"no launch command: give --launch-cmd or [actions] launch_cmd (no live launcher process, and none recorded by runtop{extra})")
    ctx.launch_cmd, ctx.launch_cmd_source = check_command(shlex.join(argv) + redirect), source
    return ctx.launch_cmd
