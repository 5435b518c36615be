"""Group physical lines into log records: a header line plus its continuation lines.

Tracebacks, pprint dumps, multi-env step lines and vLLM's prefixed multi-line
messages carry no header of their own; they belong to the record before them
(docs/formats.md, "Multi-line records"). A line that matches no header form we know
is a continuation; a continuation with no record before it is an "orphan"
record of its own (a traceback printed to stderr at the top of a file).

`RecordAssembler` is the one stateful piece in `parsers`: it holds the pending
record between calls so that a record split across two reads stays whole. It
does no I/O and never raises.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .numbers import loads

# prime-rl loguru: `14:01:58 SUCCESS Step 1 | …` (level right-aligned to 7); also printed with the
# level in brackets and no time (`[SUCCESS] Step 2 |    9.5s | Reward 0.1972 | …`).
PRIME_BRACKET_RE = re.compile(r"(?:(\d{2}:\d{2}:\d{2})\s+)?\[(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\]\s(.*)", re.S | re.ASCII)
PRIME_RE = re.compile(r"(\d{2}:\d{2}:\d{2})\s+(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s(.*)", re.S | re.ASCII)
# At DEBUG level loguru adds ` [file.py::123]`.
DEBUG_SUFFIX_RE = re.compile(r"\s\[[\w./-]+\.py::\d+\]\s*$", re.ASCII)
# torchrun / glog: `E0821 14:05:23.118000 2210431 torch/distributed/…/api.py:882] failed …`
GLOG_RE = re.compile(r"([IWEF])\d{3,4} (\d{2}:\d{2}:\d{2})\.\d+\s+\d+\s+[^\]]*\]\s?(.*)", re.S | re.ASCII)
# vLLM: `(APIServer pid=2209876) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: …`
PROC_PREFIX_RE = re.compile(r"\(([\w.: -]+?) pid=\d+(?:, ip=[\d.]+)?\)\s?", re.ASCII)
# v1 puts the location in brackets (`[core.py:718]`), v0 did not (`launcher.py:99]`).
VLLM_RE = re.compile(
    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d{2}-\d{2} (\d{2}:\d{2}:\d{2})(?:\.\d+)?\s+(\[[^\]]*\]|[\w./-]+:\d+\])\s?(.*)",
    re.S | re.ASCII,
)
# PyTorch's C++ (c10) log lines, e.g. NCCL's watchdog behind a stripped `[rank0]:` prefix:
# `[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught …`, and the
# older `[E ProcessGroupNCCL.cpp:737] …` (LlamaFactory#6269, OFA#271).
C10_RE = re.compile(r"\[([IWEF])(?:\d{3,4} (\d{2}:\d{2}:\d{2})\.\d+(?: \d+)?)? ?([\w./-]+:\d+)\]\s?(.*)", re.S | re.ASCII)
# DeepSpeed's logger (and others' bracketed stamps): `[2025-01-18 21:04:10,118] [INFO] [logging.py:128:log_dist] …`.
BRACKET_STAMP_RE = re.compile(
    r"\[\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\]\s*\[?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\]?\s?(?:\[[\w./-]{1,80}:\d{1,6}:\w{1,80}\] )?(.*)",
    re.S | re.ASCII
)
# uvicorn inside vLLM: `INFO:     127.0.0.1:41722 - "GET /health HTTP/1.1" 200 OK`
UVICORN_RE = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+(.*)", re.S | re.ASCII)
# stdlib logging (v0.6 env router) and the Rust vllm-router:
# `2026-06-25 14:01:33 - verifiers…EnvRouter - INFO - Active tasks: …`
# `2026-08-21 14:00:03  INFO vllm_router_rs::server: …`
# and `%(asctime)s - %(levelname)s - %(name)s - %(message)s` (open-r1's, TRL's examples'):
# `2025-04-01 10:02:41 - INFO - trl.extras.vllm_client - Server is not up yet.`
STDLIB_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T](\d{2}:\d{2}:\d{2})(?:[.,]\d+)?\s+(?:-\s+\S+\s+-\s+)?(?:-\s+)?"
    r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:-\s+(?:[\w.]{1,80}\s+-\s+)?)?(.*)",
    re.S | re.ASCII,
)

MAX_CONT_HEAD = 40  # continuation lines kept from the start of a record
MAX_CONT_TAIL = 80  # … and from its end (where a traceback names its exception)


@dataclass(slots=True)
class Record:
    """One log record. `fmt` names the header form that matched."""

    fmt: str
    time: str | None
    level: str | None
    message: str
    proc: str | None = None
    cont: list[str] = field(default_factory=list)
    cont_dropped: int = 0
    _tail: list[str] | None = None
    where: str | None = None  # loguru's `module:function:line`, where the format has it
    repeat: int = 1  # Ray's `[repeated Nx across cluster]` folds N more copies into one line
    line: int = 0  # number of the record's first line, counted by the assembler from `line_base`

    def add(self, line: str) -> None:
        if len(self.cont) < MAX_CONT_HEAD:
            self.cont.append(line)
            return
        if self._tail is None:
            self._tail = []
        self._tail.append(line)
        if len(self._tail) > MAX_CONT_TAIL:
            del self._tail[0]
            self.cont_dropped += 1

    def lines(self) -> list[str]:
        """Continuation lines kept (head then tail)."""
        return self.cont + self._tail if self._tail else self.cont


def _json_record(line: str) -> Record | None:
    # prime-rl `--log.json-logging`: {"timestamp", "level", "message", …}
    try:
        obj = loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "message" not in obj or "level" not in obj:
        return None
    ts = obj.get("timestamp")
    time = None
    if isinstance(ts, (int, float)):
        try:
            time = _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%H:%M:%S")
        except (OverflowError, OSError, ValueError):
            time = None
    elif isinstance(ts, str):
        m = re.search(r"(\d{2}:\d{2}:\d{2})", ts)
        time = m.group(1) if m else None
    level = str(obj.get("level", "")).upper() or None
    # A logged exception travels inside the message: its lines are the record's continuation.
    head, *rest = str(obj.get("message", "")).split("\n")
    rec = Record("json", time, level, head)
    for line in rest:
        rec.add(line)
    return rec


def match_header(line: str) -> Record | None:
    """The record a header line starts, or None for a continuation line.

    Dispatches on the first character so that the common continuation line
    costs no regex at all.
    """
    if not line:
        return None
    c = line[0]
    if c.isdigit():
        if "[" in line[:12]:
            m = PRIME_BRACKET_RE.match(line)
            if m:
                return Record("prime", m.group(1), m.group(2), m.group(3))
        m = PRIME_RE.match(line)
        if m:
            msg = m.group(3)
            if m.group(2) == "DEBUG" and "::" in msg:
                msg = DEBUG_SUFFIX_RE.sub("", msg)
            return Record("prime", m.group(1), m.group(2), msg)
        m = STDLIB_RE.match(line)
        if m:
            level = "WARNING" if m.group(2) == "WARN" else m.group(2)
            return Record("stdlib", m.group(1), level, m.group(3))
        return None
    if c == "(":
        m = PROC_PREFIX_RE.match(line)
        if not m:
            return None
        rest = line[m.end() :]
        rec = _vllm_header(rest)
        if rec is not None:
            rec.proc = m.group(1)
        return rec
    if c in "IWEF" and len(line) > 5 and line[1].isdigit():
        m = GLOG_RE.match(line)
        if m:
            level = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}[m.group(1)]
            return Record("glog", m.group(2), level, m.group(3))
        return None
    if c in "DIWEC":
        return _vllm_header(line)
    if c == "{" and '"message"' in line:
        return _json_record(line)
    if c == "[" and len(line) > 4 and line[1] in "IWEF":
        m = C10_RE.match(line)
        if m:
            level = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}[m.group(1)]
            return Record("c10", m.group(2), level, m.group(4), where=m.group(3))
    if c == "[" and line[1:2] in ("T", "D", "I", "S", "W", "E", "C"):
        m = PRIME_BRACKET_RE.match(line)
        if m:
            return Record("prime", m.group(1), m.group(2), m.group(3))
    if c == "[" and line[1:2].isdigit():
        m = BRACKET_STAMP_RE.match(line)
        if m:
            return Record("stdlib", m.group(1), "WARNING" if m.group(2) == "WARN" else m.group(2), m.group(3))
    return None


def _vllm_header(rest: str) -> Record | None:
    m = VLLM_RE.match(rest)
    if m:
        return Record("vllm", m.group(2), m.group(1), m.group(4), where=m.group(3).strip("[]"))
    m = UVICORN_RE.match(rest)
    if m:
        return Record("uvicorn", None, m.group(1), m.group(2))
    return None


def strip_proc_prefix(line: str) -> str:
    if line.startswith("("):
        m = PROC_PREFIX_RE.match(line)
        if m:
            return line[m.end() :]
    return line


_TB_HEADS = ("Traceback (most recent", "During handling of the above", "The above exception was")


def continues(pending: Record, rec: Record) -> bool:
    """True when `rec` is another physical line of `pending`'s message.

    vLLM repeats its whole prefix on every line of a multi-line message
    (`(EngineCore_DP0 pid=812) ERROR 09-15 19:05:31 [core.py:718]   File "…"`), so each
    line of a traceback looks like a record of its own. One call writes one prefix: the
    same process, level, location and second. Inside that, a line joins while the
    traceback is open (its last line indented or a traceback heading); after the
    exception line, a new message from the same place is a record of its own.
    """
    if rec.fmt != "vllm" or pending.fmt != "vllm" or rec.where is None:
        return False
    if rec.where != pending.where or rec.proc != pending.proc or rec.level != pending.level or rec.time != pending.time:
        return False
    msg = rec.message
    if msg[:1].isspace() or msg.startswith(_TB_HEADS):
        return True
    lines = pending.lines()
    if not lines:
        return False
    last = lines[-1]
    return last[:1].isspace() or last.startswith(_TB_HEADS)


# Records that never carry a traceback of their own: one that follows them was printed to
# stderr by a dying process (torchrun's `[rankN]: Traceback …` after an INFO line).
_NO_TRACEBACK_FMTS = ("prime", "glog", "stdlib", "json", "c10", "vllm", "uvicorn")


def _headless_start(line: str, pending: Record) -> Record | None:
    """A line without a header that still starts a record of its own.

    - another process's line (`(APIServer pid=3001) Traceback …` after EngineCore's
      record): continuation lines carry their own record's prefix;
    - a traceback heading after an INFO/SUCCESS record: loguru attaches tracebacks to the
      ERROR record that logs them, so one after an INFO line is a stderr dump.
    """
    if line.startswith("("):
        m = PROC_PREFIX_RE.match(line)
        if m and pending.proc is not None and m.group(1) != pending.proc:
            return Record("orphan", None, None, line[m.end() :], proc=m.group(1))
        return None
    if (
        line.startswith("Traceback (most recent call last)")
        and pending.fmt in _NO_TRACEBACK_FMTS
        and pending.level not in ("ERROR", "CRITICAL", "WARNING")
    ):
        return Record("orphan", None, None, line)
    return None


HeaderFn = Callable[[str, "Record | None"], "Record | None"]


def _default_header(line: str, pending: Record | None) -> Record | None:
    return match_header(line)


class RecordAssembler:
    """Feeds lines, returns finished records. Holds one pending record.

    `header` decides which lines start a record; it sees the pending record because
    some formats decide by context (SkyRL: a line from another Ray process starts a
    new record even without a header of its own).
    """

    __slots__ = ("_pending", "_header", "line_base")

    def __init__(self, header: HeaderFn | None = None) -> None:
        self._pending: Record | None = None
        self._header = header or _default_header
        # The number of the next line fed; the reader sets it from the tailer's count so
        # that a record that cannot be parsed is named by its line.
        self.line_base = 1

    def feed(self, lines: list[str]) -> list[Record]:
        out: list[Record] = []
        pending = self._pending
        header = self._header
        generic = header is _default_header  # a dialect's header function decides this itself
        base = self.line_base
        for i, line in enumerate(lines):
            rec = header(line, pending)
            if rec is None and pending is not None and generic:
                rec = _headless_start(line, pending)
            if rec is not None and pending is not None and continues(pending, rec):
                pending.add(rec.message)
                continue
            if rec is not None:
                rec.line = base + i
                if pending is not None:
                    out.append(pending)
                pending = rec
                continue
            if not line.strip():
                # Blank lines carry nothing; inside a record they are kept out of the bound.
                continue
            line = strip_proc_prefix(line)
            if pending is None:
                pending = Record("orphan", None, None, line, line=base + i)
            else:
                pending.add(line)
        self._pending = pending
        self.line_base = base + len(lines)
        return out

    def pending(self) -> bool:
        """True while a record is held back for its continuation lines."""
        return self._pending is not None

    def flush(self) -> list[Record]:
        """Hand over the pending record (at the end of a read: the writer is idle).

        A process that dies writes its last record in one go, so flushing at the
        end of each read does not split it; continuation lines that do arrive
        later become an orphan record, which the parsers still read.
        """
        pending, self._pending = self._pending, None
        return [pending] if pending is not None else []
