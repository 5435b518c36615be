"""Desktop notifications through the terminal, over SSH: OSC 777 (foot, WezTerm,
Ghostty, Kitty, urxvt) or OSC 9 (iTerm2, which `LC_TERMINAL` names across ssh), wrapped for
tmux's passthrough when inside tmux (it passes only with `set -g allow-passthrough on`), and
`tmux display-message` to every client attached to the tmux runtop runs in."""

from __future__ import annotations

import os
from collections.abc import Mapping

from runtop.parsers.hygiene import public
from runtop.sources.tmux import Tmux, TmuxError

ESC, BEL = "\x1b", "\x07"


def _clean(text: str, n: int) -> str:
    # No control characters (they would end the sequence) and no `;` (OSC 777's separator).
    return "".join(ch for ch in public(text) if ch >= " " and ch != "\x7f").replace(";", ",")[:n]


def osc(title: str, body: str, env: Mapping[str, str] = os.environ) -> str:
    """One desktop notification, in the form this terminal reads (one: terminals that read
    both would show two)."""
    t, b = _clean(title, 80), _clean(body, 200)
    iterm = env.get("LC_TERMINAL") == "iTerm2" or env.get("TERM_PROGRAM") == "iTerm.app"
    seq = f"{ESC}]9;{t}: {b}{BEL}" if iterm else f"{ESC}]777;notify;{t};{b}{BEL}"
    if env.get("TMUX"):
        seq = f"{ESC}Ptmux;{seq.replace(ESC, ESC + ESC)}{ESC}\\"
    return seq


def tmux_message(text: str, env: Mapping[str, str] = os.environ) -> str | None:
    """`text` in every attached client's status line of the tmux runtop runs in; the error, or None."""
    where = env.get("TMUX", "").split(",")[0]
    if not where:
        return None
    try:
        Tmux(path=where).display_to_clients(_clean(text, 200))
    except TmuxError as e:
        return str(e)
    return None
