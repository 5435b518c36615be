"""The shell's word on how its job died, as bash, zsh and tmux print it (recorded lines)."""

from __future__ import annotations

import pytest

from runtop.parsers.shell import job_death


@pytest.mark.parametrize(("screen", "signal"), [
    (["user@gpu:~/prime-rl$ uv run rl @ rl.toml", "Step 5 | loss 0.1", "Killed", "user@gpu:~/prime-rl$"], "SIGKILL"),
    (["bash: line 1: 4142 Killed                  uv run rl @ rl.toml"], "SIGKILL"),
    (["run.sh: line 12: 4142 Terminated              python train.py"], "SIGTERM"),
    (["[1]+  Killed                  uv run rl @ rl.toml", "(venv) root@gpu:/workspace#"], "SIGKILL"),
    (["zsh: killed     uv run rl @ rl.toml", "gpu%"], "SIGKILL"),
    (["Segmentation fault (core dumped)", "$"], "SIGSEGV"),
    (["Pane is dead (status 137, Wed Nov 25 08:00:00 2026)"], "SIGKILL"),
    (["Pane is dead (signal 15, Wed Nov 25 08:00:00 2026)"], "SIGTERM"),
])
def test_a_jobs_death_by_signal_is_read(screen, signal):
    said = job_death(screen)
    assert said is not None and said.signal == signal


@pytest.mark.parametrize("screen", [
    [],
    ["user@gpu:~/prime-rl$"],
    ["Step 5 | Killed process 12 (python)", "$"],  # the run's output, not the shell's word
    ["Killed", "Step 6 | loss 0.1", "Step 7 | loss 0.1", "saving checkpoint", "Step 8 | loss 0.1"],  # an older attempt's
    ["Pane is dead (status 0, Wed Nov 25 08:00:00 2026)"],  # exited normally
])
def test_no_signal_is_read_where_the_shell_said_none(screen):
    assert job_death(screen) is None
