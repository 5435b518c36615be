"""Text that fits its room without reading wrong: a line cut between words, never mid-word;
one number format for a metric wherever it shows."""

from __future__ import annotations

import io
import time

import pytest

from runtop.cli.follow import follow
from runtop.engine.snapshot import read_and_judge
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.units import words
from tests.tui_helpers import BIG, make_app, pane, settle


def test_a_long_line_is_cut_between_two_words():
    text = "GPU memory ran out: lower the micro-batch or sequence length (or vLLM's gpu_memory_utilization beside it)"
    cut = words(text, 40)
    assert len(cut) <= 40 and cut.endswith("…")
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] in " ,;:("  # the next character ends a word
    assert words("short", 40) == "short"
    assert words("x" * 50, 10) == "x" * 9 + "…"  # one long word is cut where it must be


@pytest.mark.live
def test_follow_says_why_a_run_is_down_cut_between_words(tmp_path):
    """`runtop follow` off a terminal: one line per look, the reason cut to fit, at a word's end."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    out = io.StringIO()
    follow(discover(root), interval=0.2, deadline=time.monotonic() + 3, out=out)
    line = next(ln for ln in out.getvalue().splitlines() if "Down: " in ln or "Degraded: " in ln)
    reason = line.split(" | ")[2].split(": ", 1)[1]
    _, verdict = read_and_judge(root, processes=False, disks=False)
    full = next(r for r in verdict.reasons if r.startswith(reason[:20]))
    assert reason.endswith("…") and len(full) > 120, line
    shown = reason[:-1]
    assert full.startswith(shown) and full[len(shown)] in " ,;:(", (shown, full)  # cut where a word ends


async def test_a_metric_reads_in_one_format_in_the_sparklines_and_the_step_table(tmp_path):
    """KL once read `1.56e-03` in one place and `0.001380` in another: the step table now takes
    each column's format from the same steps the sparklines draw, so the two agree."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=30).run()
    app = make_app(root)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        metrics, steps = pane(app, "metrics"), pane(app, "steps")
        kl_spark = next(ln for ln in metrics.splitlines() if "│ KL " in ln)
        head = next(ln for ln in steps.splitlines() if " KL " in ln)
        col = head.index(" KL ") + 3
        kl_cells = [ln[col - 9 : col + 1].strip() for ln in steps.splitlines()[2:] if ln[2:4].strip().isdigit()]
        exponent = "e-0" in kl_spark
        assert kl_cells and all(("e-0" in c) == exponent for c in kl_cells if c), (kl_spark, kl_cells)
