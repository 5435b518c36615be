"""The step history in columns (docs/reading.md, "History in columns"): one typed array per
metric, a row built only where a pane, a rule or the JSON asks for one.

A week-long run holds 200k steps. As one object a row with its dicts they cost 500 bytes to a
kilobyte each; here a step costs its number, its attempt, the id of its pooled origin dict
and 8 bytes a metric it has. Rows are kept in step order, in blocks of `BLOCK` rows: each
block holds a `steps` array, an `attempts` array, an `origins` array and, per side (the
trainer's numbers, the rollout side's, phases, extras), one `array('d')` a name. A column may
be shorter than its block: the rows past its end have no value there. A missing value inside
a column is `MISSING`, a NaN with a payload no parser writes (a logged `nan` stays a number).

Extras past `MAX_EXTRA_COLUMNS` names (a reader keeping every unknown number under its own
name) go to a block's sparse map, by step.

A frozen copy (`frozen`, what a published view holds) shares every block; the history that
goes on being written copies a block before its first write to it after a freeze, so a view
never sees a later write and a 100k-step run is not copied at every poll.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator, Mapping

from runtop.state.blocks import BLOCK, EXTRA, PHASES, ROLLOUT, TRAINER, Block, ColumnWrites, set_value, side_dict, value_at
from runtop.state.parts import UNWRITTEN, StepRow

__all__ = ["BLOCK", "EXTRA", "PHASES", "ROLLOUT", "TRAINER", "Block", "StepHistory", "set_value", "value_at"]

MAX_EXTRA_COLUMNS = 256
MAX_ROW_CACHE = 4096  # rows a frozen history keeps built (the panes ask for the same ones)


class StepHistory(ColumnWrites, Mapping[int, StepRow]):
    """Every step row of a run, in columns, by step. Read as a mapping of step → `StepRow`
    (each built when asked: a snapshot, never written back); written through the methods below
    (`runtop.state.steps` holds the rules of what wins)."""

    def __init__(self) -> None:
        self._blocks: list[Block] = []
        self._firsts: list[int] = []  # each block's first step
        self._n = 0
        self._token: object = object()  # blocks owned by this token are written in place
        self.origin_dicts: list[dict[str, str]] = []  # pooled: one per distinct content, never written in place
        self._origin_ids: dict[tuple[tuple[str, str], ...], int] = {}
        self.shapes: dict[tuple[str, ...], int] = {}  # a batch's (role, origin, names) → its rows' origin id
        self._extra_names: set[str] = set()
        self._keys: list[int] | None = None
        self._cache: dict[int, StepRow] | None = None  # a frozen history's rows, built once

    # ---- reading --------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        for blk in self._blocks:
            yield from blk.steps

    def __contains__(self, step: object) -> bool:
        return isinstance(step, int) and self._find(step) is not None

    def __getitem__(self, step: int) -> StepRow:
        cache = self._cache
        if cache is not None and (row := cache.get(step)) is not None:
            return row
        at = self._find(step) if isinstance(step, int) else None
        if at is None:
            raise KeyError(step)
        return self._row(self._blocks[at[0]], at[1])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepHistory):
            return self._n == other._n and all(a == b for a, b in zip(self.rows(), other.rows()))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepHistory({self._n} steps)"

    def keys_list(self) -> list[int]:
        """The steps in order (do not mutate: shared until the next write)."""
        if self._keys is None:
            keys: list[int] = []
            for blk in self._blocks:
                keys.extend(blk.steps)
            self._keys = keys
        return self._keys

    def rows(self, last: int | None = None) -> list[StepRow]:
        """The rows in step order; the newest `last` of them when given."""
        want = self._n if last is None else max(0, min(last, self._n))
        picked: list[tuple[Block, int]] = []  # newest first
        for blk in reversed(self._blocks):
            if len(picked) >= want:
                break
            n = len(blk.steps)
            picked.extend((blk, i) for i in range(n - 1, max(-1, n - 1 - (want - len(picked))), -1))
        picked.reverse()
        return [self._row(blk, i) for blk, i in picked]

    def series(self, side: int, name: str, last: int, attempt: int | None = None) -> list[tuple[int, float]]:
        """(step, value) of one side's column over the newest `last` rows (of them, those of
        `attempt` when given, with a value), oldest first: what `rows(last)` and each row's value
        give, read from the columns without building a row (the rules ask at every poll)."""
        out: list[tuple[int, float]] = []
        left = max(0, min(last, self._n))
        for blk in reversed(self._blocks):
            if left <= 0:
                break
            n = len(blk.steps)
            col = blk.sides[side].get(name)
            for i in range(n - 1, max(-1, n - 1 - left), -1):
                if attempt is None or blk.attempts[i] == attempt:
                    v = value_at(col, i)
                    if v is not None:
                        out.append((blk.steps[i], v))
            left -= n
        out.reverse()
        return out

    def _row(self, blk: Block, i: int) -> StepRow:
        cache = self._cache
        if cache is None:
            return self._build(blk, i)
        step = blk.steps[i]
        row = cache.get(step)
        if row is None:
            row = self._build(blk, i)
            if len(cache) < MAX_ROW_CACHE:
                cache[step] = row
        return row

    def last(self) -> StepRow | None:
        if not self._n:
            return None
        blk = self._blocks[-1]
        return self._row(blk, len(blk.steps) - 1)

    def attempt_of(self, step: int) -> int | None:
        at = self._find(step)
        return None if at is None else self._blocks[at[0]].attempts[at[1]]

    def any_of_attempt(self, attempt: int) -> bool:
        return any(attempt in blk.attempts for blk in self._blocks)

    def first_step(self) -> int | None:
        return self._firsts[0] if self._firsts else None

    def last_step(self) -> int | None:
        return self._blocks[-1].steps[-1] if self._blocks else None

    def _find(self, step: int) -> tuple[int, int] | None:
        if not self._blocks:
            return None
        last = self._blocks[-1]
        if step == last.steps[-1]:
            return len(self._blocks) - 1, len(last.steps) - 1
        bi = bisect.bisect_right(self._firsts, step) - 1
        if bi < 0:
            return None
        steps = self._blocks[bi].steps
        i = bisect.bisect_left(steps, step)
        if i < len(steps) and steps[i] == step:
            return bi, i
        return None

    def row_at(self, blk: Block, i: int) -> StepRow:
        """Row `i` of `blk` as it is now (a snapshot)."""
        return self._build(blk, i)

    @staticmethod
    def new_column() -> array[float]:
        return array("d")

    def _build(self, blk: Block, i: int) -> StepRow:
        t, r, p, x = (side_dict(side, i) if side else {} for side in blk.sides)
        step = blk.steps[i]
        if blk.sparse and step in blk.sparse:
            x = {**x, **blk.sparse[step]}
        oid = blk.origins[i]
        return StepRow(step, blk.attempts[i], t or UNWRITTEN, r or UNWRITTEN, self.origin_dicts[oid] if oid >= 0 else UNWRITTEN,
                       p or UNWRITTEN, x or UNWRITTEN)

    # ---- freezing -------------------------------------------------------
    def frozen(self) -> StepHistory:
        """A copy nobody writes (a published view's): it shares every block, and this history
        copies a block before it next writes to it."""
        h = StepHistory.__new__(StepHistory)
        h._blocks, h._firsts, h._n = list(self._blocks), list(self._firsts), self._n
        h._token = object()
        h.origin_dicts = self.origin_dicts  # append-only: the frozen rows name only ids that exist
        h._origin_ids, h._extra_names, h.shapes = {}, set(), {}
        h._keys = self._keys  # replaced, never changed in place
        h._cache = {}
        self._token = object()  # every block is shared from now on
        return h

    def blocks(self) -> list[Block]:
        """The blocks, read only (tests: what a frozen copy shares)."""
        return self._blocks

    # ---- writing ----------------------------------------------------------
    def slot(self, step: int, attempt: int) -> tuple[Block, int, bool]:
        """The writable row of `step` (made with `attempt` where there is none): (block, index,
        whether it is new)."""
        at = self._find(step)
        if at is not None:
            bi, i = at
            return self._own(bi), i, False
        self._keys = None
        self._n += 1
        blocks = self._blocks
        if not blocks or step > blocks[-1].steps[-1]:
            if not blocks or len(blocks[-1].steps) >= BLOCK:
                blk = Block(self._token)
                blocks.append(blk)
                self._firsts.append(step)
            blk = self._own(len(blocks) - 1)
            blk.insert(len(blk.steps), step, attempt)
            return blk, len(blk.steps) - 1, True
        bi = max(0, bisect.bisect_right(self._firsts, step) - 1)
        blk = self._own(bi)
        i = bisect.bisect_left(blk.steps, step)
        blk.insert(i, step, attempt)
        if i == 0:
            self._firsts[bi] = step
        if len(blk.steps) >= 2 * BLOCK:
            upper = blk.split(len(blk.steps) // 2, self._token)
            blocks.insert(bi + 1, upper)
            self._firsts.insert(bi + 1, upper.steps[0])
            if i >= len(blk.steps):
                return upper, i - len(blk.steps), True
        return blk, i, True

    def remove(self, step: int) -> StepRow | None:
        """Take `step`'s row out (its last reading returned)."""
        at = self._find(step)
        if at is None:
            return None
        bi, i = at
        blk = self._own(bi)
        row = self._build(blk, i)
        blk.delete(i)
        self._n -= 1
        self._keys = None
        if not blk.steps:
            del self._blocks[bi], self._firsts[bi]
        elif i == 0:
            self._firsts[bi] = blk.steps[0]
        return row

    def room_for_extras(self, names: Mapping[str, object]) -> bool:
        return not names or len(self._extra_names) + sum(1 for n in names if n not in self._extra_names) <= MAX_EXTRA_COLUMNS

    def restart_row(self, blk: Block, i: int, attempt: int) -> None:
        blk.clear_row(i)
        blk.attempts[i] = attempt

    def origin_id(self, mapping: dict[str, str]) -> int:
        key = tuple(mapping.items())
        oid = self._origin_ids.get(key)
        if oid is None:
            oid = len(self.origin_dicts)
            self.origin_dicts.append(mapping)
            self._origin_ids[key] = oid
        return oid

    def origin_of(self, blk: Block, i: int) -> dict[str, str]:
        oid = blk.origins[i]
        return self.origin_dicts[oid] if oid >= 0 else UNWRITTEN

    def put_extra(self, blk: Block, i: int, name: str, v: float) -> None:
        side = blk.sides[EXTRA]
        col = side.get(name)
        if col is None:
            if name not in self._extra_names and len(self._extra_names) >= MAX_EXTRA_COLUMNS:
                if blk.sparse is None:
                    blk.sparse = {}
                blk.sparse.setdefault(blk.steps[i], {})[name] = v
                return
            self._extra_names.add(name)
            col = side[name] = array("d")
        set_value(col, i, v)

    def place(self, rows: list[StepRow]) -> None:
        """Rows read elsewhere (the history behind a live tail), each put whole at its step, in
        step order. Rows that all fall in one gap of this history (the backfill's, below the
        tail's first step) are built into blocks of their own and spliced in."""
        if not rows:
            return
        if self._fits_gap(rows):
            self._splice(rows)
            return
        for row in rows:
            blk, i, new = self.slot(row.step, row.attempt)
            if not new:
                blk.clear_row(i)
                blk.attempts[i] = row.attempt
            self._fill(blk, i, row)

    def _fill(self, blk: Block, i: int, row: StepRow) -> None:
        for side, values in zip(blk.sides, (row.trainer, row.rollout, row.phases_s)):
            for name, v in values.items():
                col = side.get(name)
                if col is None:
                    col = side[name] = array("d")
                set_value(col, i, v)
        for name, v in row.extra.items():
            self.put_extra(blk, i, name, v)
        blk.origins[i] = self.origin_id(row.origin) if row.origin else -1

    def _fits_gap(self, rows: list[StepRow]) -> bool:
        first, last = rows[0].step, rows[-1].step
        if any(b.step <= a.step for a, b in zip(rows, rows[1:])):
            return False
        if not self._blocks:
            return True
        bi = bisect.bisect_right(self._firsts, first) - 1
        if bi < 0:
            return last < self._firsts[0]
        steps = self._blocks[bi].steps
        i = bisect.bisect_left(steps, first)
        if i < len(steps):
            return steps[i] > last
        return bi + 1 >= len(self._blocks) or self._firsts[bi + 1] > last

    def _splice(self, rows: list[StepRow]) -> None:
        fresh: list[Block] = []
        for start in range(0, len(rows), BLOCK):
            blk = Block(self._token)
            for i, row in enumerate(rows[start : start + BLOCK]):
                blk.insert(i, row.step, row.attempt)
                self._fill(blk, i, row)
            fresh.append(blk)
        at = bisect.bisect_right(self._firsts, rows[0].step)  # the first block after the gap, or one to cut
        if at > 0:
            cut = self._own(at - 1)
            i = bisect.bisect_left(cut.steps, rows[0].step)
            if i < len(cut.steps):  # the gap is inside a block: its upper rows become one of their own
                fresh.append(cut.split(i, self._token))
                if not cut.steps:
                    del self._blocks[at - 1], self._firsts[at - 1]
                    at -= 1
        self._blocks[at:at] = fresh
        self._firsts[at:at] = [b.steps[0] for b in fresh]
        self._n += len(rows)
        self._keys = None

    def _own(self, bi: int) -> Block:
        blk = self._blocks[bi]
        if blk.owner is not self._token:
            blk = self._blocks[bi] = blk.copy(self._token)
        return blk
