"""The step table the seeds wrote by hand, updated in place by row key (never cleared)."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from runtop.view import View
from runtop.widgets.render import num

COLUMNS = (
    ("step", None),
    ("reward", "reward"),
    ("loss", "loss"),
    ("clip", "clip_ratio"),
    ("entropy", "entropy"),
    ("KL", "kl"),
    ("grad norm", "grad_norm"),
    ("seq len", "seq_len"),
    ("time", "step_time_s"),
)
MAX_ROWS = 500  # the newest steps; older ones stay in `runtop status --json`


class StepTable(DataTable):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    StepTable { height: 1fr; min-height: 5; border: round $primary-darken-2; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.border_title = "steps"
        self._values: dict[str, tuple[str, ...]] = {}
        self._sig: object = None

    def on_mount(self) -> None:
        for label, col in COLUMNS:
            self.add_column(label, key=col or "step")

    def _row(self, view: View, step: int) -> tuple[str, ...]:
        row = view.state.steps[step]
        cells = [str(step) if row.attempt == view.state.attempt else f"{step} (#{row.attempt})"]
        for _label, col in COLUMNS[1:]:
            v = row.value(col)
            cells.append("" if v is None else (f"{v:.0f}s" if col == "step_time_s" else num(v)))
        return tuple(cells)

    def update_view(self, view: View) -> bool:
        st = view.state
        last = max(st.steps) if st.steps else None
        row = st.steps.get(last) if last is not None else None
        sig = (len(st.steps), last, len(row.trainer) + len(row.orchestrator) if row else 0, st.attempt, len(st.lost_steps))
        if sig == self._sig:
            return False
        self._sig = sig
        steps = sorted(st.steps)[-MAX_ROWS:]
        wanted = {str(s) for s in steps}
        for key in [k for k in self._values if k not in wanted]:
            self.remove_row(key)
            del self._values[key]
        at_end = self.cursor_row >= self.row_count - 1
        for s in steps:
            key = str(s)
            values = self._row(view, s)
            old = self._values.get(key)
            if old is None:
                self.add_row(*values, key=key)
            elif old != values:
                for (label, col), new, was in zip(COLUMNS, values, old):
                    if new != was:
                        self.update_cell(key, col or "step", new, update_width=True)
            self._values[key] = values
        if at_end and self.row_count:
            self.move_cursor(row=self.row_count - 1)
        return True
