"""Runs side by side: each run's metrics as bounded series, their latest values and trends,
read from a state (a published view's frozen copy, or a run read once by `runtop compare`).

The metrics are the registry's (`runtop.parsers.columns.METRICS`), each from the role that owns it,
as `runtop status --json` writes its step rows: the latest value here is the last non-null
one of that document's `steps`. Nothing here draws or reads a file (docs/design.md: state →
frozen views → widgets); the compare screen, the runs table's metric columns and
`runtop compare` all read these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtop.parsers.columns import BY_NAME, METRICS, SPARK_ORDER

if TYPE_CHECKING:
    from runtop.state.run import RunState
    from runtop.view.view import View

# A run's whole history is drawn, thinned to at most this many points per metric: a chart
# is a few hundred braille dots wide, and a 100k-step run must cost what a short one does.
MAX_POINTS = 600
# A trend compares the mean of the newer half of the last TREND_STEPS values with the older half.
TREND_STEPS = 20
# Less than this share of the window's range between the halves is flat: noise, not a trend.
FLAT_SHARE = 0.1
# The order a researcher reads them in (the sparklines' order), then the rest of the registry.
ORDER = tuple(SPARK_ORDER) + tuple(m.name for m in METRICS if m.name not in SPARK_ORDER)
UP, DOWN, FLAT = "up", "down", "flat"
# Names for the registry's metrics that have no column of their own (units said as people say them).
LABELS = {"step_time_s": "step time", "throughput_tok_s": "tok/s", "inference_tok_s": "inference tok/s", "peak_mem_gib": "peak mem GiB",
          "mfu": "MFU", "off_policy_max": "off-policy max", "reward_all": "reward all", "error_rate": "error rate"}
ARROW = {UP: "↑", DOWN: "↓", FLAT: "→"}
# What a user may type for a metric besides its registry name (`--columns step_time`).
ALIASES = {"step_time": "step_time_s", "time": "step_time_s", "response_length": "seq_len",
           "throughput": "throughput_tok_s", "policy_loss": "loss", "clip": "clip_ratio"}


@dataclass(frozen=True)
class RunSeries:
    """One run's numbers for comparison: frozen, made once per version of its steps."""

    name: str  # the run dir's name: what tells seeds of one config apart
    path: str
    step: int | None
    points: Mapping[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)  # metric → (step, value), thinned
    latest: Mapping[str, float] = field(default_factory=dict)  # metric → its last finite value
    trends: Mapping[str, str] = field(default_factory=dict)  # metric → UP, DOWN or FLAT over the last TREND_STEPS values
    read: float = 1.0  # fraction of the run's history read so far
    version: int = 0  # moves when the numbers do (the view's steps version)


def label(name: str) -> str:
    """A metric's short name, as the step table and the charts say it."""
    if name in LABELS:
        return LABELS[name]
    m = BY_NAME.get(name)
    return (m.short or m.name.replace("_", " ")) if m is not None else name


def metric_named(text: str) -> str | None:
    """The registry name a user meant (`reward`, `step_time`, `step time`, `KL`), else None."""
    t = text.strip().lower().replace(" ", "_").replace("-", "_")
    if t in BY_NAME:
        return t
    if t in ALIASES:
        return ALIASES[t]
    for m in METRICS:
        if t in (m.short.lower().replace(" ", "_"), m.label.lower().replace(" ", "_")) and (m.short or m.label):
            return m.name
    return None


def parse_metrics(text: str) -> tuple[str, ...]:
    """`reward,entropy,step_time` → registry names, in the order given, once each; a ValueError
    naming the first unknown one and the names there are."""
    out: list[str] = []
    for word in (w for w in text.split(",") if w.strip()):
        name = metric_named(word)
        if name is None:
            import difflib

            close = difflib.get_close_matches(word.strip().lower(), ORDER, n=1, cutoff=0.6)
            meant = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"{word.strip()!r} is not a metric runtop knows{meant}; known: {', '.join(ORDER)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("give one metric or more, e.g. reward,entropy,step_time")
    return tuple(out)


