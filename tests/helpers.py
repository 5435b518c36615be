from __future__ import annotations

from runtop.parsers.logs import parse_records
from runtop.parsers.records import RecordAssembler
from runtop.parsers.text import clean_bytes


def events_of(text: str | bytes, role: str = "orchestrator") -> list:
    """Run raw log text through the same path the reader uses: clean, group, parse."""
    data = text.encode() if isinstance(text, str) else text
    lines = clean_bytes(data).decode("utf-8", "replace").split("\n")
    asm = RecordAssembler()
    records = asm.feed(lines) + asm.flush()
    return parse_records(records, role)
