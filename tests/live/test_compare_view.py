"""The compare screen, as a researcher with three seeds uses it: in the runs table they mark two
runs with space and press c; both runs' charts are overlaid in their legend's colours with
the latest values and trends below; s smooths the lines; Esc goes back and the runs stop
publishing. The fleet's own thread publishes the views the screen reads."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from runtop.engine.engine import Engine
from runtop.fleet.compare import metrics_of
from runtop.fleet.runs import Fleet
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.sources.processes import ProcessSnapshot
from runtop.tui.compare_screen import CompareScreen
from runtop.tui.fleet_app import FleetApp
from tests.screen_text import screen_text
from tests.tui_helpers import FIXED_MTIME, FixedProcs, freeze_mtimes

NOW = FIXED_MTIME + 42.0


def seed_fleet(root: str, n: int = 3, more: tuple[str, ...] = ()) -> Fleet:
    """Three seeds of one config (and `more` paths), read to their end on a fixed clock; the
    fleet's thread runs."""
    paths = []
    for seed in range(n):
        path = f"{root}/seed-{seed}"
        Simulator(path, scenario="healthy", max_steps=20, seed=seed).run()
        freeze_mtimes(path)  # one age for all: the table orders them by name
        paths.append(path)

    def engine(path: str) -> Engine:
        e = Engine(discover(path), interval=10.0, disks=False, gpus=False, vllm_url=None, publishing=False,
                   clock=lambda: NOW, proc_sampler=FixedProcs(ProcessSnapshot()))
        while not e.live.reader.done() or e.steps_done == 0:
            e.step()
        return e

    fleet = Fleet([*paths, *more], make=engine)
    fleet.refresh_rows()
    fleet.start()
    return fleet


@pytest.fixture
def fleet(tmp_path):
    f = seed_fleet(str(tmp_path / "outputs"))
    yield f
    f.close()


async def until(pilot, ok: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
    await pilot.pause()


def compare_screen(app: FleetApp) -> CompareScreen:
    assert isinstance(app.screen, CompareScreen), type(app.screen)
    return app.screen


def shown(app: FleetApp, n: int) -> bool:
    return isinstance(app.screen, CompareScreen) and len(app.screen.runs) == n


def chart(app: FleetApp, metric: str) -> str:
    content = compare_screen(app)._charts[metric].content
    assert isinstance(content, Text)
    return content.plain


async def test_two_marked_runs_are_overlaid_with_a_legend_and_a_table(fleet):
    rows = fleet.rows()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space", "space", "c")  # space marks and steps down: the first two runs
        await until(pilot, lambda: shown(app, 2))
        screen = compare_screen(app)
        legend = str(screen.query_one("#legend", Static).content)
        table = str(screen.query_one("#table", Static).content)
        assert rows[0].name in legend and rows[1].name in legend and rows[2].name not in legend
        assert rows[0].name in table and rows[1].name in table and rows[2].name not in table
        # A chart per metric the runs log, both runs drawn (two colours) in each.
        assert list(screen._charts) == metrics_of(screen.runs) and {"reward", "entropy", "kl", "step_time_s"} <= set(screen._charts)
        reward = screen._charts["reward"].content
        assert isinstance(reward, Text) and {s.style.color.number for s in reward.spans if s.style and s.style.color} >= {44, 208}
        # Each run's latest reward in the table, as the run's own rows say it.
        for run in screen.runs:
            assert f"{run.latest['reward']:.4f}" in table
        assert fleet.charted == {rows[0].path, rows[1].path}
        assert [fleet.engines[r.path].publishing for r in rows] == [True, True, False]  # type: ignore[union-attr]
        on_screen = screen_text(app)
        assert "reward" in on_screen and "entropy" in on_screen and "smoothing EMA 0 (s)" in on_screen


async def test_the_smoothing_key_changes_the_drawn_series_and_comes_back(fleet):
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, compare=[r.path for r in fleet.rows()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: shown(app, 3))
        raw = chart(app, "reward")
        await pilot.press("s")
        await pilot.pause()
        smooth = chart(app, "reward")
        assert "EMA 0.6" in smooth.splitlines()[0] and "EMA" not in raw.splitlines()[0]
        # Not the title alone: the lines themselves are drawn elsewhere.
        assert smooth.splitlines()[1:] != raw.splitlines()[1:]
        await pilot.press("s")
        await pilot.pause()
        assert "EMA 0.9" in chart(app, "reward") and chart(app, "reward").splitlines()[1:] != smooth.splitlines()[1:]
        await pilot.press("s")
        await pilot.pause()
        assert chart(app, "reward") == raw


async def test_charts_below_the_screen_are_drawn_when_scrolled_to(fleet):
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, compare=[r.path for r in fleet.rows()][:2])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: shown(app, 2))
        screen = compare_screen(app)
        last = list(screen._charts)[-1]
        assert chart(app, "reward") and not str(screen._charts[last].content)  # out of view: not drawn yet
        await pilot.press("end")  # the charts' scroll to its end
        await until(pilot, lambda: bool(str(screen._charts[last].content)))
        assert "─" in chart(app, last) or "no values" in chart(app, last)


