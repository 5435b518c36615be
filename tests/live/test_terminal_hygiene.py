"""The TUI ended by a signal leaves the terminal as `q` does: a researcher's `kill`, a closed
ssh session (SIGHUP) or a `kill -INT` must not leave their shell in the alternate screen with
mouse tracking on and no cursor. Each story runs a real runtop in a real pty and reads the
bytes it writes after the signal."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time

import pytest

from runtop.cli.main import main

RUNTOP = [sys.executable, "-m", "runtop"]
ALT_ON, ALT_OFF = b"\x1b[?1049h", b"\x1b[?1049l"
MOUSE_OFF, CURSOR_ON = b"\x1b[?1000l", b"\x1b[?25h"


def spawn(argv: list[str]) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal 100×30, as a researcher's
        os.environ["TERM"] = "xterm-256color"
        os.environ["COLUMNS"], os.environ["LINES"] = "100", "30"
        os.execvp(argv[0], argv)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return pid, fd


def read_until(fd: int, want: bytes, seconds: float) -> bytes:
    seen = b""
    end = time.monotonic() + seconds
    while want not in seen and time.monotonic() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break  # the child closed the pty
    return seen


def read_to_exit(pid: int, fd: int, seconds: float) -> tuple[bytes, int | None]:
    seen, status = b"", None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            seen += chunk
            if chunk:
                continue
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return seen, status


def _signalled(argv: list[str], sig: int) -> tuple[bytes, int | None]:
    pid, fd = spawn(argv)
    try:
        started = read_until(fd, ALT_ON, 60)
        assert ALT_ON in started, f"the TUI never entered the alternate screen: {started[-300:]!r}"
        time.sleep(1.0)  # drawing, the engine reading: a signal arrives in the middle of a life
        os.kill(pid, sig)
        after, status = read_to_exit(pid, fd, 20)
    finally:
        os.close(fd)
    assert status is not None, "runtop did not exit within 20 s of the signal"
    return after, status


def _restored(after: bytes) -> None:
    assert ALT_OFF in after, f"the alternate screen was not left: {after[-300:]!r}"
    assert CURSOR_ON in after, "the cursor was left hidden"
    assert MOUSE_OFF in after, "mouse tracking was left on"
    # Left in that order: nothing is drawn into the shell's screen after it came back.
    assert after.rfind(ALT_OFF) > after.rfind(ALT_ON)


@pytest.fixture(scope="module")
def a_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A simulated run's files, kept: `runtop RUN` then follows a real run dir."""
    root = str(tmp_path_factory.mktemp("run") / "r")
    assert main(["demo", "--dir", root, "--duration", "2", "--headless", "--speed", "60"]) == 0
    return root


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_a_signal_to_the_run_view_gives_the_terminal_back(a_run: str, sig: int) -> None:
    after, status = _signalled([*RUNTOP, a_run, "--vllm-url", ""], sig)
    _restored(after)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + sig  # as a shell says a signal ended it


def test_kill_during_the_demo_gives_the_terminal_back_and_removes_the_simulated_run() -> None:
    after, status = _signalled([*RUNTOP, "demo", "--speed", "40"], signal.SIGTERM)
    _restored(after)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTERM
    removed = after.decode(errors="replace").split("was removed from ")
    assert len(removed) == 2, "the demo did not say it removed its run"
    assert not os.path.exists(removed[1].split()[0])


def test_kill_on_the_runs_table_gives_the_terminal_back(tmp_path) -> None:
    for name in ("seed-1", "seed-2"):
        assert main(["demo", "--dir", str(tmp_path / name), "--duration", "1", "--headless", "--speed", "60"]) == 0
    after, status = _signalled([*RUNTOP, str(tmp_path)], signal.SIGTERM)
    _restored(after)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTERM
