"""Text hygiene shared by every log parser: ANSI codes, `\\r` frames, prefixes, numbers.

All functions are pure and total: any input string or bytes gives a result, never
an exception (tests/unit/parsers/test_parsers_properties.py holds them to that).
"""

from __future__ import annotations

import json
import re

from .hygiene import redact as redact  # noqa: F401 - the one redaction, re-exported
from .hygiene import strip_escapes_bytes

# torchrun's per-rank prefix on trainer.log lines: `[trainer0]:`, `[default3]:`, and in genuine
# output `[rank2]: Traceback …` with a space that must go too, or every traceback line reads
# as an indented continuation (docs/formats.md, "What genuine output adds"). Wrappers can add it
# twice (`[rank0]:[rank0]: …`).
RANK_PREFIX = r"(?:\[(?:rank|[A-Za-z_]*)\d{1,6}\]: ?)+"
TORCHRUN_PREFIX_RE_B = re.compile(b"(?m)^" + RANK_PREFIX.encode(), re.ASCII)
# The same after a newline: a literal first byte lets the scan skip at memchr speed, where
# `(?m)^` is tried at every byte (7.7 s a GB of a SkyRL log, whose `epoch [1/1]:` let it run).
_PREFIX_AFTER_NL_RE_B = re.compile(b"\n" + RANK_PREFIX.encode(), re.ASCII)
# The same prefix behind another one (a Ray worker's line), where the chunk pass cannot see it.
RANK_PREFIX_RE = re.compile(RANK_PREFIX, re.ASCII)
# Colour codes whose ESC byte was lost (pasted logs: `[36m(pid=12)[0m`). Stripped only in
# data that carries a reset code, so a `[5m` in plain text is left alone.
BARE_SGR_RE_B = re.compile(rb"\[(?:\d{1,3}(?:;\d{1,3}){0,4})?m", re.ASCII)
# A record glued behind an access-log line (`… HTTP/1.1" 200 OKCRITICAL 11-05 12:03:03 …`) or
# a tqdm frame whose `\r` was lost (`… 350.17it/s]16:43:42    INFO …`): cut before its header.
_LEVEL_HEAD = (
    rb"(?:\([\w.:-]{1,60} pid=\d{1,9}\) )?"
    rb"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \d\d-\d\d \d\d:\d\d:\d\d|:\s)"
    rb"|\d\d:\d\d:\d\d +(?:DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) )"
)
# Each starts with a literal, so the scan runs at memchr speed (a GB backfill pays for it).
GLUED_ACCESS_RE_B = re.compile(rb'(HTTP/\d(?:\.\d)?" \d{3}[ A-Za-z]{0,40}?)(?=' + _LEVEL_HEAD + rb")", re.ASCII)
GLUED_TQDM_RE_B = re.compile(rb"(/(?:s|it)\])(?=" + _LEVEL_HEAD + rb")", re.ASCII)

_DURATION_PART = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(ms|d|h|m|s)(?![a-z])", re.ASCII)
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def strip_rank_prefixes(data: bytes) -> bytes:
    """`TORCHRUN_PREFIX_RE_B.sub(b"", data)`, at the speed of a search for `\\n[`."""
    if data.startswith(b"["):
        m = TORCHRUN_PREFIX_RE_B.match(data)
        if m:
            data = data[m.end() :]
    if b"\n[" in data:
        data = _PREFIX_AFTER_NL_RE_B.sub(b"\n", data)
    return data


def clean_bytes(data: bytes) -> bytes:
    """Strip escape sequences, controls and torchrun prefixes, and turn `\\r` frames into lines.

    Works on whole chunks so the cost is paid at C speed, not once per line.
    tqdm writes `\\r`-separated frames and a record can follow a frame on the
    same physical line: each frame becomes its own line (docs/formats.md).
    """
    # docs/formats.md: loguru, Ray and vLLM write colour codes into files; a hostile line can
    # carry any other escape. None of them is stored.
    data = strip_escapes_bytes(data)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"]:" in data:
        data = strip_rank_prefixes(data)
    if b"[0m" in data or b"[0;0m" in data:
        data = BARE_SGR_RE_B.sub(b"", data)
    if b"HTTP/" in data:
        data = GLUED_ACCESS_RE_B.sub(b"\\1\n", data)
    if b"/s]" in data or b"/it]" in data:
        data = GLUED_TQDM_RE_B.sub(b"\\1\n", data)
    return data


