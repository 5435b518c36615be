"""The run an action is planned for: its state, its tmux and the proven Launcher pane, the launch
command and the disks a resume is checked against (`runtop.actions.vetted` plans with it,
`runtop.actions.dispatch` sends through it)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from runtop.action_error import ActionError
from runtop.actions.launcher import launcher_argv, launcher_redirect, record_pane, recorded_pane
from runtop.config import ActionsConfig
from runtop.frameworks import get as get_framework
from runtop.rules.health import Verdict
from runtop.sources.disk import DiskSnapshot, sample_run
from runtop.sources.processes import ancestor_pids
from runtop.sources.tmux import Pane, Tmux, TmuxError
from runtop.state.run import RunState


@dataclass
class Context:
    state: RunState
    run_root: str
    tmux: Tmux
    session: str | None = None
    window: str = "Launcher"
    logs_window: str = "Logs"
    launch_cmd: str | None = None
    launch_cmd_source: str | None = None
    read_only: bool = False
    audit_path: str | None = None
    log_paths: list[str] = field(default_factory=list)
    stop_timeout_s: float = 60.0
    target: str | None = None  # --tmux-target: the user's explicit choice of pane
    records: bool = True  # remember the proven pane in RUN/.runtop/launch.json (a served visitor writes nothing)
    _pane: Pane | None = None
    _disk: DiskSnapshot | None = None
    _pane_error: str | None = None
    pane_proof: str = ""
    ignored: str | None = None  # a record in the run dir runtop did not believe, and why
    verdict: Verdict | None = None  # the engine's verdict on `state`: what a check-in writes

    @classmethod
    def for_run(
        cls,
        state: RunState,
        *,
        cfg: ActionsConfig | None = None,
        tmux: Tmux | None = None,
        socket: str | None = None,
        session: str | None = None,
        launch_cmd: str | None = None,
        read_only: bool = False,
        target: str | None = None,
        records: bool = True,
        verdict: Verdict | None = None,
    ) -> Context:
        """The context for a run, from `[actions]` and the command line (given values win)."""
        cfg = cfg or ActionsConfig()
        source = "given with --launch-cmd" if launch_cmd else ("from [actions] launch_cmd" if cfg.launch_cmd else None)
        return cls(
            state=state,
            run_root=state.path,
            tmux=tmux or Tmux(socket),
            session=session,
            window=cfg.launcher_window,
            logs_window=cfg.logs_window,
            launch_cmd=launch_cmd or cfg.launch_cmd,
            launch_cmd_source=source,
            read_only=read_only or cfg.read_only,
            audit_path=cfg.audit_log,
            log_paths=[f.path for f in state.files.values() if f.kind == "log"],
            target=target or cfg.tmux_target,
            records=records,
            verdict=verdict,
        )

    def disk(self) -> DiskSnapshot:
        """The run's disks as the engine last sampled them, else sampled now (a command that read
        the run once): a resume is checked against them."""
        if self._disk is None:
            self._disk = self.state.disk if self.state.disk is not None else sample_run(
                self.run_root, get_framework(self.state.framework).core_roots(self.run_root), self.state.checkpoint_dir)
        return self._disk

    def live_pids(self) -> list[int]:
        return [p for role, pids in (self.state.processes or {}).items() if role != "ray" for p in pids]

    def pane(self) -> Pane:
        """The Launcher pane, proven: the pane the user named (`--tmux-target`);
        else the pane whose shell started the run's live processes; else the pane recorded
        in `.runtop/launch.json` while the run lived, if that same shell is still there;
        else the `--tmux-session` the user named. Nothing else is guessed."""
        if self._pane is None and self._pane_error is None:
            try:
                self._pane, self.pane_proof = self._find_pane()
            except TmuxError as e:
                self._pane_error = str(e)
        if self._pane is None:
            raise ActionError(self._pane_error or "no Launcher pane")
        return self._pane

    def _find_pane(self) -> tuple[Pane, str]:
        if self.target:
            return self.tmux.resolve_target(self.target), "named with --tmux-target"
        pids = self.live_pids()
        if pids:
            pane = self.tmux.launcher_pane(self.window, self.session, pids)
            if pane.pid == os.getpid() or pane.pid in ancestor_pids([os.getpid()]):
                # runtop started the run itself (`runtop demo`): its own pane is no Launcher,
                # and keys typed there would land in runtop, not in a shell.
                raise TmuxError("the pane whose shell started the run's processes is the one runtop runs in: no Launcher pane to type into")
            if self.session is None or pane.pid in ancestor_pids(pids):
                if self.records:
                    record_pane(self.run_root, pane, launcher_argv(pane, pids), launcher_redirect(pane, pids))
                return pane, "its shell started the run's processes"
            return pane, f"in the session you named ({self.session})"
        recorded, self.ignored = recorded_pane(self.run_root)
        if recorded is not None:
            live = self.tmux.pane(recorded["pane_id"])
            if live is not None and live.pid == recorded.get("shell_pid"):
                return live, "recorded in .runtop/launch.json by runtop while the run's processes lived in it"
        try:
            return self.tmux.launcher_pane(self.window, self.session, None), f"in the session you named ({self.session})"
        except TmuxError as e:
            raise TmuxError(f"{e} ({self.ignored})" if self.ignored else str(e)) from None
