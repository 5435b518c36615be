"""The blocks the step history is kept in (`runtop.state.columns`; docs/reading.md, "History in
columns"): up to ~2 x BLOCK consecutive rows, by step, each side's numbers one `array('d')` a
name, and what reads and writes one value of them.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING

BLOCK = 1024
# A quiet NaN with a payload (`float('nan')` has none): "no value" in a column.
_MISSING_BYTES = struct.pack("<Q", 0x7FF8_0000_0000_0BAD)
MISSING: float = struct.unpack("<d", _MISSING_BYTES)[0]

# The four sides of a row, in the order a block keeps them.
TRAINER, ROLLOUT, PHASES, EXTRA = 0, 1, 2, 3


def is_missing(v: float) -> bool:
    return v != v and struct.pack("<d", v) == _MISSING_BYTES


class Block:
    """Up to ~2 x BLOCK consecutive rows, by step."""

    __slots__ = ("steps", "attempts", "origins", "sides", "sparse", "owner")

    def __init__(self, owner: object) -> None:
        self.steps = array("q")
        self.attempts = array("l")
        self.origins = array("l")  # an index into the history's origin dicts; -1: none yet
        self.sides: tuple[dict[str, array[float]], ...] = ({}, {}, {}, {})
        self.sparse: dict[int, dict[str, float]] | None = None
        self.owner = owner

    def copy(self, owner: object) -> Block:
        b = Block(owner)
        b.steps, b.attempts, b.origins = array("q", self.steps), array("l", self.attempts), array("l", self.origins)
        b.sides = tuple({name: array("d", col) for name, col in side.items()} for side in self.sides)
        b.sparse = {k: dict(v) for k, v in self.sparse.items()} if self.sparse else None
        return b

    def insert(self, i: int, step: int, attempt: int) -> None:
        self.steps.insert(i, step)
        self.attempts.insert(i, attempt)
        self.origins.insert(i, -1)
        for side in self.sides:
            for col in side.values():
                if len(col) > i:
                    col.insert(i, MISSING)

    def delete(self, i: int) -> None:
        step = self.steps[i]
        del self.steps[i]
        del self.attempts[i]
        del self.origins[i]
        for side in self.sides:
            for col in side.values():
                if len(col) > i:
                    del col[i]
        if self.sparse:
            self.sparse.pop(step, None)

    def clear_row(self, i: int) -> None:
        """Every value of row `i` gone (a step an attempt redoes starts empty)."""
        self.origins[i] = -1
        for side in self.sides:
            for col in side.values():
                if len(col) > i:
                    col[i] = MISSING
        if self.sparse:
            self.sparse.pop(self.steps[i], None)

    def split(self, at: int, owner: object) -> Block:
        """Move this block's rows from `at` on into a new block, returned."""
        b = Block(owner)
        b.steps, b.attempts, b.origins = self.steps[at:], self.attempts[at:], self.origins[at:]
        del self.steps[at:], self.attempts[at:], self.origins[at:]
        for mine, theirs in zip(self.sides, b.sides):
            for name, col in mine.items():
                if len(col) > at:
                    theirs[name] = col[at:]
                    del col[at:]
        if self.sparse and b.steps:
            b.sparse = {k: v for k, v in self.sparse.items() if k >= b.steps[0]} or None
            self.sparse = {k: v for k, v in self.sparse.items() if k < b.steps[0]} or None
        return b


def value_at(col: array[float] | None, i: int) -> float | None:
    if col is None or i >= len(col):
        return None
    v = col[i]
    if v != v and struct.pack("<d", v) == _MISSING_BYTES:
        return None
    return v


