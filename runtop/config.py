"""Thresholds for the health rules, from `~/.config/runtop/config.toml` (or `--config`).

Every key is optional; what is not set keeps the default below. An unknown key or a
value of the wrong type is an error with one line naming it (never silently ignored:
a typo in a threshold would otherwise turn a rule off without anyone knowing).

    [health]
    stall_k = 3                 # stalled: no step for k × the median step time …
    stall_min_s = 600           # … and never less than this
    entropy_floor = 0.5
    bell = true
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, fields, replace
from typing import Any

from runtop.sources.regular import open_binary

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_PATH = os.path.join(os.path.expanduser("~"), ".config", "runtop", "config.toml")


class ConfigError(Exception):
    """A config file runtop cannot use, with a one-line reason."""


@dataclass(frozen=True)
class Thresholds:
    grace_s: float = 300.0  # a run younger than this is booting: no stall or missing-role alarms
    stall_k: float = 3.0
    stall_min_s: float = 600.0
    silence_s: float = 900.0  # no write anywhere for this long: the pod may be gone
    disk_warn_pct: float = 85.0
    disk_crit_pct: float = 95.0
    core_dump_warn_bytes: int = 1 << 30
    ckpt_shrink_ratio: float = 0.01  # a save this much smaller than the previous one failed
    max_checkpoints_without_retention: int = 10
    entropy_floor: float = 0.05
    entropy_drop_per_step: float = 0.05  # fraction of the first value lost per step, sustained
    entropy_window: int = 4
    grad_norm_spike: float = 5.0  # × the median of the previous steps
    kl_spike: float = 5.0
    reward_collapse: float = 0.5  # last reward below this share of the window's best
    format_failure_rate: float = 0.25
    errored_rate: float = 0.1
    truncated_rate: float = 0.5
    context_overflow_rate: float = 0.1
    timeout_rate: float = 0.1
    inference_unreachable_s: float = 60.0
    gpu_idle_s: float = 600.0  # a GPU at 0 % holding the run's memory this long, no step since: stuck?
    env_lag_p99_ms: float = 1000.0  # the env server's event-loop lag (p99) that warns
    # Stuck without errors: this share of the last `window` rollouts (at least `min` of
    # them) failing with one error type while the batch does not move.
    rollout_fail_window: int = 20
    rollout_fail_min: int = 8
    rollout_fail_share: float = 0.9
    bell: bool = True
    # Seconds of the run's own time per real second: `runtop demo` plays a run 20× faster and
    # the rules count its silences in its time. Not a config key: 1 for a real run.
    time_scale: float = 1.0


def _table(path: str | None, name: str) -> tuple[str, dict[str, Any]] | None:
    """(file, its `[name]` table): `path`, else the default file; None when there is none."""
    explicit = path is not None
    path = path or DEFAULT_PATH
    if not os.path.exists(path):
        if explicit:
            raise ConfigError(f"--config {path}: no such file")
        return None
    try:
        with open_binary(path) as f:
            section = tomllib.load(f).get(name, {})
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    except (ValueError, RecursionError):  # not text (a binary picked by mistake), or nested past reason
        raise ConfigError(f"{path}: not a TOML file") from None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return path, section


# The values each threshold may take (an out-of-range value made rules that never
# fire, or fire always, silently). (low, high, low is allowed): None is unbounded.
_SECONDS = (0.0, None, True)
_SHARE = (0.0, 1.0, True)
_PERCENT = (0.0, 100.0, True)
_POSITIVE = (0.0, None, False)
_COUNT = (1, None, True)
RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    "grace_s": _SECONDS, "stall_min_s": _SECONDS, "silence_s": _SECONDS, "inference_unreachable_s": _SECONDS,
    "gpu_idle_s": _SECONDS, "env_lag_p99_ms": _POSITIVE,
    "stall_k": _POSITIVE, "grad_norm_spike": _POSITIVE, "kl_spike": _POSITIVE,
    "disk_warn_pct": _PERCENT, "disk_crit_pct": _PERCENT,
    "core_dump_warn_bytes": (0, None, True), "entropy_floor": (0.0, None, True),
    "ckpt_shrink_ratio": _SHARE, "entropy_drop_per_step": _SHARE, "reward_collapse": _SHARE, "format_failure_rate": _SHARE,
    "errored_rate": _SHARE, "truncated_rate": _SHARE, "context_overflow_rate": _SHARE, "timeout_rate": _SHARE,
    "rollout_fail_share": _SHARE,
    "max_checkpoints_without_retention": _COUNT, "entropy_window": _COUNT, "rollout_fail_window": _COUNT, "rollout_fail_min": _COUNT,
}


INTERNAL = frozenset({"time_scale"})  # Thresholds fields no config file sets


def in_simulated_time(t: Thresholds, speed: float) -> Thresholds:
    """`t` for a run simulated `speed` times faster than real time (`runtop demo`): the rules
    count the time since the last write in the run's own seconds, so a stall is called when
    the simulated run would call it, against its own step times."""
    return replace(t, time_scale=speed)


def _out_of_range(key: str, value: float) -> str | None:
    """Why `value` cannot be `key`'s, or None."""
    if not math.isfinite(value):
        return "must be a finite number"
    if isinstance(getattr(Thresholds, key), int) and not isinstance(getattr(Thresholds, key), bool) and value != int(value):
        return "must be a whole number"
    low, high, low_ok = RANGES.get(key, (None, None, True))
    if low is not None and (value < low or (value == low and not low_ok)):
        return f"must be {'at least' if low_ok else 'above'} {low:g}"
    if high is not None and value > high:
        return f"must be at most {high:g}"
    return None


