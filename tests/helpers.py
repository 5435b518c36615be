from __future__ import annotations

import os

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
    lines = skyrl_records.split_frames(clean_bytes(data).decode("utf-8", "replace").split("\n"))
    asm = RecordAssembler(skyrl_records.header)
    records = asm.feed(lines) + asm.flush()
    return skyrl.SkyrlParser(batch_rollouts).parse(records)


def of_type(events: list, cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


def long_orchestrator_log(tmp_path, steps: int = 3000) -> str:
    """A run dir whose orchestrator log (~700 KB) is longer than a 64 KB tail: read tail first,
    then backfilled. Returns the run dir."""
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "logs"), exist_ok=True)
    with open(os.path.join(root, "logs", "orchestrator.log"), "w") as f:
        for step in range(1, steps + 1):
            f.write("14:00:00    INFO Train batch 64/128 (50.0%) (+16 buffered); 12 inflight episodes (train=12, eval=0)\n" * 5)
            f.write(f"14:00:00 SUCCESS Step {step} |   31.0s | Reward 0.5 | Trainable 1/2 (50.0%)\n")
    return root
