"""The runs table: twenty runs with mixed verdicts on one screen, most troubled
first; Enter opens a run, Esc in it comes back; the fleet's thread leaves the open run alone."""

from __future__ import annotations

import os

import pytest

from runtop.engine.engine import Engine
from runtop.fleet.runs import BACK, Fleet
from runtop.frameworks.discovery import discover
from runtop.playback.fleet import make_fleet
from runtop.sources.processes import ProcessSnapshot
from runtop.tui.fleet_app import FleetApp, short_cause
from tests.tui_helpers import FIXED_MTIME, FixedProcs, make_app

NOW = FIXED_MTIME + 42.0


def read_fleet(root: str, n: int = 20) -> Fleet:
    """Twenty simulated runs, each read to its end and judged on a fixed clock, no processes."""
    runs = make_fleet(root, n, now=FIXED_MTIME)

    def engine(path: str) -> Engine:
        return Engine(discover(path), interval=10.0, disks=False, gpus=False, vllm_url=None, publishing=False,
                      clock=lambda: NOW, proc_sampler=FixedProcs(ProcessSnapshot()))

    fleet = Fleet(runs, make=engine)
    for e in fleet.engines.values():
        assert e is not None
        e.step()
        while not e.live.reader.done():
            e.step()
        e.probe_all()
    fleet.refresh_rows()  # stepped here, not by the fleet's thread
    return fleet


@pytest.fixture
def fleet(tmp_path):
    # The picture shows the runs' names and `where`, never this path: any temp dir will do.
    f = read_fleet(str(tmp_path / "runs"))
    yield f
    f.close()


def test_twenty_runs_sorted_by_trouble_at_120x40(snap_compare, fleet):
    verdicts = [r.verdict for r in fleet.rows()]
    assert verdicts == sorted(verdicts, key=["Down", "cannot read", "Degraded", "Unknown", "Healthy", "Finished"].index)
    assert verdicts.count("Down") >= 5 and "Healthy" in verdicts and "Finished" in verdicts and "Degraded" in verdicts
    assert snap_compare(FleetApp(fleet, clock=lambda: NOW, where="runs/", refresh_s=60), terminal_size=(120, 40))


def test_an_80_column_split_keeps_the_verdict_the_run_and_the_cause(snap_compare, fleet):
    assert snap_compare(FleetApp(fleet, clock=lambda: NOW, where="runs/", refresh_s=60), terminal_size=(80, 24))


async def test_enter_opens_the_run_under_the_cursor(fleet):
    rows = fleet.rows()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "down", "enter")
        await pilot.pause()
    assert app.return_value == rows[2].path


