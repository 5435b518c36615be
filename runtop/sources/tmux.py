"""tmux, driven with argv lists (never a shell): find the run's session and Launcher pane,
send it literal text, read what it shows.

`socket` is tmux's `-L` server name (tests run a private server; users keep the default).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from runtop.sources.processes import ancestor_pids

# A tmux that hangs (a wedged server) must not hold the caller: 3 s, then a one-line error.
TIMEOUT_S = 3.0


class TmuxError(Exception):
    """tmux is missing, or a session, window or pane is not there; one line."""


@dataclass(frozen=True)
class Pane:
    session: str
    window: str
    pane_id: str  # `%12`: an exact target, never a name that could match something else
    pid: int  # the pane's shell
    command: str = ""  # its foreground program (`#{pane_current_command}`)
    path: str = ""  # its working directory
    index: str = ""  # `window.pane` indexes, for showing `session:window.pane`

    @property
    def target(self) -> str:
        return f"{self.session}:{self.index or self.window} ({self.pane_id}, shell pid {self.pid}, cwd {self.path or '?'})"

    @property
    def at_prompt(self) -> bool:
        """The shell itself is in the foreground: typed text goes to its prompt, not to a program."""
        return os.path.basename(self.command).lstrip("-") in SHELLS


SHELLS = {"bash", "zsh", "fish", "sh", "dash", "ksh", "tcsh", "csh", "mksh", "ash", "busybox", "nu", "xonsh", "elvish"}
FORMAT = "#{session_name}\t#{window_name}\t#{pane_id}\t#{pane_pid}\t#{pane_current_command}\t#{pane_current_path}\t#{window_index}.#{pane_index}"


class Tmux:
    def __init__(self, socket: str | None = None, path: str | None = None) -> None:
        self.socket = socket
        self.path = path  # a socket path (`$TMUX`'s first field) instead of a name
        self.binary = shutil.which("tmux")

    def _run(self, *args: str, check: bool = True) -> str:
        if self.binary is None:
            raise TmuxError("tmux is not installed")
        where = ["-S", self.path] if self.path else ["-L", self.socket] if self.socket else []
        argv = [self.binary, *where, *args]
        try:
            # errors=replace: a window named with byte 0xff must not fail every action.
            r = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TmuxError(f"tmux {args[0]} slow: gave up after {TIMEOUT_S:g} s") from None
        except OSError as e:
            raise TmuxError(f"tmux {args[0]} failed: {e}") from None
        if check and r.returncode != 0:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise TmuxError(f"tmux {args[0]}: {msg[-1] if msg else f'exit {r.returncode}'}")
        return r.stdout

    def display_to_clients(self, text: str, ms: int = 15000) -> int:
        """Show `text` in the status line of every attached client (a page that
        reaches whoever is attached, over SSH, whatever their terminal). Returns how many."""
        clients = [c for c in self._run("list-clients", "-F", "#{client_name}").splitlines() if c]
        for c in clients:
            # `##` is a literal `#`: run text is never a tmux format (`#(cmd)` would run a command).
            self._run("display-message", "-c", c, "-d", str(ms), text.replace("#", "##"))
        return len(clients)

    def panes(self) -> list[Pane]:
        try:
            out = self._run("list-panes", "-a", "-F", FORMAT)
        except TmuxError as e:
            if "no server running" in str(e) or "error connecting" in str(e):
                raise TmuxError("no tmux server is running" + (f" on socket {self.socket!r}" if self.socket else "")) from None
            raise
        panes = []
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 7 and parts[3].isascii() and parts[3].isdigit():
                panes.append(Pane(parts[0], parts[1], parts[2], int(parts[3]), parts[4], parts[5], parts[6]))
        return panes

    def pane(self, pane_id: str) -> Pane | None:
        return next((p for p in self.panes() if p.pane_id == pane_id), None)

    def resolve_target(self, target: str) -> Pane:
        """`--tmux-target SESSION:WINDOW.PANE` (or `%12`): the pane the user named."""
        try:
            out = self._run("display-message", "-p", "-t", target, FORMAT).strip()
        except TmuxError as e:
            raise TmuxError(f"--tmux-target {target!r}: {str(e).split(': ', 1)[-1]}") from None
        parts = out.split("\t")
        if len(parts) != 7 or not parts[3].isdigit():
            raise TmuxError(f"--tmux-target {target!r} names no pane")
        return Pane(parts[0], parts[1], parts[2], int(parts[3]), parts[4], parts[5], parts[6])

    def launcher_pane(self, window: str = "Launcher", session: str | None = None, run_pids: list[int] | None = None) -> Pane:
        """The pane whose shell is an ancestor of one of the run's live processes (the shell
        that started `uv run rl`), proven by the process tree; or, with `session` given by
        the user, that session's `window`. Never "the only Launcher window" (that
        typed into another run's pane)."""
        panes = self.panes()
        if run_pids:
            ancestors = ancestor_pids(run_pids)
            owners = [p for p in panes if p.pid in ancestors and (session is None or p.session == session)]
            if len(owners) == 1:
                return owners[0]
            if len(owners) > 1:
                raise TmuxError(f"the run's processes descend from {len(owners)} panes ({', '.join(p.target for p in owners)}): give --tmux-target")
        if session is None:
            raise TmuxError(
                "cannot prove which tmux pane launched this run: no live process of the run descends from a pane"
                " (and none was recorded while it ran); give --tmux-target SESSION:WINDOW.PANE"
            )
        in_session = [p for p in panes if p.session == session]
        if not in_session:
            raise TmuxError(f"no tmux session {session!r}")
        launcher = [p for p in in_session if p.window == window]
        if not launcher:
            raise TmuxError(f"session {session!r} has no {window!r} window")
        return launcher[0]

    def send_literal(self, pane: Pane, text: str) -> None:
        """The exact text, as typed (`send-keys -l`), then Enter, in one tmux command list:
        two senders can no longer merge their lines between the text and its Enter."""
        self._run("send-keys", "-t", pane.pane_id, "-l", "--", text, ";", "send-keys", "-t", pane.pane_id, "Enter")

    def send_interrupt(self, pane: Pane) -> None:
        self._run("send-keys", "-t", pane.pane_id, "C-c")

    def select_window(self, session: str, window: str) -> None:
        self._run("select-window", "-t", f"={session}:{window}")

    def capture(self, pane: Pane, lines: int = 200) -> list[str]:
        out = self._run("capture-pane", "-p", "-J", "-t", pane.pane_id, "-S", f"-{lines}")
        return [ln.rstrip() for ln in out.splitlines()]


def user_and_host() -> tuple[str, str]:
    """The user's name (the audit log names people, not uids) and the host."""
    import pwd

    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = os.environ.get("USER") or f"uid {os.getuid()}"
    return user, os.uname().nodename
