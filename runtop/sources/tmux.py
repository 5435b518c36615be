"""tmux, driven with argv lists (never a shell): find the run's session and Launcher pane,
send it literal text, read what it shows.

`socket` is tmux's `-L` server name (tests run a private server; users keep the default).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

import psutil


# A tmux that hangs (a wedged server) must not hold the caller: 3 s, then a one-line error.
TIMEOUT_S = 3.0


class TmuxError(Exception):
    """tmux is missing, or a session, window or pane is not there; one line."""


@dataclass(frozen=True)
class Pane:
    session: str
    window: str
    pane_id: str  # `%12`: an exact target, never a name that could match something else
    pid: int


class Tmux:
    def __init__(self, socket: str | None = None) -> None:
        self.socket = socket
        self.binary = shutil.which("tmux")

    def _run(self, *args: str, check: bool = True) -> str:
        if self.binary is None:
            raise TmuxError("tmux is not installed")
        argv = [self.binary, *(["-L", self.socket] if self.socket else []), *args]
        try:
            # errors=replace: a window named with byte 0xff must not fail every action (issue 10).
            r = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TmuxError(f"tmux {args[0]} slow: gave up after {TIMEOUT_S:g} s") from None
        except OSError as e:
            raise TmuxError(f"tmux {args[0]} failed: {e}") from None
        if check and r.returncode != 0:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise TmuxError(f"tmux {args[0]}: {msg[-1] if msg else f'exit {r.returncode}'}")
        return r.stdout

    def panes(self) -> list[Pane]:
        try:
            out = self._run("list-panes", "-a", "-F", "#{session_name}\t#{window_name}\t#{pane_id}\t#{pane_pid}")
        except TmuxError as e:
            if "no server running" in str(e) or "error connecting" in str(e):
                raise TmuxError("no tmux server is running" + (f" on socket {self.socket!r}" if self.socket else "")) from None
            raise
        panes = []
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 4 and parts[3].isdigit():
                panes.append(Pane(parts[0], parts[1], parts[2], int(parts[3])))
        return panes

    def launcher_pane(self, window: str = "Launcher", session: str | None = None, run_pids: list[int] | None = None) -> Pane:
        """The Launcher window's pane: in `session`, or in the session whose pane is an ancestor
        of one of the run's processes (the shell that started `uv run rl`)."""
        panes = self.panes()
        if session is None and run_pids:
            ancestors: set[int] = set()
            for pid in run_pids:
                try:
                    ancestors.update(p.pid for p in psutil.Process(pid).parents())
                except psutil.Error:
                    continue
            owners = {p.session for p in panes if p.pid in ancestors}
            if len(owners) == 1:
                session = owners.pop()
        if session is None:
            sessions = sorted({p.session for p in panes})
            with_launcher = sorted({p.session for p in panes if p.window == window})
            if len(with_launcher) == 1:
                session = with_launcher[0]
            else:
                raise TmuxError(f"which tmux session? give --tmux-session (sessions: {', '.join(sessions) or 'none'})")
        in_session = [p for p in panes if p.session == session]
        if not in_session:
            raise TmuxError(f"no tmux session {session!r}")
        launcher = [p for p in in_session if p.window == window]
        if not launcher:
            raise TmuxError(f"session {session!r} has no {window!r} window")
        return launcher[0]

    def send_literal(self, pane: Pane, text: str) -> None:
        """The exact text, as typed (`send-keys -l`), then Enter, in one tmux command list:
        two senders can no longer merge their lines between the text and its Enter (issue 11)."""
        self._run("send-keys", "-t", pane.pane_id, "-l", "--", text, ";", "send-keys", "-t", pane.pane_id, "Enter")

    def send_interrupt(self, pane: Pane) -> None:
        self._run("send-keys", "-t", pane.pane_id, "C-c")

    def select_window(self, session: str, window: str) -> None:
        self._run("select-window", "-t", f"={session}:{window}")

    def capture(self, pane: Pane, lines: int = 200) -> list[str]:
        out = self._run("capture-pane", "-p", "-J", "-t", pane.pane_id, "-S", f"-{lines}")
        return [ln.rstrip() for ln in out.splitlines()]


def user_and_host() -> tuple[str, str]:
    try:
        user = os.getlogin()
    except OSError:
        user = os.environ.get("USER") or str(os.getuid())
    return user, os.uname().nodename
