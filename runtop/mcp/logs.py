"""`runtop mcp`'s `logs` tool: the Logs pane's tail as whole records (a traceback whole, as the
pane's Enter shows it), searched, redacted as every face is (docs/mcp.md).

It reads the engine's tail (the newest lines of every log, merged by time): what a person
scrolling the Logs pane sees, and no re-read of the files.
"""

from __future__ import annotations

import re
from typing import Any

from runtop.mcp.runs import Served
from runtop.parsers.hygiene import public
from runtop.state.parts import LogLine, LogRecord

MAX_ENTRIES = 200  # records in one answer
LINE_RE = re.compile(r" line (\d+)$")


def entries(lines: tuple[LogLine, ...] | list[LogLine]) -> list[dict[str, Any]]:
    """The tail's lines as records: the lines a record gave are one entry holding the whole record."""
    out: list[dict[str, Any]] = []
    last: LogRecord | None = None
    for ln in lines:
        rec = ln.record
        if rec is not None and rec is last:
            continue  # the head and tail lines of a record already given whole
        last = rec
        if rec is None:
            out.append({"source": ln.source, "level": ln.level, "time": ln.time, "origin": None, "line": None,
                        "lines": [ln.text], "dropped": 0})
            continue
        m = LINE_RE.search(rec.origin)
        out.append({"source": ln.source, "level": ln.level, "time": ln.time, "origin": rec.origin,
                    "line": int(m.group(1)) if m else None, "lines": list(rec.lines), "dropped": rec.dropped})
    return out


def search(found: list[dict[str, Any]], query: str | None = None, role: str | None = None,
           around_line: int | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The newest `limit` entries of `role` matching `query` (case-insensitive, on the redacted
    text: a secret cannot be found by guessing it); with `around_line`, the entries nearest that
    line of the role's file instead (its record, and those before and after it)."""
    limit = max(1, min(int(limit), MAX_ENTRIES))
    pick = [e for e in found if role is None or e["source"] == role]
    if query:
        q = query.lower()
        pick = [e for e in pick if any(q in public(t).lower() for t in e["lines"])]
    if around_line is None:
        return pick[-limit:]
    numbered = [i for i, e in enumerate(pick) if e["line"] is not None]
    if not numbered:
        return []
    at = min(numbered, key=lambda i: (abs(pick[i]["line"] - around_line), -i))
    start = max(0, at - limit // 2)
    return pick[start:start + limit]


def logs(run: Served, query: str | None = None, role: str | None = None, around_line: int | None = None, limit: int = 20) -> dict[str, Any]:
    from runtop.outputs.report_json import _redact_all

    view = run.view()
    found = entries(view.logs.lines)
    roles = sorted({e["source"] for e in found})
    if role is not None and role not in roles:
        raise LookupError(f"no lines from role {role!r} in the tail; roles: {', '.join(roles) or 'none yet'}")
    picked = search(found, query, role, around_line, limit)
    doc = {"run": run.name, "entries": picked, "matched": len(picked), "roles": roles,
           "scope": f"the newest {len(view.logs.lines)} lines of the run's logs (the Logs pane's tail)"}
    out: dict[str, Any] = _redact_all(doc)
    return out
