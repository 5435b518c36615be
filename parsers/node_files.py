"""A multi-node run's per-node logs: `trainer/node_2.log`, `node_2_rank1.log` (docs/formats.md).
A node that hangs or dies shows only in its own file, so the rules, the Logs pane's tags and the
culprit a stall names all read the node from the file's name, here."""

from __future__ import annotations

import re

NODE_FILE = re.compile(r"(?:^|/)node_(\d+)(?:_rank(\d+))?\.log$", re.ASCII)


def node_of(path: str) -> tuple[int, int | None] | None:
    """(node, rank or None) of a per-node log's path; None for any other file."""
    m = NODE_FILE.search(path)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None
