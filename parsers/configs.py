"""Resolved config files (`configs/*.json|toml`) → the few facts runtop needs."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from .numbers import loads

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True, slots=True)
class RunConfig:
    max_steps: int | None = None
    run_name: str | None = None
    ckpt_interval: int | None = None
    keep_last: int | None = None
    model: str | None = None
    # Where the run serves its own Prometheus text: the trainer's metrics server
    # (`[trainer.metrics_server]` in rl.toml, `[metrics_server]` in trainer.toml; port 8000
    # when the table is there without one) and the inference server's port (`[inference.server]`,
    # `[server]` in inference.toml).
    trainer_metrics_port: int | None = None
    inference_port: int | None = None


def _table(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _find(obj: object, key: str, depth: int = 0) -> object | None:
    """The value of `key` at the shallowest depth (top-level `max_steps` wins over nested)."""
    if depth > 6 or not isinstance(obj, dict):
        return None
    if key in obj:
        found: object = obj[key]
        return found
    for v in obj.values():
        found = _find(v, key, depth + 1)
        if found is not None:
            return found
    return None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# tomllib is quadratic in the number of parts of a dotted key (`a.a.a.…`: 1.5 s for a 64 KB
# line); no real config nests keys this deep.
MAX_KEY_DOTS = 64


def _dotted_too_deep(text: str) -> bool:
    in_multiline = False
    for line in text.split("\n"):
        if not in_multiline and line.partition("=")[0].count(".") > MAX_KEY_DOTS:
            return True
        if (line.count('"""') + line.count("'''")) % 2:
            in_multiline = not in_multiline
    return False


def parse_config(text: str, fmt: str) -> RunConfig | None:
    """`fmt` is "json" or "toml"; None when the text does not parse."""
    if fmt != "json" and _dotted_too_deep(text):
        return None
    try:
        data = loads(text) if fmt == "json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError, RecursionError):  # tomllib recurses in Python
        return None
    if not isinstance(data, dict):
        return None
    run, ckpt, model = (_table(data.get(k)) for k in ("run", "ckpt", "model"))
    name = run.get("name") if isinstance(run.get("name"), str) else None
    server = _table(_table(data.get("trainer")).get("metrics_server")) or _table(data.get("metrics_server"))
    has_server = "metrics_server" in _table(data.get("trainer")) or "metrics_server" in data
    inference = _table(_table(data.get("inference")).get("server")) or _table(data.get("server"))
    return RunConfig(
        trainer_metrics_port=_port(server.get("port", 8000)) if has_server else None,
        inference_port=_port(inference.get("port")),
        max_steps=_int(_find(data, "max_steps")),
        run_name=name,
        ckpt_interval=_int(ckpt.get("interval")),
        keep_last=_int(ckpt.get("keep_last")),
        model=model.get("name") if isinstance(model.get("name"), str) else None,
    )


def _port(v: object) -> int | None:
    n = _int(v)
    return n if n is not None and 0 < n < 65536 else None


def merge(configs: list[RunConfig]) -> RunConfig:
    """First non-null value of each field, in the order given."""
    out: dict[str, object] = {}
    for c in configs:
        for f in ("max_steps", "run_name", "ckpt_interval", "keep_last", "model", "trainer_metrics_port", "inference_port"):
            if out.get(f) is None and getattr(c, f) is not None:
                out[f] = getattr(c, f)
    return RunConfig(**out)  # type: ignore[arg-type]
