"""Logs read as in the best log viewers: `/` searches and jumps between the matches in their
context (n/N, "3/17"), `f` filters, `g`/`G` go to the ends, `t 14:05` to a time; the same
search in a record's whole view; and `?` answers in every screen."""

from __future__ import annotations

import re

import pytest

from runtop.tui.alerts_screen import AlertsScreen
from runtop.tui.chart_screen import ChartScreen
from runtop.tui.confirm_screen import ConfirmScreen
from runtop.tui.help_screen import HelpScreen
from runtop.tui.record_screen import RecordScreen
from runtop.widgets.log_search import Matches, at_time, parse_clock
from runtop.widgets.logs_pane import LogsPane
from tests.tui_helpers import BIG, make_app, pane, screen_text, settle


def test_a_search_counts_its_matches_and_steps_round_them():
    lines = ["step 1 ok", "NCCL timeout", "step 2 ok", "nccl retry", "step 3 ok"]
    m = Matches()
    m.find(lines, "nccl")
    assert m.hits == [1, 3] and m.label() == "-/2"
    assert m.nearest(4) == 3 and m.label() == "2/2"  # from the bottom: the newest match above
    assert m.step(-1) == 1 and m.label() == "1/2"
    assert m.step(-1) == 3  # wraps round
    m.refind([*lines, "NCCL again"])  # new lines: the cursor stays on its match
    assert m.hits == [1, 3, 5] and m.label() == "2/3"
    m.find(lines, "absent")
    assert m.nearest(4) is None and m.label() == "no match"


def test_a_time_points_at_the_first_line_written_then_or_after():
    assert parse_clock("14:05") == "14:05:00" and parse_clock("9:05:07") == "09:05:07"
    assert parse_clock("25:00") is None and parse_clock("soon") is None
    times = ["13:59:58", None, "14:04:59", "14:05:01", "14:06:00"]
    assert at_time(times, "14:05:00") == 3 and at_time(times, "13:00:00") == 0 and at_time(times, "15:00:00") is None
    assert at_time(["23:59:00", "00:00:05", "00:01:00"], "23:59:30") == 1  # past midnight is later


def window(app) -> list[str]:
    return [ln for ln in pane(app, "logs").splitlines()[1:-1] if ln.strip("│ ")]


async def test_slash_jumps_between_matches_in_their_context_and_f_filters(simulated):
    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        logs = app.query_one(LogsPane)
        total = len(logs._shown)
        await pilot.press("slash", *"step", "enter")
        await pilot.pause()
        hits = logs.matches.hits
        assert len(hits) >= 3, "the run's log holds few 'step' lines: the test proves nothing"
        # Every line still shown (a search is not a filter), the cursor on the newest match.
        assert len(logs._shown) == total and not logs.follow
        assert logs.cursor_line() is logs._shown[hits[-1]] and "step" in logs.cursor_line().text.lower()
        title = pane(app, "logs").splitlines()[0]
        assert f"/step {len(hits)}/{len(hits)}" in title
        # Its neighbours are on screen around it, lines without the word among them, every row
        # filled (the window was cut to the rows it had while the search box was open).
        assert any("step" not in ln.lower() for ln in window(app))
        assert len(window(app)) == app.query_one("#log-view").size.height
        await pilot.press("n")  # on up, to the next older match
        await pilot.pause()
        assert logs.cursor_line() is logs._shown[hits[-2]]
        assert f"/step {len(hits) - 1}/{len(hits)}" in pane(app, "logs").splitlines()[0]
        drawn = app.query_one("#log-view").content
        assert any("yellow" in str(sp.style) and drawn.plain[sp.start : sp.end].lower() == "step" for sp in drawn.spans)
        await pilot.press("N")  # and back down
        await pilot.pause()
        assert logs.cursor_line() is logs._shown[hits[-1]]
        await pilot.press("g")
        await pilot.pause()
        assert logs.cursor_line() is logs._shown[0]
        await pilot.press("G")
        await pilot.pause()
        assert logs.follow and logs.pick == 0
        await pilot.press("escape")  # the search goes; Esc again does nothing more here
        await pilot.pause()
        assert not logs.matches.needle and "/step" not in pane(app, "logs")
        await pilot.press("f", *"step", "enter")  # the filter keeps only those lines
        await pilot.pause()
        assert logs.filter_text == "step" and all("step" in ln.text.lower() for ln in logs._shown) and len(logs._shown) < total


