"""The header: which run, is it OK (and why not), how far along, and is it still writing."""

from __future__ import annotations

from rich.text import Text

from runtop.rules.advice import advise
from runtop.view.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import age as coarse_age
from runtop.widgets.render import duration

VERDICT_STYLE = {"Finished": "bold white on blue", "Healthy": "bold green", "Degraded": "bold yellow", "Down": "bold white on red", "Unknown": "bold grey70"}
# The band under the run's name: the verdict's colour across the whole width, so it is the
# first thing seen (a 6-character chip was the least visible thing on screen).
# A healthy run's band is calm.
BAND_STYLE = {"Finished": "white on dark_blue", "Healthy": "green", "Degraded": "black on yellow3", "Down": "bold white on red3", "Unknown": "grey70"}


# The least of a next step the band keeps before the step and last write give way to it.
MIN_ADVICE = 80


def last_write_age(view: View) -> float | None:
    mtimes = view.state.write_times()
    return max(0.0, view.now - max(mtimes)) if mtimes else None


class HealthHeader(Pane):
    DEFAULT_CSS = """
    HealthHeader { border: none; padding: 0 1; height: 4; background: $boost; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    READS = (Slice.VERDICT, Slice.RUN, Slice.STEPS, Slice.FILES, Slice.CLOCK, Slice.READING)
    # Action and pane names → their keys (the app fills it from its one key table), so the
    # next step says which key takes it.
    keys: dict[str, str] = {}  # replaced per instance by the app, never mutated
    # The run's directory's name (the app sets it): shown beside the config's run name when
    # they differ, since runs of one config (seeds, an ablation) share that name.
    dir_name = ""

    def render_view(self, view: View) -> Text:
        s = view.state
        v = view.verdict
        line1 = Text.assemble(("runtop ", "bold"), (s.run_name or self.dir_name or "?", "bold cyan"))
        if self.dir_name and self.dir_name != s.run_name:
            line1.append(f"  in {self.dir_name}/", "cyan")
        line1.append(f"  {s.framework} · {s.layout} · attempt {s.attempt}")
        reasons = "; ".join(v.reasons) if v.reasons else ("all clear" if v.verdict == "Healthy" else "")
        width = max(20, self.size.width - 2) if self.size.width else 200
        band = BAND_STYLE.get(v.verdict, "")
        chip = f" {v.verdict} "
        first, rest = _split(reasons, width - len(chip) - 1)
        line2 = Text.assemble((chip, VERDICT_STYLE.get(v.verdict, "bold")), (" " + first, band))
        line2b = Text(" " * len(chip) + " " + rest, style=band)
        for line in (line2, line2b):
            line.truncate(width, overflow="ellipsis", pad=True)
            line.stylize(band, len(chip))
        parts = [s.step_text()]
        eta = s.eta_s()
        if eta is not None and v.verdict != "Down" and not s.run_finished():
            parts.append(f"ETA {duration(eta)}")
        phase = s.current_phase()
        if phase:
            parts.append(phase)
        age = last_write_age(view)
        line3 = Text(" · ".join(parts))
        if age is not None:
            # How old the newest write is; whether that is a stall is the rules' to say (the band).
            line3.append(f" · last write {coarse_age(age)} ago")
        if view.backfill < 1.0:
            line3.append(f" · reading history {view.backfill:.0%}", style="italic")
        advice = advise(s, v)
        if advice is not None:
            key = self.keys.get(advice.action or advice.pane or "")
            # The key first: the band is one line, and a long next step is cut at its end.
            nxt = Text.assemble((f"next ({key}): " if key else "next: ", "bold"), (advice.text, "bold" if v.verdict == "Down" else ""))
            # A dead run's next step comes first: it is what the researcher came for; cut where
            # it would push where the run stands off the band (the alerts screen has it whole).
            room = width - len(line3) - 3
            if v.verdict == "Down" and len(nxt) > room >= MIN_ADVICE:
                nxt.truncate(room, overflow="ellipsis")
            line3 = Text.assemble(nxt, " · ", line3) if v.verdict == "Down" else Text.assemble(line3, " · ", nxt)
        return Text("\n").join([line1, line2, line2b, line3])


def _split(text: str, width: int) -> tuple[str, str]:
    """`text` as two lines of at most `width`: cut at a word, the second cut with an ellipsis
    by the caller (the alerts pane has the whole text)."""
    if len(text) <= width:
        return text, ""
    cut = text.rfind(" ", 0, width + 1)
    cut = cut if cut > width // 2 else width
    return text[:cut].rstrip(), text[cut:].lstrip()
