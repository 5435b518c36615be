"""Every view at every size: each demo scenario of each framework at 80×24, 100×30, 120×40,
160×45 and 200×50, checked for what a researcher must never see (tests/screen_check.py): a
pane cut off, drawn over another or off the screen, a column that scrolls; and at 120×40 and
up, where the README says every pane is on screen, every pane there and whole.

One app per scenario, resized through the sizes as a terminal is. The whole matrix is `slow`;
two failing runs (a prime-rl and a SkyRL death, the busiest screens) run at every size always.
`RUNTOP_SHOTS=DIR` keeps each screen as an SVG there, to look at.
"""

from __future__ import annotations

import os

import pytest
from textual.widgets._toast import Toast

from runtop.frameworks import simulated
from runtop.widgets.alerts_pane import AlertsPane
from tests.screen_check import frame_defects, missing_panes
from tests.screen_text import screen_text
from tests.tui_helpers import FIXED_MTIME, FixedProcs, healthy_tree, make_app, settle

SIZES = [(80, 24), (100, 30), (120, 40), (160, 45), (200, 50)]
FULL = (120, 40)  # from here up, the README says, every pane is on screen
SCENARIOS = [(fw.name, s) for fw in simulated() for s in fw.scenarios]
FAST = {("prime-rl", "trainer-oom"), ("skyrl", "sigbus-checkpoint")}


def params():
    for fw, scenario in SCENARIOS:
        marks = () if (fw, scenario) in FAST else (pytest.mark.slow,)
        yield pytest.param(fw, scenario, id=f"{fw}-{scenario}", marks=marks)


async def look(pilot, size: tuple[int, int]) -> None:
    await pilot.resize_terminal(*size)
    await pilot.pause(0.1)
    pilot.app.clear_notifications()  # toasts are checked on their own (below): here, the panes
    pilot.app.refresh_panes()
    await pilot.pause(0.1)
    await pilot.pause()


@pytest.mark.parametrize(("fw", "scenario"), params())
async def test_every_view_of_every_scenario_at_every_size(fw, scenario, tmp_path):
    from runtop.frameworks import get

    root = str(tmp_path / "run")
    get(fw).simulator(root, scenario, max_steps=12).run()
    app = make_app(root, proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)))
    shots = os.environ.get("RUNTOP_SHOTS")
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(pilot)
        problems = []
        for size in SIZES:
            await look(pilot, size)
            if shots:
                os.makedirs(shots, exist_ok=True)
                with open(os.path.join(shots, f"{fw}-{scenario}-{size[0]}x{size[1]}.svg"), "w") as f:
                    f.write(app.export_screenshot())
            problems += [f"{size[0]}x{size[1]}: {d}" for d in frame_defects(app)]
            if size[0] >= FULL[0] and size[1] >= FULL[1]:
                problems += [f"{size[0]}x{size[1]}: {pid} is not on screen" for pid in missing_panes(app)]
            # The logs' number key: zoomed, they fill the screen whatever its size (they kept 8
            # rows at 120×40); in the compact layout they fill its one slot.
            await pilot.press("8")
            await pilot.pause()
            full = size[0] >= FULL[0] and size[1] >= FULL[1]
            logs = app.query_one("#logs").region
            if full and logs.height < size[1] - 2:
                problems.append(f"{size[0]}x{size[1]}: the zoomed logs are {logs.height} rows of {size[1]}")
            problems += [f"{size[0]}x{size[1]} logs zoomed: {d}" for d in frame_defects(app)]
            await pilot.press("escape" if full else "1")
            await pilot.pause()
        assert not problems, "\n".join(problems)


async def test_a_dead_runs_toast_covers_at_most_a_third_of_an_80x24_screen(tmp_path):
    """The trainer's OOM, opened at 80×24: its toast names the death, in at most 8 of 24 rows."""
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "run")
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    app = make_app(root)  # the trainer's process gone: the run is Down, its finding critical
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert toasts, "a critical finding toasts"
        for t in toasts:
            assert t.region.height <= 24 // 3, f"a toast of {t.region.height} rows on a 24-row screen"
        assert "torch.OutOfMemoryError" in screen_text(app)
        assert any("died" in m for m in app.toasts)  # the message whole where tests and `a` read it


async def test_alerts_grow_with_the_rows_they_have(tmp_path):
    """At 200×50 an alert wraps over the band's rows (it was one cut line above empty rows);
    at 80×24 it keeps to the two rows the strip has."""
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "run")
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    app = make_app(root)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        alerts = app.query_one(AlertsPane)
        message = app.monitor.view().verdict.alerts[0].message
        shown = " ".join(line.strip("│ ") for line in screen_text(app).split("\n")[alerts.region.y + 1 : alerts.region.bottom - 1])
        assert "GPU memory ran out" in shown and len(message) > alerts.region.width  # wrapped, whole
        await look(pilot, (80, 24))
        assert alerts.region.height == 4


async def test_alerts_in_full_show_the_errors_own_words_whole(tmp_path):
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "run")
    Simulator(root, scenario="trainer-oom", max_steps=9).run()
    app = make_app(root)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        # The message quotes the OOM cut short; the screen has the sentence to its end.
        assert "GiB is free" in text and "error: " in text


async def test_at_120x40_the_processes_keep_their_names_and_numbers_whole(tmp_path):
    """They were cut to `PRIME-RL:…`, `sle` and `11`: the title now has the room a name needs,
    the numbers their width, and the role column goes first (the title names the role)."""
    from runtop.frameworks.primerl.sim import Simulator
    from tests.tui_helpers import pane

    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=4).run()
    app = make_app(root, proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)))
    async with app.run_test(size=FULL) as pilot:
        await settle(pilot)
        text = pane(app, "procs")
        for whole in ("PRIME-RL::Orchestrator", "PRIME-RL::Trainer", "VLLM::APIServer", "88%", "97%", "30.0G", "4300", "4400"):
            assert whole in text, (whole, text)
        await pilot.press("2")  # zoomed, every column is back: role, state, histories, age
        await pilot.pause()
        text = pane(app, "procs")
        assert "orchestrator" in text and "run" in text and "57m22s" in text


def test_a_short_column_takes_rows_from_the_checkpoint_list_first():
    """The 120×40 right column: 19 rows for panes that want 25. The disk's list gives first,
    down to what it keeps; the processes, GPUs and inference stay whole. A tall column gives
    its spare rows to the pane that can use them (the step table), not to the others."""
    from runtop.tui.fit import Want, heights

    procs, disk, gpus, inference = Want(6, 4, 1), Want(11, 5, 0), Want(4, 3, 2), Want(4, 3, 3)
    assert heights(19, [procs, disk, gpus, inference]) == [6, 5, 4, 4]
    assert heights(16, [procs, disk, gpus, inference]) == [4, 5, 3, 4]  # then the processes, then the GPUs
    assert heights(40, [Want(5, 5, 0, grow=True), Want(6, 6, 2), Want(5, 5, 1)]) == [29, 6, 5]