async def test_t_goes_to_the_first_line_written_at_or_after_a_time(simulated):
    app = make_app(simulated("healthy", max_steps=9))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        logs = app.query_one(LogsPane)
        timed = [(i, ln.time) for i, ln in enumerate(logs._shown) if ln.time]
        times = sorted({t for _, t in timed})
        assert len(times) >= 3
        target = times[len(times) // 2]
        await pilot.press("t", *target[:8], "enter")
        await pilot.pause()
        line = logs.cursor_line()
        first = next(i for i, t in timed if t >= target)
        assert line is logs._shown[first] and not logs.follow
        await pilot.press("t", *"soon", "enter")  # not a time: said, the cursor stays
        await pilot.pause()
        assert logs.cursor_line() is line and any("not a time" in t for t in app.toasts)


async def test_the_record_view_searches_and_jumps_too(simulated):
    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        logs = app.query_one(LogsPane)
        rec_line = next(ln for ln in logs._shown if ln.record is not None and len(ln.record.lines) > 5)
        app.push_screen(RecordScreen(rec_line))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RecordScreen)
        await pilot.press("slash", *"file", "enter")
        await pilot.pause()
        n = len(screen.matches.hits)
        assert n >= 2 and screen.matches.label() == f"1/{n}"
        assert f"/file 1/{n}" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert screen.matches.label() == f"2/{n}"
        await pilot.press("N", "N")
        await pilot.pause()
        assert screen.matches.label() == f"{n}/{n}"  # wrapped round to the last
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and ("n N", "the next match down / back up (wraps); the title counts them: 3/17") in app.screen.rows
        await pilot.press("escape")
        await pilot.press("escape")  # the search goes first
        await pilot.pause()
        assert isinstance(app.screen, RecordScreen) and not screen.matches.needle
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecordScreen)


@pytest.mark.parametrize("opens", ["main", "alerts", "chart", "confirm"])
async def test_question_mark_lists_the_keys_in_every_screen(simulated, opens):
    app = make_app(simulated("healthy", max_steps=5))
    kinds = {"main": None, "alerts": AlertsScreen, "chart": ChartScreen, "confirm": ConfirmScreen}
    keys = {"alerts": "a", "chart": "c"}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        if opens == "confirm":  # a non-destructive action's modal (Cancel focused), as the app opens it
            from runtop.actions.vetted import Plan

            app.push_screen(ConfirmScreen(Plan("open-logs", "open the run's logs", "tail -F logs/*.log")))
            await pilot.pause()
        elif opens != "main":
            await pilot.press(keys[opens])
            await pilot.pause()
            assert isinstance(app.screen, kinds[opens])
        under = app.screen
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and app.screen.rows
        if opens == "main":
            shown = {k for k, _ in app.screen.rows}
            assert {"/", "n", "N", "f", "g", "G", "t"} <= shown
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is under


async def test_the_demo_offers_no_key_that_cannot_act(tmp_path):
    """`runtop demo` advertised `R` with no Launcher window to type into: its run's processes
    are runtop's own children. The keys that type into tmux are not offered there, the next
    step names no key for them, and pressing one says why; `s` (a check-in) still acts."""
    from runtop.frameworks.primerl.sim import Simulator

    for name in ("demo", "real"):
        Simulator(str(tmp_path / name), scenario="trainer-oom", max_steps=9).run()
    app = make_app(str(tmp_path / "demo"))
    app.no_launcher = "the demo's simulated run has no tmux Launcher window"
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "Check-in" in footer and "Resume" not in footer and "Stop" not in footer
        header = pane(app, "header")
        assert "next" in header and not re.search(r"next \([RXTO]\)", header)
        await pilot.press("R")
        await pilot.pause()
        assert any("no tmux Launcher window" in t for t in app.toasts)
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("question_mark")  # the help lists them as not acting here, not as keys
        await pilot.pause()
        rows = dict(app.screen.rows)
        assert "R" not in rows and any(k.startswith("R ") and "not here" in v for k, v in rows.items())
    real = make_app(str(tmp_path / "real"))
    async with real.run_test(size=BIG) as pilot:  # a real run's view keeps them
        await settle(pilot)
        assert "Stop" in screen_text(real).splitlines()[-1] and re.search(r"next \([RXTO]\)", pane(real, "header"))
