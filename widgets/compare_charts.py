"""Runs compared, drawn: one chart per metric with every run overlaid in its own colour on one
step axis, the legend that names the colours, and the table of latest values and trends.
Render only: each function takes `RunSeries` (frozen, `runtop.fleet.compare`) and returns text."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from runtop.fleet.compare import ARROW, FLAT, UP, RunSeries, ema, label
from runtop.parsers.columns import BY_NAME
from runtop.widgets.render import column_format, step_ticks

# 256-colour indices, told apart on dark and light terminals: cyan, orange, magenta, green,
# yellow, red, blue, grey; a ninth run reuses the first (a legend of nine is rare).
PALETTE = (44, 208, 170, 34, 178, 196, 33, 246)


def colour(i: int) -> int:
    return PALETTE[i % len(PALETTE)]


def style(i: int) -> str:
    return f"bold color({colour(i)})"


def legend(runs: Sequence[RunSeries]) -> Text:
    """`● seed-0 (step 20)  ● seed-1 …`: each run's colour and name, and how far it is."""
    out = Text()
    for i, run in enumerate(runs):
        if i:
            out.append("  ")
        out.append("● ", style(i))
        out.append(run.name, "bold")
        where = f" step {run.step}" if run.step is not None else " no steps yet"
        if run.read < 1.0:
            where += f", history {int(run.read * 100)}% read"
        out.append(f" ({where.strip()})", "grey62")
    return out


def chart_text(runs: Sequence[RunSeries], metric: str, width: int, height: int, alpha: float = 0.0,
               span: tuple[int, int] | None = None) -> Text:
    """`metric` of every run that logs it, overlaid (each in its legend's colour), on the
    step axis `span` that every chart of the screen shares; smoothed by an EMA of `alpha`."""
    import plotext as plt  # only when charts are drawn: it costs startup time otherwise

    drawn = [(i, run.points[metric]) for i, run in enumerate(runs) if run.points.get(metric)]
    title = label(metric) + (f" · EMA {alpha:g}" if alpha else "")
    if not drawn:
        return Text(f"{title}\n\nno values in these runs", style="grey62")
    plt.clf()
    plt.theme("clear")
    plt.plotsize(max(20, width), max(6, height))
    for i, pts in drawn:
        plt.plot([s for s, _ in pts], ema([v for _, v in pts], alpha), marker="braille", color=colour(i))
    if span is not None:
        lo, hi = span
        plt.xlim(lo, hi if hi > lo else lo + 1)
        plt.xticks(step_ticks(lo, hi, max(2, width // 10)))
    plt.title(title)
    return Text.from_ansi(plt.build())


def arrow(metric: str, trend: str) -> Text:
    """↑ ↓ →, green where the metric moves the way that is good for it, red the other way."""
    good = BY_NAME[metric].good if metric in BY_NAME else None
    colour_ = "grey62"
    if trend != FLAT and good is not None:
        colour_ = "green" if (trend == UP) == (good == "up") else "red"
    return Text(ARROW.get(trend, " "), colour_)


CELL = 11  # a value and its arrow: `-0.00123 ↓`
NAME_MIN = 12


def table_text(runs: Sequence[RunSeries], metrics: Sequence[str], width: int) -> Text:
    """One row per run (its colour, its name), one column per metric that fits `width`:
    the latest value and its trend over the last steps. One number format per column."""
    name_w = max(NAME_MIN, min(24, max((len(r.name) for r in runs), default=0) + 2))
    fit = max(1, (width - name_w) // (CELL + 1))
    shown = list(metrics[:fit])
    head = Text(f"{'run':<{name_w}}", "bold")
    for m in shown:
        name = label(m) if len(label(m)) <= CELL else label(m)[: CELL - 1] + "…"
        head.append(f" {name:>{CELL}}", "bold")
    lines = [head]
    fmts = {m: column_format([r.latest[m] for r in runs if m in r.latest]) for m in shown}
    for i, run in enumerate(runs):
        line = Text("● ", style(i))
        name = run.name if len(run.name) <= name_w - 3 else run.name[: name_w - 4] + "…"
        line.append(f"{name:<{name_w - 2}}")
        for m in shown:
            v = run.latest.get(m)
            if v is None:
                line.append(f" {'-':>{CELL}}", "grey62")
                continue
            text = fmts[m](v)[: CELL - 2]
            line.append(f" {text:>{CELL - 2}} ")
            line.append_text(arrow(m, run.trends.get(m, FLAT)))
        lines.append(line)
    if len(shown) < len(metrics):
        lines.append(Text(f"+{len(metrics) - len(shown)} more metrics: `runtop compare RUN RUN` prints them all", "italic grey62"))
    return Text("\n").join(lines)

