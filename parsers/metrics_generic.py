"""Any JSONL of per-step rows, for every framework runtop has no plug-in for: `{"step": N, key: value, …}`
or `{"step": N, "data": {key: value}}`, keys named as runtop's metric registry names them
(`reward`, `loss`, `entropy`, `kl`, …) or mapped onto those names by the caller; every other
number is kept as an extra. Each number goes to the side of the run that owns it."""

from __future__ import annotations

import math
from collections.abc import Mapping

from runtop.parsers.columns import BY_NAME, ROLLOUT

from .events import ROLLOUT_SIDE, TRAINER, Event, StepMetrics, Unrecognised
from .numbers import loads
from .progress import registry_name

MAX_STEP = 10**12  # a step counter past this is garbage, not a run (and would overflow whoever prints it)


def json_row(line: str | bytes, source: str) -> tuple[int, dict[str, object]] | Unrecognised | None:
    """(step, the row) of one JSONL line with an integer `step`; `Unrecognised` for a row of
    another shape; None for a blank line. Shared by every structured metrics reader."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line:
        return None
    try:
        row = loads(line)
    except ValueError:
        return Unrecognised(source, "not JSON")
    if not isinstance(row, dict):
        return Unrecognised(source, "not a JSON object")
    step = row.get("step")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
        return Unrecognised(source, "no integer 'step'")
    if not 0 <= step < MAX_STEP:
        return Unrecognised(source, f"'step' out of range: {step!r:.40}")
    return int(step), row


def row_of(line: str | bytes, source: str) -> tuple[int, dict[str, object]] | Unrecognised | None:
    """(step, the row's numbers' dict) of one line: verl's `{"step", "data": {…}}` unwrapped."""
    got = json_row(line, source)
    if got is None or isinstance(got, Unrecognised):
        return got
    step, row = got
    data = row.get("data")
    return step, (data if isinstance(data, dict) else {k: v for k, v in row.items() if k != "step"})


def events_of(step: int, data: Mapping[str, object], keys: Mapping[str, str], phase_prefix: str | None = None,
              origin: str = "metrics") -> list[Event]:
    """`data`'s numbers as the two sides' `StepMetrics`: a key in `keys` (or a registry name)
    is that metric, one under `phase_prefix` a phase's seconds, any other an extra."""
    rollout: dict[str, float] = {}
    trainer: dict[str, float] = {}
    phases: dict[str, float] = {}
    extra: dict[str, float] = {}
    guessed: list[tuple[str, str, float]] = []
    for key, raw in data.items():
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            continue
        value = float(raw)
        name = keys.get(key, key if key in BY_NAME else None)
        if name is not None:
            side = rollout if BY_NAME[name].owner == ROLLOUT else trainer
            side.setdefault(name, value)
        elif phase_prefix and key.startswith(phase_prefix):
            phases[key[len(phase_prefix):]] = value
        elif (known := registry_name(key)) is not None:
            guessed.append((key, known, value))
        else:
            extra[key] = value
    # A spelling every framework uses (`actor_grad_norm`, `train/loss`) fills a column the plug-in's
    # own keys left empty: a new key of a known metric still lands in its column, never over them.
    for key, name, value in guessed:
        side = rollout if BY_NAME[name].owner == ROLLOUT else trainer
        if name in side:
            extra[key] = value
        else:
            side[name] = value
    out: list[Event] = []
    if rollout:
        out.append(StepMetrics(ROLLOUT_SIDE, step, rollout, {}, origin))
    if trainer or phases or extra:
        out.append(StepMetrics(TRAINER, step, trainer, phases, origin, None, extra))
    return out


def parse_line(line: str | bytes, source: str = "metrics", keys: Mapping[str, str] | None = None) -> list[Event]:
    got = row_of(line, source)
    if got is None:
        return []
    if isinstance(got, Unrecognised):
        return [got]
    step, data = got
    return events_of(step, data, keys or {})
