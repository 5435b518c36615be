"""The runs table keeps up with a researcher's day: a run started after `runtop DIR` opened is
in the table at its next refresh, a run whose directory was removed leaves; `/` narrows the
rows, `s` sorts them by another column, `?` lists the keys; the last write is shown at every
width that fits it, and a run opened from the table says its directory beside its config's name."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

from textual.widgets import DataTable

from runtop.engine.engine import Engine
from runtop.fleet.runs import Fleet, dirs_of_runs
from runtop.frameworks import get as get_framework
from runtop.frameworks.discovery import discover
from runtop.playback.fleet import make_fleet
from runtop.sources.processes import ProcessSnapshot
from runtop.tui.fleet_app import FleetApp
from runtop.tui.help_screen import HelpScreen
from tests.tui_helpers import FIXED_MTIME, FixedProcs, make_app, pane

NOW = FIXED_MTIME + 42.0


def engine(path: str) -> Engine:
    return Engine(discover(path), interval=10.0, disks=False, gpus=False, vllm_url=None, publishing=False,
                  clock=lambda: NOW, proc_sampler=FixedProcs(ProcessSnapshot()))


def shown_paths(app: FleetApp) -> list[str]:
    table: DataTable[object] = app.query_one(DataTable)
    return [str(k.value) for k in table.rows]


async def test_a_run_started_after_the_table_opened_appears_at_the_next_refresh_and_a_removed_one_leaves(tmp_path):
    root = str(tmp_path / "runs")
    runs = make_fleet(root, 3)
    assert dirs_of_runs([root]) == [root]
    fleet = Fleet(runs, make=engine, roots=[root], rescan_s=0.2)
    fleet.start()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=0.3)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert len(shown_paths(app)) == 3
            late = os.path.join(root, "seed-4")
            get_framework("prime-rl").simulator(late, "healthy", stop_after=2).run()
            os.makedirs(os.path.join(root, "notes"))  # a directory that is no run stays out
            deadline = time.monotonic() + 5
            while late not in shown_paths(app) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert late in shown_paths(app) and len(shown_paths(app)) == 4
            assert "4 runs" in str(app.query_one("#summary").render())
            shutil.rmtree(runs[0])
            deadline = time.monotonic() + 5
            while runs[0] in shown_paths(app) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert runs[0] not in shown_paths(app) and len(shown_paths(app)) == 3
    finally:
        fleet.close()


async def test_r_looks_for_new_runs_at_once(tmp_path):
    root = str(tmp_path / "runs")
    fleet = Fleet(make_fleet(root, 2), make=engine, roots=[root], rescan_s=3600)
    fleet.start()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=3600)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            late = os.path.join(root, "late")
            get_framework("prime-rl").simulator(late, "healthy", stop_after=2).run()
            await pilot.pause()
            assert late not in shown_paths(app)  # an hour to the next look by itself
            await pilot.press("r")
            deadline = time.monotonic() + 4
            while late not in shown_paths(app) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert late in shown_paths(app)
    finally:
        fleet.close()


async def test_slash_filters_the_rows_and_esc_shows_them_all_again(tmp_path):
    runs = make_fleet(str(tmp_path / "runs"), 8)
    fleet = Fleet(runs, make=engine)
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"skyrl")
        await pilot.pause()
        kept = shown_paths(app)
        assert kept and all("skyrl" in os.path.basename(p) for p in kept) and len(kept) < 8
        assert f"{len(kept)} of 8 runs matching /skyrl" in str(app.query_one("#summary").render())
        await pilot.press("enter")  # the filter stays, the table takes the keys again
        await pilot.pause()
        assert shown_paths(app) == kept and app.query_one(DataTable).has_focus
        await pilot.press("escape")
        await pilot.pause()
        assert len(shown_paths(app)) == 8
    fleet.close()


async def test_s_sorts_by_the_next_column_and_the_cursor_stays_on_its_run(tmp_path):
    runs = make_fleet(str(tmp_path / "runs"), 8)
    fleet = Fleet(runs, make=engine)
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "down")
        on = shown_paths(app)[2]
        await pilot.press("s")
        await pilot.pause()
        names = [os.path.basename(p) for p in shown_paths(app)]
        assert app.sort == "run" and names == sorted(names, key=str.lower)
        assert "sorted by run" in str(app.query_one("#summary").render())
        assert shown_paths(app)[app.query_one(DataTable).cursor_row] == on
        await pilot.press("s")  # last write: the newest first
        await pilot.pause()
        writes = [fleet._rows[p].last_write or 0.0 for p in shown_paths(app)]
        assert writes == sorted(writes, reverse=True)
    fleet.close()


async def test_question_mark_lists_the_tables_keys(tmp_path):
    fleet = Fleet(make_fleet(str(tmp_path / "runs"), 2), make=engine)
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = [k for k, _ in app.screen.rows]
        assert {"/", "s", "r", "Enter", "?"} <= set(keys)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
    fleet.close()


async def test_an_80_column_table_still_shows_each_runs_last_write(tmp_path):
    fleet = Fleet(make_fleet(str(tmp_path / "runs"), 3, now=FIXED_MTIME), make=engine)
    for e in fleet.engines.values():
        assert e is not None
        e.step()
    fleet.refresh_rows()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table: DataTable[object] = app.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()][:3] == ["verdict", "run", "last write"]
        assert str(table.get_cell_at((0, 2))).strip() == "42s"
    fleet.close()


async def test_a_run_opened_from_the_table_names_its_directory_beside_its_configs_name(tmp_path):
    """Every simulated run's config names it `reverse-text`: the header says which directory this is."""
    run = make_fleet(str(tmp_path / "runs"), 1)[0]
    app = make_app(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        head = pane(app, "header").splitlines()[0]
    name = app.monitor.view().state.run_name
    assert name and name != os.path.basename(run)
    assert name in head and os.path.basename(run) in head
