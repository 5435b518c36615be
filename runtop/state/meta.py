"""The reducers of what the run says about itself: how many steps it will take, its launch
command's overrides, where it saves checkpoints, the other logs it names, and the lines
runtop could not read (`RunState` split by concern)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtop.parsers.events import CheckpointDir, ExtraLog, LaunchConfig, MaxSteps, Unparsed, Unrecognised
from runtop.state.parts import FileInfo


class MetaReducers:
    """Mixed into `RunState`, whose dataclass fields these are."""

    if TYPE_CHECKING:
        max_steps: int | None
        max_steps_source: str | None
        run_name: str | None
        ckpt_interval: int | None
        keep_last: int | None
        batch_rollouts: int | None
        checkpoint_dir: str | None
        checkpoint_dir_source: str | None
        extra_logs: dict[str, str]
        unrecognised: dict[str, str]
        files: dict[str, FileInfo]

    def _on_max_steps(self, ev: MaxSteps, source: str) -> None:
        # A config's max_steps is what the user asked for; a log line only fills a gap.
        if self.max_steps is None:
            self.max_steps, self.max_steps_source = ev.value, ev.source

    def _on_unrecognised(self, ev: Unrecognised, source: str) -> None:
        self.unrecognised[ev.source] = ev.reason

    def _on_unparsed(self, ev: Unparsed, source: str) -> None:
        info = self.files.get(source)
        if info is None:
            info = self.files[source] = FileInfo(source, "?", "?")
        info.unparsed += 1
        info.unparsed_line, info.unparsed_reason = ev.line, ev.reason

    def _on_launch_config(self, ev: LaunchConfig, source: str) -> None:
        # The launch command is what the user asked for; a later relaunch may change it.
        if ev.run_name:
            self.run_name = ev.run_name
        if ev.ckpt_interval is not None:
            self.ckpt_interval = ev.ckpt_interval
        if ev.keep_last is not None:
            self.keep_last = ev.keep_last
        if ev.batch_rollouts is not None:
            self.batch_rollouts = ev.batch_rollouts
        if ev.ckpt_dir:
            self.checkpoint_dir, self.checkpoint_dir_source = ev.ckpt_dir, "launch command trainer.ckpt_path"

    def _on_ckpt_dir(self, ev: CheckpointDir, source: str) -> None:
        # Where saves actually went (`Successfully saved … to:`) is said after the launch
        # command, so the newest word wins. `--ckpt-dir` is the reader's and beats both.
        self.checkpoint_dir, self.checkpoint_dir_source = ev.path, ev.source

    def _on_extra_log(self, ev: ExtraLog, source: str) -> None:
        if len(self.extra_logs) < 16:
            self.extra_logs.setdefault(ev.path, ev.role)