async def test_the_cursor_comes_back_to_the_run_just_left(fleet):
    rows = fleet.rows()
    app = FleetApp(fleet, clock=lambda: NOW, refresh_s=60, select=rows[5].path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == rows[5].path


async def test_esc_in_a_run_opened_from_the_fleet_goes_back_and_alone_does_nothing(fleet):
    path = fleet.rows()[0].path
    app = make_app(path)
    app.fleet = True
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("0")  # zoom a pane: Esc unzooms it first
        await pilot.pause()
        assert app.screen.maximized is not None
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.maximized is None and app.is_running
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value == BACK
    alone = make_app(path)
    async with alone.run_test(size=(120, 40)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
        assert alone.is_running  # not from a fleet: Esc never quits


def test_the_fleet_thread_leaves_the_open_run_to_its_own_view(tmp_path):
    runs = make_fleet(str(tmp_path / "runs"), 3)
    fleet = Fleet(runs, interval=0.0)
    try:
        fleet.open = runs[1]
        fleet.step_due()
        stepped = {p: e.steps_done for p, e in fleet.engines.items() if e is not None}
        assert stepped[runs[1]] == 0 and stepped[runs[0]] == 1 and stepped[runs[2]] == 1
    finally:
        fleet.close()


def test_a_run_that_cannot_be_read_is_a_row_saying_why(tmp_path):
    good = make_fleet(str(tmp_path / "runs"), 1)[0]
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    fleet = Fleet([good, str(empty)])
    try:
        bad = next(r for r in fleet.rows() if r.path == str(empty))
        assert bad.verdict == "cannot read" and bad.cause and fleet.rows()[0] is not None
    finally:
        fleet.close()


def test_the_cause_keeps_its_error_type_and_drops_the_message_when_narrow():
    cause = "trainer died: torch.OutOfMemoryError (CUDA out of memory. Tried to allocate 4.64 GiB.); reported as ChildFailedError"
    assert short_cause(cause, 40) == "trainer died: torch.OutOfMemoryError"
    assert short_cause("inference server (vLLM) died: RuntimeError (CUDA error: an illegal memory access)", 44) == \
        "inference server (vLLM) died: RuntimeError"
    assert short_cause("no log write anywhere for 3h00m", 12) == "no log writ…"


def test_runtop_on_a_directory_of_runs_without_a_terminal_prints_the_table(tmp_path):
    import subprocess
    import sys

    runs = make_fleet(str(tmp_path / "runs"), 4)
    r = subprocess.run([sys.executable, "-m", "runtop", str(tmp_path / "runs")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("verdict") and len(lines) == 5 and lines[1].startswith("Down")
    assert {os.path.basename(p) for p in runs} <= {ln.split()[1] for ln in lines[1:]}


async def test_a_second_later_only_the_changed_cells_are_redrawn_and_the_rows_stay(fleet):
    clock = [NOW]
    app = FleetApp(fleet, clock=lambda: clock[0], refresh_s=60)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one("DataTable")
        first = table.get_row_at(0)
        clock[0] += 60
        app.refill()
        await pilot.pause()
        again = table.get_row_at(0)
        assert str(first[5]) == "42s" and str(again[5]) == "1m42s"  # last write moved on
        assert str(again[1]) == str(first[1]) and table.row_count == 20


def test_a_run_whose_reading_fails_says_so_instead_of_its_old_verdict(tmp_path):
    runs = make_fleet(str(tmp_path / "runs"), 2)
    fleet = Fleet(runs, interval=0.0)
    try:
        fleet.step_due()
        broken = fleet.engines[runs[0]]
        assert broken is not None

        def fail() -> bool:
            raise OSError("Stale file handle")

        broken.step = fail  # type: ignore[method-assign]
        fleet.step_due()
        row = next(r for r in fleet.rows() if r.path == runs[0])
        assert row.verdict == "cannot read" and row.cause == "OSError: Stale file handle"
        assert next(r for r in fleet.rows() if r.path == runs[1]).verdict != "cannot read"
    finally:
        fleet.close()


@pytest.mark.parametrize(
    ("step", "max_steps", "shown"),
    [
        (49391, None, "49391/?"),
        (7, 20, "7/20"),
        (24486, 1000000, "24486/1.0M"),  # cut by the table it read `24486/1`: a run one step long
        (197543, 1000000, "197543/1.0M"),
        (1234567, 9000000, "1.2M/9.0M"),
        (1999999, 2500000, "1.9M/2.5M"),  # rounded down: never more progress than was made
        (None, 500, "-/500"),
    ],
)
def test_the_step_cell_fits_its_column_without_a_misleading_cut(step, max_steps, shown):
    from runtop.tui.fleet_app import COLUMNS, step_text

    assert step_text(step, max_steps) == shown and len(shown) <= dict(COLUMNS)["step"]


def test_a_run_still_reading_its_history_shows_the_cause_its_tail_gave():
    """A 1 GB SkyRL run is Down from its tail at once; its cause must not wait the minute its
    history takes (the cell said only `reading its history (5%)`)."""
    from runtop.fleet.runs import RunRow
    from runtop.tui.fleet_app import cells

    def cause(row: RunRow) -> str:
        return cells(row, NOW, cause_width=60)[-1].plain

    down = RunRow("/r/a", "a", "skyrl", "Down", "no log write anywhere for 1h45m; no run process alive", read=0.05)
    assert cause(down) == "no log write anywhere for 1h45m · history 5% read"
    # Narrow, the cause keeps its words and the progress goes (the summary counts the runs reading).
    assert cells(down, NOW, cause_width=35)[-1].plain == "no log write anywhere for 1h45m"
    assert cause(RunRow("/r/b", "b", "skyrl", "Healthy", "", read=0.4)) == "reading its history (40%)"
    assert cause(RunRow("/r/d", "d", "vllm", "Down", "engine died", read=0.999)) == "engine died · history 99% read"
    assert cause(RunRow("/r/c", "c", "skyrl", "Down", "trainer died: torch.OutOfMemoryError")) == "trainer died: torch.OutOfMemoryError"


def test_a_run_not_yet_read_is_reading_in_the_table_not_empty(tmp_path):
    """Before a run's engine has read and judged its files, its row says it is being read; it
    said "nothing to judge yet: no log lines or metrics read" of a 1 GB run for two seconds
    (seen in tmux), as if its logs were empty. After its first step it is the rules' verdict."""
    from runtop.fleet.runs import row_of
    from runtop.sources.gpu import RecordedProbe
    from tests.tui_helpers import H100

    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    (logs / "orchestrator.log").write_text("14:00:00 SUCCESS Step 1 |   31.0s | Reward 0.5 | Trainable 1/2 (50.0%)\n")
    eng = Engine(discover(str(tmp_path / "run")), gpu=RecordedProbe([H100]), vllm_url=None, processes=False, disks=False)
    try:
        before = row_of(str(tmp_path / "run"), eng)
        eng.step()
        after = row_of(str(tmp_path / "run"), eng)
    finally:
        eng.close()
    assert (before.verdict, before.cause) == ("Unknown", "reading the run's files: judged once the tail is read")
    assert after.verdict == "Healthy" and after.step == 1