def _finite(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def latest_values(state: RunState, names: Sequence[str] = ORDER, most: int | None = None) -> dict[str, float]:
    """Each metric's last finite value, walking back from the newest step until every metric
    that `names` lists has one (or `most` rows were looked at: the runs table asks often)."""
    keys = state.step_keys()
    out: dict[str, float] = {}
    wanted = set(names)
    for i, k in enumerate(reversed(keys)):
        if most is not None and i >= most:
            break
        row = state.steps[k]
        for name in wanted - out.keys():
            v = _finite(row.value(name))
            if v is not None:
                out[name] = v
        if len(out) == len(wanted):
            break
    return {n: out[n] for n in names if n in out}


def trend_of(values: Sequence[float]) -> str:
    """UP, DOWN or FLAT: the newer half's mean against the older half's, flat when the move is
    small beside the window's range (a noisy reward that goes nowhere is flat)."""
    vals = [v for v in values if math.isfinite(v)][-TREND_STEPS:]
    if len(vals) < 2:
        return FLAT
    half = len(vals) // 2
    old, new = vals[:half], vals[-half:]
    delta = sum(new) / len(new) - sum(old) / len(old)
    spread = (max(vals) - min(vals)) or abs(vals[-1]) or 1.0
    if abs(delta) < FLAT_SHARE * spread:
        return FLAT
    return UP if delta > 0 else DOWN


def series_of(state: RunState, name: str, path: str, *, read: float = 1.0, version: int = 0, trend_steps: int = TREND_STEPS) -> RunSeries:
    """The run's registry metrics: the whole history thinned to MAX_POINTS steps (the newest
    always in), the latest values, and the trends over the last `trend_steps` steps."""
    keys = state.step_keys()
    stride = max(1, math.ceil(len(keys) / MAX_POINTS))
    picked = keys[::stride]
    if keys and picked[-1] != keys[-1]:
        picked = [*picked, keys[-1]]
    points: dict[str, list[tuple[int, float]]] = {}
    for k in picked:
        row = state.steps[k]
        for metric in ORDER:
            v = _finite(row.value(metric))
            if v is not None:
                points.setdefault(metric, []).append((k, v))
    recent: dict[str, list[float]] = {}
    for k in keys[-trend_steps:]:
        row = state.steps[k]
        for metric in ORDER:
            v = _finite(row.value(metric))
            if v is not None:
                recent.setdefault(metric, []).append(v)
    latest = latest_values(state, [m for m in ORDER if m in points])
    return RunSeries(
        name=name, path=path, step=state.step, points={m: tuple(p) for m, p in points.items()}, latest=latest,
        trends={m: trend_of(v) for m, v in recent.items()}, read=read, version=version,
    )


def metrics_of(runs: Sequence[RunSeries]) -> list[str]:
    """Every metric any of the runs logs, in the registry's reading order."""
    have = {m for r in runs for m in r.points}
    return [m for m in ORDER if m in have]


def common_metrics(runs: Sequence[RunSeries]) -> list[str]:
    """The metrics every run logs: what a comparison can put side by side."""
    if not runs:
        return []
    return [m for m in ORDER if all(m in r.points for r in runs)]


def ema(values: Sequence[float], alpha: float) -> list[float]:
    """An exponential moving average (TensorBoard's smoothing): 0 leaves the values as they are,
    0.9 keeps nine tenths of the past at each step. Debiased, so the first values are not pulled to 0."""
    if alpha <= 0:
        return list(values)
    out, acc, weight = [], 0.0, 0.0
    for v in values:
        acc = alpha * acc + (1 - alpha) * v
        weight = alpha * weight + (1 - alpha)
        # Ten significant digits: a constant series stays that constant (211.4, not 211.400000000000006).
        out.append(float(f"{acc / weight:.10g}"))
    return out


def step_span(runs: Sequence[RunSeries], metrics: Sequence[str]) -> tuple[int, int] | None:
    """The step axis every chart shares: the first to the last step any run has of any metric."""
    steps = [p[i][0] for r in runs for m in metrics if (p := r.points.get(m)) for i in (0, -1)]
    return (min(steps), max(steps)) if steps else None


class SeriesCache:
    """Each charted run's `RunSeries`, made again only when its published view's steps (or
    the share of history read) moved: a finished run is thinned once, not at every repaint."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[tuple[int, int, float], RunSeries]] = {}

    def series(self, path: str, name: str, view: View) -> RunSeries:
        from runtop.view.view import Slice

        # The steps dict is the previous view's own while no row moved (`runtop.view.publish`).
        mark = (id(view.state.steps), view.versions.get(Slice.STEPS, 0), round(view.backfill, 2))
        made = self._made.get(path)
        if made is None or made[0] != mark:
            made = (mark, series_of(view.state, name, path, read=view.backfill, version=hash(mark)))
            self._made[path] = made
        return made[1]
