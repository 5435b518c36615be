"""The header: which run, is it OK (and why not), how far along, and is it still writing."""

from __future__ import annotations

from rich.text import Text

from runtop.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import age as coarse_age
from runtop.widgets.render import duration

VERDICT_STYLE = {"Finished": "bold white on blue", "Healthy": "bold green", "Degraded": "bold yellow", "Down": "bold white on red", "Unknown": "bold grey70"}
STALL_MIN_S = 600.0  # the seeds' runs have 100-minute steps: silence is only suspicious relative to the step time


def last_write_age(view: View) -> float | None:
    mtimes = view.state.write_times()
    return max(0.0, view.now - max(mtimes)) if mtimes else None


def stalled(view: View, age: float | None) -> bool:
    if age is None or view.state.run_finished():
        return False
    med = view.state.median_step_time()
    return age > max(STALL_MIN_S, 3 * med if med else 0.0)


class HealthHeader(Pane):
    DEFAULT_CSS = """
    HealthHeader { border: none; padding: 0 1; height: 3; background: $boost; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    READS = (Slice.VERDICT, Slice.RUN, Slice.STEPS, Slice.FILES, Slice.CLOCK, Slice.READING)

    def render_view(self, view: View) -> Text:
        s = view.state
        v = view.verdict
        line1 = Text.assemble(
            ("runtop ", "bold"), (s.run_name or "?", "bold cyan"), f"  {s.framework} · {s.layout} · attempt {s.attempt}",
        )
        reasons = "; ".join(v.reasons) if v.reasons else ("all clear" if v.verdict == "Healthy" else "")
        line2 = Text.assemble((f" {v.verdict} ", VERDICT_STYLE.get(v.verdict, "bold")), " ", reasons)
        line2.truncate(max(20, self.size.width - 2) if self.size.width else 200, overflow="ellipsis")
        step = s.trainer_step if s.trainer_step is not None else s.rollout_step
        parts = [f"step {step if step is not None else '-'}/{s.max_steps or '?'}"]
        eta = s.eta_s()
        if eta is not None and v.verdict != "Down" and not s.run_finished():
            parts.append(f"ETA {duration(eta)}")
        phase = s.current_phase()
        if phase:
            parts.append(phase)
        age = last_write_age(view)
        line3 = Text(" · ".join(parts))
        if age is not None:
            line3.append(f" · last write {coarse_age(age)} ago")
            if stalled(view, age):
                line3.append(" stalled?", style="bold yellow")
        if view.backfill < 1.0:
            line3.append(f" · reading history {view.backfill:.0%}", style="italic")
        return Text("\n").join([line1, line2, line3])
