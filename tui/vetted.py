"""The app's vetted actions and its check-in: the only way the TUI sends anything.

Every action is planned by `runtop.actions.vetted` (off the UI loop), shown as the exact text it
would type, confirmed by the user, and only then dispatched (`runtop.actions.dispatch`). A mixin
of `RuntopApp`, kept apart so the app module holds the layout and the engine's loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events, work

from runtop.actions.vetted import REGISTRY as ACTIONS
from runtop.actions.vetted import Context, Plan
from runtop.rules.resumable import resume_refusal
from runtop.state.run import RunState
from runtop.tui.confirm_screen import ConfirmScreen

if TYPE_CHECKING:
    from textual.app import App

    from runtop.engine.engine import Engine

    _Base = App[int]
else:
    _Base = object

READ_ONLY_KEYS = {a.key for a in ACTIONS}  # answered "actions are off" under --read-only
RESUME_KEY = next(a.key for a in ACTIONS if a.name == "resume")
LAUNCHER_KEYS = {a.key for a in ACTIONS if a.name != "checkin"}  # the actions sent into the run's tmux


class VettedActions(_Base):
    """Needs `read_only`, `action_options`, `monitor`, `_confirming` and `refresh_panes` (the app's)."""

    if TYPE_CHECKING:
        read_only: bool
        action_options: dict[str, Any]
        monitor: Engine
        _confirming: bool

        def refresh_panes(self) -> None: ...

    # Why a resume cannot succeed now (`runtop.rules.resumable`), as of the newest view: `R` is not
    # shown meanwhile (docs/design.md, "Advice that would work").
    resume_refused: str | None = None

    # Why the actions that type into the run's tmux Launcher pane cannot act here (the demo's
    # simulated run has no such pane): their keys are not offered, and pressing one says why.
    no_launcher: str | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Read-only removes every action at this one point: no key, palette entry or screen reaches one.
        if self.read_only and action in ("act", "checkin"):
            return False
        if self.no_launcher is not None and action == "act":
            return False
        if action == "act" and parameters == ("resume",) and self.resume_refused is not None:
            return False
        return True

    def on_key(self, event: events.Key) -> None:
        # Read-only hides the action keys; pressing one still gets an answer.
        if self.read_only and event.key in READ_ONLY_KEYS and not self._confirming:
            self.notify("read-only: actions are off", timeout=4)
        elif self.no_launcher is not None and event.key in LAUNCHER_KEYS and not self._confirming:
            self.notify(self.no_launcher, timeout=6)
        elif event.key == RESUME_KEY and self.resume_refused is not None and not self._confirming:
            self.notify(f"resume is not offered: {self.resume_refused}", severity="warning", timeout=8)

    def sync_resume_key(self, state: RunState) -> None:
        """Show `R` only while a resume could succeed; the footer follows when that changes."""
        refused = resume_refusal(state)
        if refused != self.resume_refused:
            self.resume_refused = refused
            self.refresh_bindings()

    def action_act(self, name: str) -> None:
        if self.read_only or self._confirming:
            return
        self._confirming = True
        self._plan_action(name)

    def _capture_launcher(self) -> list[str]:
        """The Launcher pane's last lines (reading: allowed even with --read-only)."""
        from runtop.actions.vetted import launcher_lines

        return launcher_lines(self._action_context())

    def _action_context(self) -> Context:
        from runtop.actions.vetted import Context

        view = self.monitor.view()
        return Context.for_run(view.state, read_only=self.read_only, verdict=view.verdict, **self.action_options)

    @work(thread=True, group="actions", exclusive=True)
    def _plan_action(self, name: str) -> None:
        from runtop.actions.vetted import ActionError, plan

        try:
            ctx = self._action_context()
            p = plan(name, ctx)
        except ActionError as e:
            self.call_from_thread(self._done, f"{name}: {e}", True)
            return
        if p.disabled:
            # A disabled action says why in a toast, not in an empty modal.
            self.call_from_thread(self._done, f"{name} is disabled: {p.disabled}", True)
            return
        self.call_from_thread(self._confirm, p, ctx)

    def _confirm(self, p: Plan, ctx: Context) -> None:
        def answered(token: str | None) -> None:
            if token is None:
                self._done(f"{p.name}: cancelled, nothing sent", False)
                return
            self._dispatch(p, ctx, token)

        self.push_screen(ConfirmScreen(p), answered)

    @work(thread=True, group="actions", exclusive=True)
    def _dispatch(self, p: Plan, ctx: Context, token: str) -> None:
        from runtop.actions.dispatch import dispatch
        from runtop.actions.vetted import ActionError

        def progress(msg: str) -> None:
            self.call_from_thread(self.notify, f"{p.name}: {msg}", timeout=3)

        try:
            outcome = dispatch(p, ctx, confirmation=token or None, progress=progress)
        except ActionError as e:
            self.call_from_thread(self._done, str(e), True)
            return
        self.call_from_thread(self._done, outcome, False)

    def _done(self, message: str, error: bool) -> None:
        self._confirming = False
        self.notify(message, severity="error" if error else "information", timeout=8)
        self.refresh_panes()

    def action_checkin(self) -> None:
        """Append a check-in to the run's STATUS.md (the runbook's hourly entry), in a worker."""
        self._write_checkin()

    @work(thread=True, group="checkin", exclusive=True)
    def _write_checkin(self) -> None:
        from runtop.outputs.checkin import append_checkin, status_path
        from runtop.outputs.report import to_markdown
        from runtop.sources.writes import OutputError

        view = self.monitor.view()
        text = to_markdown(view.state, view.verdict)
        path = status_path(view.state.path)
        try:
            append_checkin(path, text)
        except (OSError, OutputError) as e:
            self.call_from_thread(self.notify, f"check-in not written: {e}", severity="error")
            return
        self.call_from_thread(self.notify, f"check-in appended to {path}", timeout=5)
