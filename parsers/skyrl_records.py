"""Which physical lines of a SkyRL driver log start a record (docs/formats.md, SkyRL line anatomy).

One driver log interleaves many Ray processes: every line carries its process's prefix
`(name pid=N[, ip=…])`, so a line from another process starts a record of its own even
without a header; loguru records, bare `print`s that carry numbers, tqdm frames, Ray's
own lines and shell traces each start one. Used by the shared `RecordAssembler`.
"""

from __future__ import annotations

import re

from .events import INFERENCE, TRAINER
from .records import Record
from .records import match_header as generic_header
from .text import RANK_PREFIX_RE

# `(skyrl_entrypoint pid=66570)`, `(MegatronPolicyWorkerBase pid=12, ip=10.0.0.2)`, `(pid=9)`, `(raylet)`.
RAY_PREFIX_RE = re.compile(r"\(((?:[\w.:\- ]+? )?pid=\d+|raylet)(?:, ip=[\d.]+)?\)\s?", re.ASCII)
REPEATED_RE = re.compile(r"(?<!\s)\s*\[repeated (\d+)x across cluster\]", re.ASCII)
# loguru: `2026-02-19 11:00:58.123 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'`
LOGURU_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\s*\|\s*"
    r"(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\|\s*(\S+)\s+-\s?(.*)",
    re.S | re.ASCII,
)
# An autoretry wrapper: `[2026-02-19 16:44:02] Attempt #2 (Total restarts: 1)`.
WRAPPER_RE = re.compile(r"\[\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})\]\s?(.*)", re.S | re.ASCII)
# Bare `print`s and tqdm frames that carry something: each is a record of its own.
STATEMENT_RE = re.compile(
    r"(?:global_step: \d|(?:ft|gt|rubric|total)_reward: |reward/|avg_final_rewards|\{'|Step \d+:|"
    r"Policy Train epoch|Training Batches Processed|Training exited with code|Attempt #\d|"
    r"Started: '|Finished: '|Total steps: |Rubric evaluation complete|\*\*\* SIG)", re.ASCII
)
# The shapes most of a driver log's records take, a Ray prefix (or none) before a loguru record
# or a bare `print` that carries something, told in one pattern pass (`header`'s fast path): what
# `ray_line` and `_body_header` make of such a line, read off one match. A prefix's `)` is the
# first in the line and nothing after its one space is looked at twice, so a match here is the
# one the two steps make.
_FAST_RE = re.compile(
    r"(?:\(((?:[\w.:\- ]+? )?pid=\d+|raylet)(?:, ip=[\d.]+)?\)\s?)?"
    r"(?:\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\s*\|\s*"
    r"(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\|\s*(\S+)\s+-\s?(.*)"
    r"|(?=" + STATEMENT_RE.pattern + r"))",
    re.S | re.ASCII,
)
# Inside a code-execution record (code, then its output) only these strict forms
# start a record: the output is the model's text and can look like anything.
AGENT_SAFE_RE = re.compile(r"(?:(?:ft|gt|rubric|total)_reward: [-+\d.eE]+\b|Rubric evaluation complete|global_step: \d+\s*$)", re.ASCII)

# The end of a tqdm frame: `| 80/80 [02:57<00:00,  2.22s/it, pg=-0.402]`. A frame ends in
# `\r`, not a newline, so the next record can follow it on the same line. Every framework's
# bars end so: `split_frames` is every driver log's line splitting, SkyRL's first.
TQDM_END_RE = re.compile(r"\|\s*\d+/\d+ \[[^\]]*\]", re.ASCII)


def split_frames(lines: list[str]) -> list[str]:
    """A line of tqdm frames (`\r`-separated, each redrawn over the last) → its last frame,
    and any record glued after a frame's closing `]` (a watchdog line, a dict) on its own line.
    Only the lines with a bar are looked at; the rest are taken a slice at a time."""
    bars = [i for i, line in enumerate(lines) if "%|" in line]
    if not bars:
        return lines
    out = lines[: bars[0]]
    for k, i in enumerate(bars):
        if k:
            out += lines[bars[k - 1] + 1 : i]  # the lines between two bars, as they are
        line = lines[i]
        if "\r" in line:
            out += frames(line)
            continue
        out += _glued_apart(line)  # one frame (the cleaner turns a file's `\r` into line ends)
    out += lines[bars[-1] + 1 :]
    return out


def frames(line: str) -> list[str]:
    """What `split_frames` makes of one line with a bar: its last frame, and any frame with a
    record glued behind it, split there."""
    out: list[str] = []
    pieces = [p for p in line.split("\r") if p.strip()]
    last_bar = max((j for j, p in enumerate(pieces) if "%|" in p), default=-1)
    for j, piece in enumerate(pieces):
        if "%|" in piece and j != last_bar and not _glued(piece):
            continue  # a frame the next one redrew
        out += _glued_apart(piece)
    return out