async def test_esc_goes_back_to_the_table_and_the_runs_stop_publishing(fleet):
    paths = [r.path for r in fleet.rows()]
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, compare=paths[:2])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: shown(app, 2))
        await pilot.press("enter")  # the table's Enter is not the compare screen's: no run opens
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, CompareScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not any(e.publishing or e.published for e in fleet.engines.values() if e is not None))
        assert not isinstance(app.screen, CompareScreen) and fleet.charted == frozenset()
        assert app.marked == paths[:2]  # the marks stay for the next comparison


async def test_c_with_one_run_marked_says_what_to_do(fleet):
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space", "c")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
        assert any("mark two runs or more" in str(n.message) for n in app._notifications)


async def test_a_marked_run_that_cannot_be_read_is_left_out_and_said(tmp_path):
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    fleet = seed_fleet(str(tmp_path / "outputs"), 2, more=(str(empty),))
    try:
        app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, compare=fleet.paths)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: shown(app, 2))
            assert any("not-a-run: cannot be read, left out" in str(n.message) for n in app._notifications)
            assert "reading" not in str(compare_screen(app).query_one("#legend", Static).content)  # nothing left to wait for
    finally:
        fleet.close()


async def test_metric_columns_show_each_runs_latest_value(fleet):
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, metrics=("reward", "step_time_s"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table: DataTable[Text] = app.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()][-3:] == ["reward", "step time", "cause"]
        for row in fleet.rows():
            assert table.get_cell(row.path, "reward").plain == f"{row.latest['reward']:.4f}"
            assert table.get_cell(row.path, "step_time_s").plain == f"{row.latest['step_time_s']:.2f}"
        assert "cause" in screen_text(app)  # room made for the metrics: the cause is still on screen


def test_compare_screen_of_three_seeds_at_120x40(snap_compare, fleet):
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, compare=[r.path for r in fleet.rows()])

    async def ready(pilot) -> None:
        await until(pilot, lambda: shown(app, 3))

    assert snap_compare(app, terminal_size=(120, 40), run_before=ready)


def test_runtop_compare_in_a_terminal_opens_on_the_compare_screen(tmp_path):
    """`runtop compare A B C` in a real terminal (tmux on a private server): the compare screen
    first, `s` smooths, Esc shows the runs table with the three marked, q quits with 0."""
    import os
    import shlex
    import subprocess
    import sys

    paths = []
    for seed in range(3):
        path = str(tmp_path / "outputs" / f"seed-{seed}")
        Simulator(path, scenario="healthy", max_steps=12, seed=seed).run()
        paths.append(path)
    sock = f"rt-compare-{os.getpid()}-{time.monotonic_ns()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    rc = tmp_path / "rc.txt"
    argv = [sys.executable, "-m", "runtop", "compare", *paths]
    # The pane's size, not one inherited from the test's environment (COLUMNS=80 under pytest).
    shell = f"env -u COLUMNS -u LINES {shlex.join(argv)}; echo $? > {shlex.quote(str(rc))}; sleep 30"
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "40", shell], check=True)

    def wait_for(text: str) -> str:
        deadline = time.monotonic() + 60
        screen = ""
        while text not in screen:
            assert time.monotonic() < deadline, f"{text!r} never shown:\n{screen}"
            time.sleep(0.3)
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout
        return screen

    try:
        screen = wait_for("● seed-2 (step 12)")
        assert "● seed-0 (step 12)" in screen and "smoothing EMA 0 (s)" in screen and "reward" in screen
        subprocess.run([*tmux, "send-keys", "s"], check=True)
        wait_for("reward · EMA 0.6")
        subprocess.run([*tmux, "send-keys", "Escape"], check=True)
        table = wait_for("verdict")
        assert sum(f"● seed-{i}" in table for i in range(3)) == 3
        subprocess.run([*tmux, "send-keys", "q"], check=True)
        deadline = time.monotonic() + 30
        while not rc.exists():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert rc.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
