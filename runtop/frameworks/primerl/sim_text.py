"""What prime-rl's logs look like, for the simulator: its clock, loguru's coloured lines,
its compact durations, its tracebacks, and the names the simulated run uses."""

from __future__ import annotations

ENV = "reverse-text"
RUN_NAME = "reverse-text--qwen3-0.6b--sim"
START = 14 * 3600  # the simulated clock starts at 14:00:00
DIM, BOLD, RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"
LEVEL_COLOUR = {"INFO": "", "SUCCESS": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m"}


def clock(t: float) -> str:
    t = int(t) % 86400
    return f"{t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"


def loguru(t: float, level: str, msg: str) -> str:
    """A prime-rl loguru line as written with colorize=True."""
    c = LEVEL_COLOUR[level]
    return f"{DIM}{clock(t)}{RESET} {c}{BOLD}{level:>7}{RESET} {c}{BOLD}\x1b[22m{msg}{RESET}{RESET}\n"


def duration_text(secs: float) -> str:
    """prime-rl's compact duration: `2m 35s`, `1h 4m`."""
    m, s = divmod(int(secs), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m}m" if h else f"{m}m {s}s"


def _traceback(exc: str, msg: str) -> str:
    return (
        "\x1b[33m\x1b[1mTraceback (most recent call last):\x1b[0m\n"
        '  File "/home/ubuntu/prime-rl/src/prime_rl/trainer/rl/train.py", line 423, in train\n'
        "    out = forward(\n"
        '  File "/home/ubuntu/prime-rl/src/prime_rl/trainer/model.py", line 1476, in forward\n'
        "    raise OutOfMemoryError(OOM)\n"
        f"\x1b[31m\x1b[1m{exc}\x1b[0m:\x1b[1m {msg}\x1b[0m\n"
    )
