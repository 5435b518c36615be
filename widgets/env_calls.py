"""Tool/env calls: slow calls by function (count, p50, max, last seen), timeouts, overflows,
the model's own errors and the rollout-duration spread. A DataTable updated in place by row key."""

from __future__ import annotations

import statistics
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

from runtop.view.view import Slice, View
from runtop.widgets.pane import SafeStatic, versions
from runtop.widgets.render import duration


class EnvCalls(Vertical):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    EnvCalls { height: auto; max-height: 16; border: round $primary-darken-2; }
    EnvCalls > DataTable { height: auto; max-height: 10; }
    EnvCalls > Static { height: auto; padding: 0 1; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.border_title = "env calls"
        self._values: dict[str, tuple[str, ...]] = {}
        self._sig: object = None

    def compose(self) -> ComposeResult:
        yield SafeStatic(id="env-summary")
        yield DataTable(id="env-table", cursor_type="none", show_cursor=False)

    def on_mount(self) -> None:
        t = self.query_one(DataTable)
        for label in ("function", "slow", "p50", "max", "last seen"):
            t.add_column(label, key=label)

    def update_view(self, view: View) -> bool:
        s = view.state
        sc = s.slow_calls
        sig = versions(view, (Slice.ROLLOUTS,))
        if sig == self._sig:
            return False
        self._sig = sig
        summary = Text()
        summary.append(f"slow (>{sc.threshold_s:.0f}s) {sc.count}", "yellow" if sc.count else "")
        summary.append(f" · timeouts {sc.timeouts}", "yellow" if sc.timeouts else "")
        summary.append(f" · context overflows {s.context_overflows}", "yellow" if s.context_overflows else "")
        if s.env.durations:
            d = sorted(s.env.durations)
            summary.append(f"\nrollout duration p50 {duration(statistics.median(d))} · p90 {duration(d[int(0.9 * (len(d) - 1))])} · max {duration(d[-1])}")
        if s.agent.code_errors:
            errs = ", ".join(f"{k}×{v}" for k, v in s.agent.code_errors.most_common(4))
            summary.append(f"\nmodel code errors (not infrastructure): {errs}", "grey70")
        env_errs = dict(s.rollouts.by_error)
        if env_errs:
            summary.append("\nenv error types: " + ", ".join(f"{k}×{v}" for k, v in sorted(env_errs.items(), key=lambda kv: -kv[1])[:4]), "grey70")
        self.query_one("#env-summary", SafeStatic).update(summary)
        table = self.query_one(DataTable)
        for name, fc in sorted(sc.by_function.items(), key=lambda kv: -kv[1].count)[:50]:
            values = (
                name,
                str(fc.count),
                duration(statistics.median(fc.durations)) if fc.durations else "n/a",
                duration(fc.max_s),
                fc.last_time or "n/a",
            )
            old = self._values.get(name)
            if old is None:
                table.add_row(*values, key=name)
            elif old != values:
                for label, new, was in zip(("function", "slow", "p50", "max", "last seen"), values, old):
                    if new != was:
                        table.update_cell(name, label, new)
            self._values[name] = values
        table.display = bool(self._values)
        return True
