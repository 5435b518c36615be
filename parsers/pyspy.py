"""`py-spy dump` output, read (maintainers' first answer to a hang report is "send a
py-spy dump"). Shapes from genuine dumps users posted (huggingface/accelerate#3104,
modelscope/ms-swift#6312, rwth-i6/returnn#1484):

    Process 307: /usr/local/bin/python -u …/sft.py --load … (the command may wrap lines)
    Python v3.11.7 (/usr/bin/python3.11)

    Thread 42 (idle): "MainThread"
        backward (torch/autograd/__init__.py:266)
        training_loop (scripts/fine_tune.py:410)
    Thread 4076 (idle)
    Thread 4079 (active)
        all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)

The first frame under a thread is its innermost. Pure: text in, stacks out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

THREAD_RE = re.compile(r"^Thread (\w+) \((\w+)\)(?::\s*\"(.*)\")?\s*$")
FRAME_RE = re.compile(r"^\s+(\S[^()]*) \(([^()]*)\)\s*$")
# Where a rank waits on the others: the functions a hang report names.
COLLECTIVES = re.compile(
    r"^(all_reduce|all_gather\w*|_?all_to_all\w*|reduce_scatter\w*|broadcast\w*|barrier|monitored_barrier|"
    r"reduce|gather|scatter|send|recv|isend|irecv|wait|synchronize|_allgather_base|_reduce_scatter_base)$"
)
# … in a communication library: `wait (threading.py)` is a thread sleeping, not a rank waiting.
COMM_FILES = re.compile(r"distributed|/comm/|nccl|c10d|collective")


def collective(frame: tuple[str, str]) -> bool:
    return bool(COLLECTIVES.match(frame[0]) and COMM_FILES.search(frame[1]))


@dataclass
class Thread:
    ident: str
    state: str  # idle, active, gil
    name: str | None
    frames: list[tuple[str, str]] = field(default_factory=list)  # (function, file:line), innermost first


@dataclass
class Dump:
    pid: int | None
    threads: list[Thread] = field(default_factory=list)

    def stuck_in(self) -> str | None:
        """Where this process waits: a thread in a collective first (the rank waiting on the
        others), else the main thread's innermost frame, else the first thread's."""
        for t in self.threads:
            if t.frames and collective(t.frames[0]):
                return t.frames[0][0]
        main = next((t for t in self.threads if t.name == "MainThread" and t.frames), None)
        first = main or next((t for t in self.threads if t.frames), None)
        return first.frames[0][0] if first else None


def parse(text: str) -> Dump:
    pid = None
    m = re.search(r"^Process (\d+):", text, re.M)
    if m:
        pid = int(m.group(1))
    dump = Dump(pid)
    current: Thread | None = None
    for line in text.splitlines():
        tm = THREAD_RE.match(line)
        if tm:
            current = Thread(tm.group(1), tm.group(2), tm.group(3))
            dump.threads.append(current)
            continue
        fm = FRAME_RE.match(line)
        if fm and current is not None:
            current.frames.append((fm.group(1), fm.group(2)))
    return dump


def summary(by_role: dict[str, list[Dump]]) -> str:
    """`3 of 4 trainer processes in all_reduce; pid 2210 in save_checkpoint` for each role."""
    parts = []
    for role, dumps in sorted(by_role.items()):
        where = Counter(d.stuck_in() or "?" for d in dumps)
        top, n = where.most_common(1)[0]
        kind = " (a collective)" if any(t.frames and t.frames[0][0] == top and collective(t.frames[0]) for d in dumps for t in d.threads) else ""
        part = f"{n} of {len(dumps)} {role} process(es) in `{top}`{kind}" if len(dumps) > 1 else f"{role} in `{top}`{kind}"
        others = [f"pid {d.pid} in `{d.stuck_in() or '?'}`" for d in dumps if (d.stuck_in() or "?") != top]
        parts.append(part + (f"; {', '.join(others[:3])}" if others else ""))
    return "; ".join(parts)
