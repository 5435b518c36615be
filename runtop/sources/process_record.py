"""`RUN/.runtop/processes.json`: the run's processes as a runtop last saw them alive, so a
later `runtop check` can tell a run that vanished from one it never saw (docs/reading.md,
"A run that vanishes"). The file is the run dir's, so untrusted: every field is checked,
and a record is only believed on the host that wrote it, for processes that are gone."""

from __future__ import annotations

import math
from typing import TypeGuard

import psutil

from runtop.sources.lifetimes import MAX_KEPT, ProcessRecord, Seen
from runtop.sources.trust import read_json
from runtop.sources.writes import replace_json

NAME = "processes.json"


def save(run_root: str, record: ProcessRecord) -> bool:
    return replace_json(run_root, NAME, {
        "host": record.host, "alive_at": record.alive_at, "attempt": record.attempt, "gone_at": record.gone_at,
        "processes": [{"pid": s.pid, "create_time": s.create_time, "role": s.role, "title": s.title} for s in record.processes],
    })


def load(run_root: str) -> ProcessRecord | None:
    """The record, or None where there is none or it does not hold together."""
    data = read_json(run_root, NAME)
    if not isinstance(data, dict):
        return None
    host, alive_at, attempt, gone_at = data.get("host"), data.get("alive_at"), data.get("attempt"), data.get("gone_at")
    procs = data.get("processes")
    if not (isinstance(host, str) and _time(alive_at) and isinstance(attempt, int) and isinstance(procs, list)):
        return None
    if gone_at is not None and not _time(gone_at):
        return None
    seen = []
    for p in procs[:MAX_KEPT]:
        if not isinstance(p, dict):
            return None
        pid, ctime, role, title = p.get("pid"), p.get("create_time"), p.get("role"), p.get("title")
        if not (isinstance(pid, int) and pid > 0 and _time(ctime) and (role is None or isinstance(role, str)) and isinstance(title, str)):
            return None
        seen.append(Seen(pid, float(ctime), role[:40] if role else None, title[:200]))
    if not seen:
        return None
    return ProcessRecord(host[:255], float(alive_at), tuple(seen), attempt, float(gone_at) if gone_at is not None else None)


def still_alive(record: ProcessRecord) -> int:
    """How many of the recorded processes still exist here (the same PID and start time)."""
    n = 0
    for s in record.processes:
        try:
            if abs(psutil.Process(s.pid).create_time() - s.create_time) < 0.01:
                n += 1
        except psutil.Error:
            continue
    return n


def _time(x: object) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
