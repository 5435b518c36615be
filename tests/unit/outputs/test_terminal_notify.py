"""Pages through the terminal: an OSC desktop notification in the form the
terminal reads, wrapped for tmux's passthrough, and a message in the status line of every
client attached to the tmux runtop runs in (a real server on a private socket, a real client)."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import time

import pytest

from runtop.outputs.terminal_notify import osc, tmux_message


def test_osc_777_by_default_osc_9_for_iterm_and_wrapped_inside_tmux():
    assert osc("runtop: r is Down", "trainer died", {}) == "\x1b]777;notify;runtop: r is Down;trainer died\x07"
    assert osc("t", "b", {"LC_TERMINAL": "iTerm2"}) == "\x1b]9;t: b\x07"  # LC_* crosses ssh
    wrapped = osc("t", "b", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]777;notify;t;b\x07\x1b\\"
    # Run text cannot end the sequence early or add fields: no controls, no `;`.
    assert osc("t", "died\x07\x1b]0;pwned\x07 later", {}) == "\x1b]777;notify;t;died later\x07"  # the run's own OSC is dropped
    assert osc("a;b", "c;d", {}) == "\x1b]777;notify;a,b;c,d\x07"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_every_attached_client_sees_the_message_literally(tmp_path):
    sock = str(tmp_path / "s")
    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-x", "80", "-y", "24", "sleep 60"], check=True)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("tmux", ["tmux", "-S", sock, "attach"])
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not subprocess.run(["tmux", "-S", sock, "list-clients"], capture_output=True, text=True).stdout:
            time.sleep(0.05)
        assert tmux_message("runtop: r is Down: died #(echo pwned)", {"TMUX": f"{sock},1,0"}) is None
        seen = b""
        end = time.monotonic() + 3
        while b"is Down" not in seen and time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                seen += os.read(fd, 65536)
        assert b"runtop: r is Down: died #(echo pwned)" in seen  # literal: no tmux format ran
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        os.waitpid(pid, 0)
    assert tmux_message("x", {}) is None  # not inside tmux: nothing to do
    assert tmux_message("x", {"TMUX": f"{tmp_path / 'none'},1,0"})  # a server gone: said, not raised
