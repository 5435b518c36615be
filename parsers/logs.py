"""One entry point for log records: route each to the parser of its format and role."""

from __future__ import annotations

from . import primerl, vllm
from .events import INFERENCE, Event, Unparsed
from .records import Record


def parse_records(records: list[Record], role: str) -> list[Event]:
    out: list[Event] = []
    for rec in records:
        try:
            if rec.fmt in ("vllm", "uvicorn") or (role == INFERENCE and rec.fmt in ("orphan", "stdlib")):
                out.extend(vllm.parse_record(rec))
            else:
                out.extend(primerl.parse_record(rec, role))
        except Exception as e:  # noqa: BLE001 - one bad record is counted and named, the rest is read
            out.append(unparsed(rec, e))
    return out


def unparsed(rec: Record, e: BaseException) -> Unparsed:
    return Unparsed(rec.line, f"{type(e).__name__}: {str(e)[:120]}")
