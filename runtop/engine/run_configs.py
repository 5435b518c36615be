"""The run's config files (prime-rl's `rl.toml`, a JSON config): read again when their
mtime moves, merged, and folded into the state (max steps, run name, checkpoint cadence)."""

from __future__ import annotations

import os

from runtop.frameworks import Framework
from runtop.frameworks.layout import RunLayout
from runtop.parsers.configs import RunConfig, merge, parse_config
from runtop.sources.regular import open_text
from runtop.state.run import RunState


class ConfigReader:
    def __init__(self) -> None:
        self._mtimes: dict[str, float] = {}
        self._values: dict[str, RunConfig] = {}

    def read(self, layout: RunLayout, state: RunState, framework: Framework) -> bool:
        """Read the configs that changed; True when one did."""
        changed = False
        for t in layout.configs:
            try:
                mtime = os.path.getmtime(t.path)
            except OSError:
                continue
            if self._mtimes.get(t.path) == mtime:
                continue
            self._mtimes[t.path] = mtime
            try:
                with open_text(t.path) as fh:
                    text = fh.read(4 << 20)
            except OSError as e:
                state.notes.append(f"cannot read {t.path}: {e.strerror or e}")
                continue
            cfg = parse_config(text, "json" if t.path.endswith(".json") else "toml")
            if cfg is None:
                state.unrecognised[t.path] = "config file does not parse"
                continue
            self._values[t.path] = cfg
            changed = True
        if changed:
            merged = merge(list(self._values.values()))
            if merged.max_steps is not None:
                state.max_steps, state.max_steps_source = merged.max_steps, "config"
            state.run_name = merged.run_name or state.run_name
            state.ckpt_interval = merged.ckpt_interval
            state.keep_last = merged.keep_last
            state.endpoints = {k: v for k, v in (("trainer", merged.trainer_metrics_port), ("inference", merged.inference_port)) if v}
        if state.run_name is None:
            state.run_name = framework.default_run_name(layout)
        return changed
