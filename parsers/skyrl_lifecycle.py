"""What a SkyRL driver log says about the run's life, beside its numbers: checkpoints saved
and loaded, a resume or a start from scratch, the normal end, the infra log it names, the
autoretry wrapper's attempts and exit codes, and the errors and crash dumps of its
processes. Mixed into `SkyrlParser`, which keeps the step being read.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from .crashes import crash_signature, error_notice, has_traceback
from .events import (
    INFERENCE,
    LAUNCHER,
    TRAINER,
    AttemptStart,
    CheckpointDir,
    CheckpointSave,
    Event,
    ExtraLog,
    Kind,
    MaxSteps,
    Notice,
    Resumed,
    RoleFinished,
)
from .records import Record
from .skyrl_agent import _is_agent_traceback, agent_events, agent_traceback
from .skyrl_records import _proc_role

TOTAL_STEPS_RE = re.compile(r"Total steps: (\d+)", re.ASCII)
SAVED_RE = re.compile(r"Successfully saved checkpoint for global_step_(\d+) to: (\S+)", re.ASCII)
LOADING_RE = re.compile(r"Loading checkpoint from:? (\S+)", re.ASCII)
RESUMING_RE = re.compile(r"Resuming from global_step:? (\d+)", re.ASCII)
INFRA_RE = re.compile(r"Infrastructure logs will be written to:? (\S+)", re.ASCII)
ATTEMPT_RE = re.compile(r"Attempt #(\d+)", re.ASCII)
EXITED_RE = re.compile(r"Training exited with code (-?\d+)(?: after (\d+)s)?", re.ASCII)


class SkyrlLifecycle:
    """Mixed into `SkyrlParser`: `next_step` is the step a resume or a fresh start begins at."""

    next_step: int | None

    def _crash_in_lines(self, rec: Record, lines: list[str], t: str | None, out: list[Event]) -> bool:
        if not crash_signature("\n".join(lines[:20] + lines[-20:])):
            return False
        orphan = Record("orphan", t, None, lines[0], rec.proc, lines[1:])
        notice = error_notice(orphan, _proc_role(rec.proc), traceback_is_fatal=True)
        if notice is not None:
            out.append(notice)
        return notice is not None

    def _wrapper(self, msg: str, t: str | None, out: list[Event]) -> None:
        m = ATTEMPT_RE.search(msg)
        if m:
            out.append(AttemptStart(int(m.group(1)), f"autoretry Attempt #{m.group(1)}", t))
            return
        m = EXITED_RE.search(msg)
        if m:
            code = int(m.group(1))
            level = "ERROR" if code != 0 else "INFO"
            out.append(Notice(LAUNCHER, level, f"exit code {code}", msg, t, fatal=code != 0))
            if code == 0:
                out.append(RoleFinished(TRAINER, t))

    def _message(self, rec: Record, msg: str, lines: list[str], t: str | None, out: list[Event]) -> None:
        role = _proc_role(rec.proc)
        level = rec.level or ""
        n = rec.repeat
        agent = agent_events(rec, msg, lines, t)
        if agent is not None:  # the agent's own lines: slow tools, timeouts, overflows, format rules
            out.extend(agent)
            return
        if (m := SAVED_RE.search(msg)) is not None:
            step, path = int(m.group(1)), m.group(2)
            out.append(CheckpointSave(TRAINER, step, t))
            out.append(CheckpointDir(posixpath.dirname(path.rstrip("/")) or ".", "log: Successfully saved checkpoint"))
            return
        if (m := RESUMING_RE.search(msg)) is not None:
            step = int(m.group(1))
            out.append(AttemptStart(None, f"resumed from global_step {step}", t))
            out.append(Resumed(TRAINER, step, t))
            self.next_step = step + 1
            return
        if "No checkpoint found" in msg and "scratch" in msg:
            out.append(AttemptStart(None, "started from scratch (no checkpoint found)", t))
            out.append(Resumed(TRAINER, 0, t))
            self.next_step = 1
            return
        if (m := LOADING_RE.search(msg)) is not None and msg.startswith("Loading checkpoint"):
            parent = posixpath.dirname(m.group(1).rstrip("/"))
            if parent:
                out.append(CheckpointDir(parent, "log: Loading checkpoint"))
            return
        if msg.startswith(("Training finished", "Training complete")):
            out.append(RoleFinished(TRAINER, t))
            return
        if (m := TOTAL_STEPS_RE.match(msg)) is not None:
            out.append(MaxSteps(int(m.group(1)), "log"))
            return
        if (m := INFRA_RE.search(msg)) is not None:
            out.append(ExtraLog(m.group(1), INFERENCE))
            return
        if has_traceback(lines) and _is_agent_traceback(rec, lines):
            out.extend(agent_traceback(rec, lines, t))
            return
        if level in ("ERROR", "CRITICAL") or rec.fmt in ("orphan", "raylet", "print") or has_traceback(lines):
            fatal_tb = rec.proc is None or rec.proc.startswith("skyrl_entrypoint")
            if rec.time is None and t is not None:
                rec.time = t
            notice = error_notice(rec, role, traceback_is_fatal=fatal_tb)
            if notice is not None and notice.actor and _proc_role(notice.actor) != role:
                notice = replace(notice, role=_proc_role(notice.actor))  # the dead actor's role, not the driver's
            if notice is not None and (notice.kind != "error" or level in ("ERROR", "CRITICAL")):
                out.append(notice)
            return
        if lines and self._crash_in_lines(rec, lines, t, out):
            return
        if level == "WARNING":
            sig = crash_signature(msg)
            kind = sig[0] if sig else (Kind.ULIMIT if "ulimit" in msg else "warning")
            out.append(Notice(role, "WARNING", kind, msg[:300], t, count=n))
