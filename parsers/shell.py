"""What a shell says when its job dies of a signal: the launcher's own word on a run killed
whole, read from its tmux pane (docs/formats.md, "The shell's word").

    Killed                                   (bash, a foreground job: SIGKILL)
    bash: line 1: 41 Killed   uv run rl …    (a script's job; `run.sh: line 12: …` too)
    [1]+  Killed                  uv run rl …
    zsh: killed     uv run rl @ rl.toml
    Pane is dead (signal 9, Wed Nov 25 08:00:00 2026)   (tmux with remain-on-exit)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# bash's words for the signals a run dies of (`strsignal`), and zsh's lower-case ones.
SIGNALS = {
    "killed": "SIGKILL", "terminated": "SIGTERM", "hangup": "SIGHUP", "interrupt": "SIGINT",
    "aborted": "SIGABRT", "segmentation fault": "SIGSEGV", "bus error": "SIGBUS",
    "floating point exception": "SIGFPE", "illegal instruction": "SIGILL", "quit": "SIGQUIT",
}
_WORDS = "|".join(sorted((re.escape(w) for w in SIGNALS), key=len, reverse=True))
JOB_RE = re.compile(
    rf"^(?:\S+: line \d+:\s+\d+\s+|\[\d+\][+-]?\s+|zsh: )?({_WORDS})(?: \(core dumped\))?(?:\s{{2,}}\S.*|\s+\S.*)?$",
    re.IGNORECASE | re.ASCII,
)
DEAD_PANE_RE = re.compile(r"^Pane is dead \((signal|status) (\d+)", re.ASCII)
# A line that is only a prompt (`user@host:~/prime-rl$`, `bash-5.2#`, `(venv) …$`).
PROMPT_ONLY_RE = re.compile(r"^\S*.{0,200}[$#%>]\s*$", re.ASCII)
SIGNAL_NAMES = {9: "SIGKILL", 15: "SIGTERM", 6: "SIGABRT", 11: "SIGSEGV", 7: "SIGBUS", 1: "SIGHUP", 2: "SIGINT"}
LOOK_BACK = 4  # lines above the newest prompt a job's status can stand on


@dataclass(frozen=True, slots=True)
class JobDeath:
    signal: str  # `SIGKILL`
    line: str  # what the shell printed


def job_death(lines: list[str]) -> JobDeath | None:
    """The signal the shell says its last job died of, where that is the pane's newest word
    (only a prompt below it); an older status in the scrollback is another attempt's."""
    seen = 0
    for raw in reversed(lines):
        line = raw.strip()
        if not line:
            continue
        if PROMPT_ONLY_RE.match(line) and not JOB_RE.match(line):
            continue
        dead = DEAD_PANE_RE.match(line)
        if dead:
            n = int(dead.group(2))
            n = n - 128 if dead.group(1) == "status" and n > 128 else (n if dead.group(1) == "signal" else 0)
            return JobDeath(SIGNAL_NAMES.get(n, f"signal {n}"), line) if n else None
        m = JOB_RE.match(line)
        if m:
            return JobDeath(SIGNALS[m.group(1).lower()], line)
        seen += 1
        if seen >= LOOK_BACK:
            return None
    return None
