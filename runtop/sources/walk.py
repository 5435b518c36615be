"""Walk a directory tree boundedly: iteratively, to a depth and a number of entries.

`os.walk` recurses (Python 3.11): a checkpoint holding a directory 1000 levels deep took every
command down with a RecursionError (exit 70). A walk here keeps its own stack, never follows a
link, stops descending past `max_depth` and stops looking past `max_entries`, and says when it
stopped short (`truncated`), so a listing that was cut is not taken for the whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Deeper than any checkpoint layout nests (a sharded save is 4-6 levels).
MAX_DEPTH = 32
MAX_ENTRIES = 20_000


@dataclass(frozen=True, slots=True)
class Found:
    """One file (anything not a directory) met on the walk."""

    entry: os.DirEntry[str]
    rel: str  # relative to the walk's root, `/`-separated

    @property
    def path(self) -> str:
        return self.entry.path

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def size(self) -> int:
        """`lstat` size (a link counts as itself, never what it points at); 0 when it is gone."""
        try:
            return self.entry.stat(follow_symlinks=False).st_size
        except OSError:
            return 0


class Walk:
    """`for f in Walk(root)`: every file under `root`, at most `max_entries` entries looked at
    and `max_depth` directories down. `prune(name)` True: that directory is not entered."""

    def __init__(
        self, root: str, *, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES, prune: Callable[[str], bool] | None = None
    ) -> None:
        self.root, self.max_depth, self.max_entries, self.prune = root, max_depth, max_entries, prune
        self.seen = 0
        self.truncated = False  # stopped short: too deep, or too many entries

    def __iter__(self) -> Iterator[Found]:
        stack: list[tuple[str, str, int]] = [(self.root, "", 0)]
        while stack:
            path, rel, depth = stack.pop()
            try:
                it = os.scandir(path)
            except OSError:
                continue
            with it:
                # Entries one at a time: a directory of 20k env logs is not listed whole for 5000.
                for e in it:
                    self.seen += 1
                    if self.seen > self.max_entries:
                        self.truncated = True
                        return
                    sub = f"{rel}/{e.name}" if rel else e.name
                    try:
                        is_dir = e.is_dir(follow_symlinks=False)
                    except OSError:
                        continue
                    if not is_dir:
                        yield Found(e, sub)
                    elif self.prune is not None and self.prune(e.name):
                        continue
                    elif depth + 1 >= self.max_depth:
                        self.truncated = True
                    else:
                        stack.append((e.path, sub, depth + 1))


def tree_size(root: str) -> int:
    """The bytes of the files under `root` (bounded as `Walk` is)."""
    return sum(f.size for f in Walk(root))
