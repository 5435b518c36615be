"""The reducers of what goes wrong: notices become errors and warnings, the fatal errors of
each death are kept for `runtop.state.causes` to choose from, with the phase that was open, and the
deaths that end their logs are read back (`RunState` split by concern)."""

from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import replace
from typing import TYPE_CHECKING

from runtop.parsers.events import Kind, Notice
from runtop.state.parts import MAX_DEATH_ERRORS, ErrorEntry, FileInfo, PhaseInfo, SlowCalls

# A wrapper that points up at its cause (vLLM's), and how far up runtop looks for it.
SEE_ABOVE_RE = re.compile(r"[Ss]ee root cause above|[Ss]ee stack trace \(above\)|Inspect the stacktrace to find the original", re.ASCII)
SEE_ABOVE_WINDOW = 30


class ErrorReducers:
    """Mixed into `RunState`, whose dataclass fields these are."""

    if TYPE_CHECKING:
        errors: deque[ErrorEntry]
        finished: set[str]
        error_count: int
        warnings: Counter[str]
        last_warning: dict[str, str]
        events: dict[str, tuple[str | None, str]]
        files: dict[str, FileInfo]
        phases: list[PhaseInfo]
        context_overflows: int
        slow_calls: SlowCalls
        _saving: dict[str, int]

    def _phase_of(self, ev: Notice) -> str | None:
        """What the run was doing when a role logged a fatal error: the innermost open SkyRL
        phase; for prime-rl (which marks no phase end) a checkpoint save not yet followed by
        a step, when the error belongs to it (its traceback runs through saving code, or it
        is a way a save dies: SIGBUS, a full disk)."""
        if self.phases:
            return self.phases[-1].name
        saving = self._saving.get(ev.role)
        if saving is None or not (ev.in_save or ev.signature in ("SIGBUS", "NoSpaceLeft")):
            return None
        return f"checkpoint save (step {saving})"

    def _on_notice(self, ev: Notice, source: str) -> None:
        if ev.level in ("ERROR", "CRITICAL") or ev.fatal:
            entry = ErrorEntry(
                ev.time, source, ev.role, ev.kind, ev.message, ev.fatal, ev.wrapper, ev.pid, ev.actor, ev.rank,
                ev.certain, ev.signature, self._phase_of(ev) if ev.fatal else None, after_finish=bool(self.finished),
            )
            self.errors.append(entry)
            self.error_count += 1
            info = self.files.get(source)
            # A death is every fatal error until the role works again: the OOM and torchrun's
            # ChildFailedError reporting it, Ray's ActorDiedError and the worker's SIGBUS
            # printed after it. `runtop.state.causes` picks the cause among them.
            if ev.fatal and info is not None:
                if info.fatal is None or info.active_after_fatal:
                    info.fatal = entry
                    info.fatals = []
                    info.active_after_fatal = False
                if len(info.fatals) < MAX_DEATH_ERRORS:
                    info.fatals.append(entry)
                if ev.wrapper and SEE_ABOVE_RE.search(ev.message):
                    self._promote_above(info, source)
        elif ev.level == "WARNING":
            self.warnings[ev.kind] += ev.count
            self.last_warning[ev.kind] = ev.message
        else:
            self.events[ev.kind] = (ev.time, ev.message)
        if ev.kind == Kind.CONTEXT_OVERFLOW:
            self.context_overflows += ev.count
        elif ev.kind == Kind.TOOL_TIMEOUT:
            self.slow_calls.timeouts += ev.count

    def _promote_above(self, info: FileInfo, source: str) -> None:
        """A wrapper that says the cause is above (`Engine core initialization failed. See root
        cause above`): the exceptions logged just before it in the same file join the death,
        though none was fatal alone (EngineCore's `DistNetworkError … EADDRINUSE`, its traceback
        cut to pieces by other processes' lines)."""
        have = {id(e) for e in info.fatals}
        recent = [e for e in list(self.errors)[-SEE_ABOVE_WINDOW:] if e.source == source and not e.fatal and id(e) not in have
                  and e.kind != "error" and ("Error" in e.kind or "Exception" in e.kind)]
        for e in recent[-3:]:
            if len(info.fatals) < MAX_DEATH_ERRORS:
                info.fatals.append(replace(e, fatal=True))

    def open_fatals(self) -> list[ErrorEntry]:
        """The cause of each death that ends its log (nothing of the role's work came after),
        oldest first: the most specific error of the death, not the wrapper that reported it."""
        from runtop.state.causes import root_cause

        out = [
            root_cause(i.fatals or [i.fatal])
            for i in self.files.values()
            if i.fatal is not None and i.kind == "log" and not i.active_after_fatal  # few have a death: asked first
        ]
        return sorted(out, key=lambda e: e.time or "99")
