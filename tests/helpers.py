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


def skyrl_events_of(text: str | bytes, batch_rollouts: int | None = None) -> list:
    """SkyRL driver-log text through the reader's path: clean, unglue tqdm frames, group, parse."""
    from runtop.parsers import skyrl, skyrl_records

    data = text.encode() if isinstance(text, str) else text
    lines = skyrl_records.split_glued(clean_bytes(data).decode("utf-8", "replace").split("\n"))
    asm = RecordAssembler(skyrl_records.header)
    records = asm.feed(lines) + asm.flush()
    return skyrl.SkyrlParser(batch_rollouts).parse(records)


def of_type(events: list, cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]
