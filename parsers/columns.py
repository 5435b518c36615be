"""The per-step metrics, described once: which role owns each, its JSON key,
its label in the check-in and the TUI, its digits, its column width and whether it is a
sparkline. The state's ownership, the JSON row of `runtop status --json`, the check-in's
table, the TUI's step table, sparklines and chart are all drawn from `METRICS` (glances'
way); a framework's parser maps its own keys onto these names.
"""

from __future__ import annotations

from dataclasses import dataclass

# Who owns a number: the trainer, or the rollout side (prime-rl's orchestrator, SkyRL's
# generator: each framework names its own, `Framework.rollout_role`).
TRAINER, ROLLOUT = "trainer", "rollout"


@dataclass(frozen=True)
class Metric:
    name: str  # the `StepRow.value` key, and the JSON key
    owner: str  # TRAINER or ROLLOUT: which side of the run the number comes from
    label: str = ""  # the check-in's header (the words of docs/incidents.md's notes); "" = not a table column
    short: str = ""  # the TUI's header
    digits: int = 4  # significant digits in the check-in
    width: int = 0  # characters in the TUI's step table (0: not a column)
    spark: bool = False  # drawn as a sparkline
    good: str | None = None  # "up" / "down": which way is better, where one is


METRICS: tuple[Metric, ...] = (
    Metric("reward", ROLLOUT, "reward", "reward", 4, 8, spark=True, good="up"),
    Metric("loss", TRAINER, "policy loss", "loss", 4, 10, spark=True),
    Metric("clip_ratio", TRAINER, "clip ratio", "clip", 4, 9),
    Metric("entropy", TRAINER, "entropy", "entropy", 4, 8, spark=True),
    Metric("kl", TRAINER, "KL", "KL", 5, 10, spark=True, good="down"),
    Metric("grad_norm", TRAINER, "grad norm", "grad norm", 4, 10, spark=True),
    Metric("seq_len", ROLLOUT, "response length", "seq len", 1, 8, spark=True),
    Metric("step_time_s", TRAINER, "step time", "time", 0, 7, spark=True, good="down"),
    Metric("lr", TRAINER),
    Metric("throughput_tok_s", TRAINER, good="up"),
    Metric("truncated", ROLLOUT, good="down"),
    Metric("error_rate", ROLLOUT, good="down"),
    Metric("reward_all", ROLLOUT, good="up"),
    Metric("turns", ROLLOUT),
    Metric("inference_tok_s", ROLLOUT, good="up"),  # v0.5's orchestrator `Throughput`
    Metric("async_level", ROLLOUT),
    Metric("off_policy_max", ROLLOUT),
    Metric("cancelled", ROLLOUT, good="down"),
    Metric("mfu", TRAINER, good="up"),
    Metric("peak_mem_gib", TRAINER),
)
BY_NAME = {m.name: m for m in METRICS}
# Numbers the orchestrator owns, whatever else writes a key of that name.
ROLLOUT_OWNED = frozenset(m.name for m in METRICS if m.owner == ROLLOUT) | {"rollouts"}

STEP_COLUMNS = tuple(m for m in METRICS if m.width)
# Sparkline order: what a researcher looks at first.
SPARK_ORDER = ("reward", "entropy", "grad_norm", "kl", "loss", "seq_len", "step_time_s")
SPARKLINES = tuple(BY_NAME[name] for name in SPARK_ORDER if BY_NAME[name].spark)