def load(path: str | None = None) -> Thresholds:
    """`[health]` of `path`, else of the default file if it exists, else the defaults."""
    found = _table(path, "health")
    if found is None:
        return Thresholds()
    path, section = found
    known = {f.name: f for f in fields(Thresholds) if f.name not in INTERNAL}
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in known:
            raise ConfigError(f"{path}: unknown key health.{key} (known: {', '.join(sorted(known))})")
        default = getattr(Thresholds, key)
        ok = isinstance(value, bool) if isinstance(default, bool) else isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise ConfigError(f"{path}: health.{key} must be {'true or false' if isinstance(default, bool) else 'a number'}, not {value!r}")
        why = None if isinstance(value, bool) else _out_of_range(key, value)
        if why:
            raise ConfigError(f"{path}: health.{key} {why}, not {value!r}")
        values[key] = int(value) if isinstance(default, int) and not isinstance(default, bool) else value
    t = replace(Thresholds(), **values)
    if t.disk_warn_pct > t.disk_crit_pct:
        raise ConfigError(f"{path}: health.disk_warn_pct ({t.disk_warn_pct:g}) is above health.disk_crit_pct ({t.disk_crit_pct:g})")
    return t


def load_judging(path: str | None, simulated_speed: float | None = None) -> Thresholds:
    """`[health]` as a command judges with it: of `path` (`--config`), in a simulated run's own
    time where it runs `simulated_speed` times faster (`runtop demo`)."""
    cfg = load(path)
    return in_simulated_time(cfg, simulated_speed) if simulated_speed else cfg


@dataclass(frozen=True)
class ActionsConfig:
    """`[actions]`: what runtop may send to the run's tmux Launcher window."""

    launch_cmd: str | None = None
    launcher_window: str = "Launcher"
    logs_window: str = "Logs"
    read_only: bool = False
    audit_log: str | None = None
    tmux_target: str | None = None  # `SESSION:WINDOW.PANE`: the Launcher pane, named by the user


def load_actions(path: str | None = None) -> ActionsConfig:
    found = _table(path, "actions")
    if found is None:
        return ActionsConfig()
    path, section = found
    known = {f.name for f in fields(ActionsConfig)}
    for key, value in section.items():
        if key not in known:
            raise ConfigError(f"{path}: unknown key actions.{key} (known: {', '.join(sorted(known))})")
        want = bool if key == "read_only" else str
        if not isinstance(value, want):
            raise ConfigError(f"{path}: actions.{key} must be {'true or false' if want is bool else 'a string'}")
    return replace(ActionsConfig(), **section)


SEVERITIES = ("info", "warning", "critical")


@dataclass(frozen=True)
class NotifyConfig:
    """`[notify]`: who hears of an incident when no one is looking at the screen."""

    urls: tuple[str, ...] = ()  # apprise URLs: slack://…, ntfys://topic, json://host:port/path
    min_severity: str = "critical"  # the least severe finding that is sent
    heartbeat: str | None = None  # a dead-man's switch URL (healthchecks.io: /start, /fail)
    heartbeat_every_s: float = 60.0
    on_alert: tuple[str, ...] = ()  # an argv run on each message (never a shell string)
    on_alert_timeout_s: float = 30.0
    terminal: bool = True  # OSC 777/9 desktop notifications and `tmux display-message`


def load_notify(path: str | None = None, **overrides: Any) -> NotifyConfig:
    """`[notify]` of the config file, with the command line's values over it."""
    found = _table(path, "notify")
    values: dict[str, Any] = {}
    if found is not None:
        where, section = found
        known = {f.name: f for f in fields(NotifyConfig)}
        for key, value in section.items():
            if key not in known:
                raise ConfigError(f"{where}: unknown key notify.{key} (known: {', '.join(sorted(known))})")
            values[key] = _notify_value(where, key, value)
    values.update({k: v for k, v in overrides.items() if v not in (None, (), [])})
    cfg = replace(NotifyConfig(), **values)
    if cfg.min_severity not in SEVERITIES:
        raise ConfigError(f"notify.min_severity must be one of {', '.join(SEVERITIES)}, not {cfg.min_severity!r}")
    return cfg


def _notify_value(where: str, key: str, value: Any) -> Any:
    if key in ("urls", "on_alert"):
        if isinstance(value, str):
            value = [value] if key == "urls" else None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{where}: notify.{key} must be a list of strings" + (" (an argv: [\"cmd\", \"arg\"])" if key == "on_alert" else ""))
        return tuple(value)
    if key in ("heartbeat_every_s", "on_alert_timeout_s"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{where}: notify.{key} must be a number of seconds above 0, not {value!r}")
        return float(value)
    if key == "terminal":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: notify.terminal must be true or false")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: notify.{key} must be a string")
    return value


def load_metrics_map(path: str | None = None) -> dict[str, str]:
    """`[metrics]`: a `--metrics FILE`'s keys → runtop's metric names (`"my/reward" = "reward"`)."""
    from runtop.parsers.columns import BY_NAME

    found = _table(path, "metrics")
    if found is None:
        return {}
    where, section = found
    out: dict[str, str] = {}
    for key, value in section.items():
        if not isinstance(value, str) or value not in BY_NAME:
            raise ConfigError(f"{where}: metrics.{key!r} must name one of runtop's metrics ({', '.join(sorted(BY_NAME))}), not {value!r}")
        out[key] = value
    return out
