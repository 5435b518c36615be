"""The step columns, described once: every view of a step (the markdown check-in's table,
the TUI's step table, its sparklines and chart) is drawn from this list (glances' way)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str  # the `StepRow.value` key
    label: str  # the check-in's header (the seeds' words)
    short: str  # the TUI's header
    digits: int  # significant digits in the check-in
    width: int  # characters in the TUI's step table
    spark: bool = True  # drawn as a sparkline


STEP_COLUMNS = (
    Column("reward", "reward", "reward", 4, 8),
    Column("loss", "policy loss", "loss", 4, 10),
    Column("clip_ratio", "clip ratio", "clip", 4, 7, spark=False),
    Column("entropy", "entropy", "entropy", 4, 8),
    Column("kl", "KL", "KL", 5, 10),
    Column("grad_norm", "grad norm", "grad norm", 4, 10),
    Column("seq_len", "response length", "seq len", 1, 8),
    Column("step_time_s", "step time", "time", 0, 7),
)
# Sparkline order: what a researcher looks at first.
SPARK_ORDER = ("reward", "entropy", "grad_norm", "kl", "loss", "seq_len", "step_time_s")
SPARKLINES = tuple(c for name in SPARK_ORDER for c in STEP_COLUMNS if c.name == name and c.spark)