def _glued_apart(piece: str) -> list[str]:
    """A frame, and the record glued behind its closing `]` apart from it, if any."""
    m = _last_end(piece)
    if m is not None and piece[m.end():].strip():
        return [piece[: m.end()], piece[m.end():]]
    return [piece]


def _last_end(piece: str) -> re.Match[str] | None:
    """Where the last bar frame in `piece` ends."""
    found = None
    for found in TQDM_END_RE.finditer(piece):  # noqa: B007 - the last match is the one wanted
        pass
    return found


def _glued(piece: str) -> bool:
    m = _last_end(piece)
    return m is not None and bool(piece[m.end():].strip())


def _proc_role(proc: str | None) -> str:
    if proc and any(k in proc for k in ("VLLM", "vLLM", "vllm", "Inference", "RayWorkerWrapper")):
        return INFERENCE
    return TRAINER


def _body_header(body: str, agent_block: bool) -> Record | None:
    if agent_block:
        # Inside code/output, only a real log record or a strict agent print starts a record.
        if body[:1].isdigit():
            m = LOGURU_RE.match(body)
            if m:
                return Record("loguru", m.group(1), m.group(2), m.group(4), where=m.group(3))
        if AGENT_SAFE_RE.match(body):
            return Record("print", None, None, body)
        return None
    c = body[:1]
    if c.isdigit():
        m = LOGURU_RE.match(body)
        if m:
            return Record("loguru", m.group(1), m.group(2), m.group(4), where=m.group(3))
    elif c == "[":
        m = WRAPPER_RE.match(body)
        if m:
            return Record("wrapper", m.group(1), "INFO", m.group(2))
        if body[1:2].isdigit():
            return generic_header(body)  # DeepSpeed's `[2025-01-18 21:04:10,118] [INFO] …` under a Ray prefix
    elif c == "+":
        stripped = body.lstrip("+")
        if stripped.startswith(" "):
            return Record("shell", None, None, stripped[1:])
    if STATEMENT_RE.match(body):
        return Record("print", None, None, body)
    return generic_header(body)


def _in_agent_block(rec: Record | None) -> bool:
    return rec is not None and rec.message.startswith(("Code execution took", "Timeout error during execute"))


def ray_line(line: str, *, rank_always: bool = False) -> tuple[str | None, str, int]:
    """(the Ray process, the line without Ray's prefix and `[repeated Nx]`, how many copies it
    stands for): `(Worker pid=9) [rank0]:[E302 …` has three layers of prefix. A torchrun rank
    prefix is taken off behind a Ray prefix (the tailer takes it off at a line's start), or
    wherever it starts the body with `rank_always`."""
    proc = None
    body = line
    if line.startswith("("):
        m = RAY_PREFIX_RE.match(line)
        if m:
            proc = m.group(1)
            body = line[m.end() :]
    repeat = 1
    if "[repeated " in body:
        m = REPEATED_RE.search(body)
        if m:
            repeat = 1 + int(m.group(1))  # the line shown plus the N Ray folded into it
            body = body[: m.start()] + body[m.end() :]
    if (proc is not None or rank_always) and body.startswith("[") and "]:" in body[:16]:
        body = RANK_PREFIX_RE.sub("", body, count=1)
    return proc, body, repeat


def header(line: str, pending: Record | None) -> Record | None:
    """The record `line` starts, or None when it continues `pending`: a loguru record or a
    `print` that carries something, behind one Ray prefix or none, read in one match (most of a
    driver log's records: `tests/unit/parsers/test_skyrl_header.py` holds it to the reading step
    by step); any other line, step by step."""
    if "[repeated " not in line:
        m = _FAST_RE.match(line)
        if m is not None:
            proc, time, level, where, message = m.groups()
            if time is not None:
                return Record("loguru", time, level, message, proc, where=where)
            if pending is None or not _in_agent_block(pending):
                # Inside code and its output only the strict forms start a record (`_body_header`).
                return Record("print", None, None, line[m.end():], proc)
    return header_by_steps(line, pending)


def header_by_steps(line: str, pending: Record | None) -> Record | None:
    """`header`, step by step: the Ray prefix, Ray's folds and a rank's prefix off, then the body."""
    proc, body, repeat = ray_line(line)
    same_proc = pending is not None and pending.proc == proc
    rec = _body_header(body, _in_agent_block(pending) and same_proc)
    if rec is None and proc is None and pending is not None and pending.proc is not None:
        # The driver's own stderr (its traceback) after a Ray worker's line: Ray prefixes every
        # line it forwards, so an unprefixed line is another process's record.
        rec = Record("orphan", None, None, body)
    if rec is None and proc is not None:
        if proc == "raylet":
            rec = Record("raylet", None, None, body)
        elif pending is not None and not same_proc:
            # Continuation lines carry their header's prefix; another process's line is its own record.
            rec = Record("print", None, None, body)
    if rec is not None:
        rec.proc = proc
        rec.repeat = repeat
    return rec