def parse_duration(text: str) -> float | None:
    """Seconds from prime-rl's compact durations: `412ms`, `31.0s`, `1m 18s`, `2h 5m`, `1d 3h`."""
    text = text.strip()
    if not text:
        return None
    total = 0.0
    pos = 0
    matched = False
    for m in _DURATION_PART.finditer(text):
        if text[pos : m.start()].strip():
            return None
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
        matched = True
    if not matched or text[pos:].strip():
        return None
    return total


_NUM_RE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.I | re.ASCII)


def first_number(text: str) -> float | None:
    m = _NUM_RE.search(text)
    if not m:
        return None
    try:
        return float(m.group(0))
    except ValueError:
        return None


_VALUE_START = re.compile(r"\s[-+]?(?:\d|\.\d|nan|inf)", re.I | re.ASCII)


def split_fields(body: str) -> list[tuple[str, str]]:
    """Split ` | `-separated `Key value` / `Key: value` fields into (key, value) pairs.

    The key is everything before the first token that starts like a number (or
    before a colon); pairs are found by content, not position, because every
    release reorders and renames them (docs/formats.md).
    """
    out: list[tuple[str, str]] = []
    for part in body.split("|"):
        part = part.strip()
        if not part:
            continue
        if part[0].isdigit() and parse_duration(part) is not None:  # the unnamed time field: `1m 18s`
            out.append(("", part))
            continue
        if ":" in part:
            key, _, value = part.partition(":")
            if key and not any(ch.isdigit() for ch in key):
                out.append((key.strip(), value.strip()))
                continue
        m = _VALUE_START.search(part)
        if m:
            out.append((part[: m.start()].strip(), part[m.start() :].strip()))
        else:
            out.append(("", part))
    return out


def to_float(value: str) -> float | None:
    """The first number in a field value (`14872 tokens/s`, `87.5%`, `3.00e-06`)."""
    return first_number(value)


# ---- what a log collector wraps each line in -------------------------------------------------
# Docker's json-file driver (`{"log":"…\n","stream":"stderr","time":"…"}`), `docker logs -t` and
# `kubectl logs --timestamps` (`2026-09-14T03:12:00.000000000Z …`), `ts`-style stamps a shell loop
# adds (`[2026-03-12 11:20:07] …`). Decided once a file, from its head: the same wrapper on most lines.
DOCKER = "docker json-file"
ISO_STAMP = "collector timestamps"
BRACKET_STAMP = "bracketed timestamps"
ISO_STAMP_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}) ", re.ASCII)
BRACKET_STAMP_RE = re.compile(r"\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?\] ", re.ASCII)
_ANSI_RE = re.compile(r"\x1b(?:\[[0-9;?]*[A-Za-z])?", re.ASCII)  # the tailer may have taken a bare `[36m` already


def collector_of(lines: list[str]) -> str | None:
    """The wrapper most of the first non-blank lines carry, or None."""
    head = [ln for ln in lines if ln.strip()][:20]
    if len(head) < 3:
        return None
    for form, test in ((DOCKER, lambda ln: ln.startswith('{"log":"')), (ISO_STAMP, ISO_STAMP_RE.match), (BRACKET_STAMP, BRACKET_STAMP_RE.match)):
        if sum(1 for ln in head if test(ln)) >= 0.8 * len(head):
            return form
    return None


def unwrap(lines: list[str], form: str) -> list[str]:
    """Each line as the run wrote it, the collector's wrapper taken off (a line without it kept)."""
    out: list[str] = []
    if form == DOCKER:
        for ln in lines:
            if ln.startswith('{"log":"'):
                try:
                    text = json.loads(ln).get("log")
                except (ValueError, AttributeError):
                    text = None
                if isinstance(text, str):
                    out.extend(_ANSI_RE.sub("", text.rstrip("\n")).split("\n"))
                    continue
            out.append(ln)
        return out
    pattern = ISO_STAMP_RE if form == ISO_STAMP else BRACKET_STAMP_RE
    for ln in lines:
        m = pattern.match(ln)
        out.append(ln[m.end():] if m else ln)
    return out