def side_dict(side: dict[str, array[float]], i: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, col in side.items():
        if i < len(col):
            v = col[i]
            if v == v or struct.pack("<d", v) != _MISSING_BYTES:
                out[name] = v
    return out


def set_value(col: array[float], i: int, v: float) -> None:
    n = len(col)
    if i < n:
        col[i] = v
        return
    if i > n:
        col.frombytes(_MISSING_BYTES * (i - n))
    col.append(v)


class ColumnWrites:
    """The step history's writes of a batch of rows column by column (`runtop.state.steps`'s
    `fold_steps`): rows appended after the last, or written over the last rows. Mixed into
    `StepHistory`, whose attributes these are."""

    if TYPE_CHECKING:
        _blocks: list[Block]
        _firsts: list[int]
        _n: int
        _token: object
        _keys: list[int] | None
        _extra_names: set[str]

        def _own(self, bi: int) -> Block: ...

    def appends(self, steps: list[int]) -> bool:
        """`steps` rise, and all come after the last row: they can be appended as they are."""
        if self._blocks and steps[0] <= self._blocks[-1].steps[-1]:
            return False
        return len(steps) == 1 or all(a < b for a, b in zip(steps, steps[1:]))


    def append_rows(self, steps: list[int], attempt: int, side: int, values: Mapping[str, list[float]], phases: Mapping[str, list[float]],
                    extra: Mapping[str, list[float]], oid: int) -> None:
        """New rows after the last (`appends(steps)`), one column at a time; `oid`: their origin
        dict's id (-1: none)."""
        if extra:
            self._extra_names.update(extra)
        pos, total = 0, len(steps)
        while pos < total:
            blocks = self._blocks
            if not blocks or len(blocks[-1].steps) >= BLOCK:
                blocks.append(Block(self._token))
                self._firsts.append(steps[pos])
            blk = blocks[-1]
            if blk.owner is not self._token:
                blk = self._own(len(blocks) - 1)
            base = len(blk.steps)
            n = min(BLOCK - base, total - pos)
            whole = n == total
            blk.steps.extend(steps if whole else steps[pos : pos + n])
            blk.attempts.extend([attempt] * n)
            blk.origins.extend([oid] * n)
            for own, given in ((blk.sides[side], values), (blk.sides[PHASES], phases), (blk.sides[EXTRA], extra)):
                for name, vals in given.items():
                    col = own.get(name)
                    if col is None:
                        col = own[name] = array("d")
                    if len(col) < base:
                        col.frombytes(_MISSING_BYTES * (base - len(col)))
                    col.extend(vals if whole else vals[pos : pos + n])
            pos += n
        self._n += len(steps)
        self._keys = None

    def tail(self, steps: list[int], attempt: int) -> list[tuple[Block, int, int]] | None:
        """Where `steps` are, when they are this history's last rows, in order and all of
        `attempt`: (block index, first row, rows) from the first block on; else None."""
        n = len(steps)
        if n > self._n or not self._blocks or self._blocks[-1].steps[-1] != steps[-1]:
            return None
        parts: list[tuple[int, int, int]] = []
        left = n
        bi = len(self._blocks) - 1
        while left:
            blk = self._blocks[bi]
            take = min(left, len(blk.steps))
            parts.append((bi, len(blk.steps) - take, take))
            left -= take
            bi -= 1
        parts.reverse()
        got: list[int] = []
        for bi, start, take in parts:
            blk = self._blocks[bi]
            got.extend(blk.steps[start : start + take])
            if any(a != attempt for a in blk.attempts[start : start + take]):
                return None
        if got != steps:
            return None
        return [(self._own(bi), start, take) for bi, start, take in parts]

    def fill(self, where: list[tuple[Block, int, int]], side: int, values: Mapping[str, list[float]], phases: Mapping[str, list[float]],
             extra: Mapping[str, list[float]], origins: dict[int, int]) -> None:
        """Write columns over rows that are there (`tail`): each name's values over its rows,
        each row's origin id mapped through `origins`."""
        if extra:
            self._extra_names.update(extra)
        pos = 0
        for blk, start, take in where:
            for own, given in ((blk.sides[side], values), (blk.sides[PHASES], phases), (blk.sides[EXTRA], extra)):
                for name, vals in given.items():
                    col = own.get(name)
                    if col is None:
                        col = own[name] = array("d")
                    if len(col) < start + take:
                        col.frombytes(_MISSING_BYTES * (start + take - len(col)))
                    col[start : start + take] = array("d", vals[pos : pos + take])
            if origins:
                o = blk.origins
                for i in range(start, start + take):
                    o[i] = origins[o[i]]
            pos += take
