"""What one thread hands another through a `queue.SimpleQueue`, taken without waiting."""

from __future__ import annotations

import queue
from typing import TypeVar

T = TypeVar("T")


def drain(q: queue.SimpleQueue[T]) -> list[T]:
    """Everything queued now, oldest first; an empty list when nothing is."""
    out: list[T] = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
