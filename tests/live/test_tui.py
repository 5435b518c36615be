"""The TUI on simulated runs: what each pane says, for healthy and failing runs, and its keys."""

from __future__ import annotations

import os

from runtop.frameworks.skyrl.sim import RUN_NAME as SKYRL_RUN
from runtop.sources.gpu import GpuSnapshot
from runtop.sources.processes import ProcessSnapshot, ProcInfo
from runtop.tui.chart_screen import ChartScreen
from runtop.tui.help_screen import HelpScreen
from runtop.widgets.logs_pane import LogsPane
from tests.screen_text import screen_text
from tests.tui_helpers import BIG, FIXED_MTIME, FixedProcs, make_app, pane, settle, shown_after


async def test_a_run_that_ended_normally_reads_finished_everywhere(simulated):
    app = make_app(simulated("healthy", max_steps=6))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        head = pane(app, "header")
        assert "Finished" in head and "finished at step 6" in head and "step 6/6" in head and "last write 40s ago" in head
        steps = pane(app, "steps")
        assert all(f"\n│ {s} " in steps for s in range(1, 7))
        assert "reward" in pane(app, "metrics") and "entropy" in pane(app, "metrics")
        assert "reward>0" in pane(app, "rollouts")
        assert "from the log's stat line" in pane(app, "inference")
        gpus = pane(app, "gpus")
        # Recorded NVML readings, mapped to the run's roles by pid.
        assert "97%" in gpus and "inference" in gpus and "idle" in gpus
        assert "no alerts" in pane(app, "alerts")


async def test_the_trainer_dies_of_oom_and_runtop_says_down_naming_it(simulated):
    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        head = pane(app, "header")
        assert "Down" in head and "trainer died: torch.OutOfMemoryError" in head
        assert "down" in pane(app, "alerts")
        # The fixed process reading has the trainer gone while the others run.
        procs = pane(app, "procs")
        assert "trainer missing" in procs and "PRIME-RL::Orchestrator" in procs


async def test_the_inference_engine_dies_while_the_trainer_waits(simulated):
    t0 = FIXED_MTIME
    tree = ProcessSnapshot(
        procs=[
            ProcInfo(4300, t0 - 3400, 1, "PRIME-RL::Orchestrator", "orchestrator", "sleeping", 1.0, 3 << 30, 0),
            ProcInfo(4400, t0 - 3400, 1, "PRIME-RL::Trainer", "trainer", "sleeping", 0.0, 20 << 30, 0),
        ],
        missing=["inference"],
    )
    app = make_app(simulated("inference-death", max_steps=9), proc_sampler=FixedProcs(tree))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        head = pane(app, "header")
        assert "Down" in head and "inference server (vLLM) died: CUDAIllegalMemoryAccess" in head
        assert "inference missing" in pane(app, "procs")


async def test_a_partial_checkpoint_is_marked_in_the_disk_pane(simulated):
    app = make_app(simulated("partial-checkpoint", max_steps=9), disk_pressure=True)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        disk = pane(app, "disk")
        assert "step_2" in disk and "✓ complete" in disk
        assert "✗" in disk and "in progress or interrupted" in disk
        # Fixed readings: /dev/shm filling, a core dump present; the alerts say so.
        assert "/dev/shm" in disk and "core dumps ×1" in disk
        alerts = pane(app, "alerts")
        assert "root, output dir is 92% full" in alerts and "core dump" in alerts


async def test_skyrl_sigbus_save_env_calls_and_agent_gauges(skyrl_run):
    root = skyrl_run("sigbus-checkpoint", max_steps=6, autoretry=False)
    app = make_app(os.path.join(root, "logs", f"{SKYRL_RUN}.log"))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        head = pane(app, "header")
        assert "skyrl" in head and "Down" in head and "SIGBUS" in head and "save_checkpoints" in head
        disk = pane(app, "disk")
        assert "global_step_2" in disk and "global_step_4" in disk and "common.pt" in disk
        env = pane(app, "env")
        assert "slow (>180s)" in env and any(tool in env for tool in ("advanced_web_search", "query_ensembl", "query_clinvar", "gget.info"))
        rollouts = pane(app, "rollouts")
        assert "ft pass" in rollouts and "gt pass" in rollouts and "format" in rollouts


async def test_no_nvml_is_one_line_and_a_failing_probe_stays_in_its_pane(simulated):
    class NoGpu:
        def read(self) -> GpuSnapshot:
            return GpuSnapshot(error="no NVML: the NVIDIA driver library (libnvidia-ml.so) is not installed")

    class Broken:
        def read(self) -> GpuSnapshot:
            raise RuntimeError("boom")

    root = simulated("healthy", max_steps=3)
    for probe, expected in ((NoGpu(), "libnvidia-ml.so) is not installed"), (Broken(), "gpu probe failed: RuntimeError: boom")):
        app = make_app(root, gpu=probe)
        async with app.run_test(size=BIG) as pilot:
            await settle(pilot)
            assert expected in pane(app, "gpus")
            assert "Finished" in pane(app, "header") and "step 3/3" in pane(app, "header")


async def test_compact_layout_switches_its_one_pane_with_number_keys(simulated):
    """At 80×24 one pane shares the screen with the header, sparklines and alerts: the logs
    while the run is Down (the traceback is what to read), until a number key picks another."""
    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "Down" in text and "metrics" in text and "alerts" in text and "╭─ logs" in text
        assert "torch.OutOfMemoryError" in pane(app, "logs")
        assert "processes" not in text and "╭─ steps" not in text
        await pilot.press("1")
        await pilot.pause()
        assert "╭─ steps" in screen_text(app)
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "╭─ processes" in text and "╭─ steps" not in text
        await pilot.press("5")
        await pilot.pause()
        assert "╭─ disk" in screen_text(app)


async def test_number_keys_zoom_a_pane_on_a_large_screen(simulated):
    app = make_app(simulated("healthy", max_steps=3))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await pilot.pause()
        assert app.screen.maximized is app.query_one("#disk")
        # A zoomed pane takes the whole screen, not its natural height.
        assert app.query_one("#disk").region.height >= 45
        await pilot.press("5")
        await pilot.pause()
        await pilot.press("8")
        await pilot.pause()
        logs = app.query_one("#logs")
        assert app.screen.maximized is logs and logs.region.height >= 45
        assert len([ln for ln in pane(app, "logs").splitlines() if ln.strip("│ ")]) > 12
        await pilot.press("8")
        await pilot.pause()
        assert app.screen.maximized is None


async def test_logs_level_filter_search_and_pause(simulated):
    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        logs = app.query_one(LogsPane)
        await pilot.press("l", "l", "l")  # ALL → INFO → WARNING → ERROR
        await pilot.pause()
        text = pane(app, "logs")
        assert "ERROR+" in text and "Fatal error in train" in text and "rollout done" not in text
        await pilot.press("l")
        await pilot.press("f")  # the filter: only the lines that hold the text (what `/` did before it jumped)
        await pilot.press(*"OutOfMemory", "enter")
        await pilot.pause()
        text = pane(app, "logs")
        assert "filter OutOfMemory" in text and "torch.OutOfMemoryError" in text and "Starting" not in text
        # The matches are highlighted, Esc clears the filter, `/` opens empty.
        drawn = app.query_one("#log-view").content
        assert any("yellow" in str(span.style) and drawn.plain[span.start : span.end].lower() == "outofmemory" for span in drawn.spans)
        await pilot.press("escape")
        await pilot.pause()
        assert "filter OutOfMemory" not in pane(app, "logs") and logs.filter_text == ""
        await pilot.press("slash")
        await pilot.pause()
        assert app.query_one("#log-search").value == ""
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        assert not logs.follow and "paused" in pane(app, "logs")


async def test_help_and_chart_screens(simulated):
    app = make_app(simulated("healthy", max_steps=5))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "Quit" in text and "0-9" in text and "Search logs" in text
        await pilot.press("escape")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ChartScreen)
        assert "reward by step (5 steps)" in screen_text(app)
        await pilot.press("m")
        await pilot.pause()
        assert "entropy by step" in screen_text(app)


async def test_the_app_follows_a_live_run(tmp_path):
    """Steps appear as the simulator writes them, with no key pressed."""
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "live")
    sim = Simulator(root, scenario="healthy", max_steps=40, speed=400)
    sim.run(until=sim.START + 40)
    app = make_app(root, fixed=False, processes=False, disks=False, interval=0.2)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        first = app.monitor.view().state.trainer_step or 0
        rest = [a for a in sim.script() if a[0] > sim.START + 40]
        for _at, act in rest[: len(rest) // 2]:
            act()
        # What the screen shows is the engine's newest published view.
        shown = first
        for _ in range(60):
            await pilot.pause(0.1)
            shown = app.monitor.view().state.trainer_step or 0
            if shown > first + 5 and f"step {shown}/40" in pane(app, "header"):
                break
        assert shown > first + 5
        assert f"step {shown}/40" in pane(app, "header")


async def test_a_new_critical_finding_toasts_and_rings(tmp_path):
    """The run is fine when runtop opens; then the trainer dies of OOM: a toast and the bell."""
    from runtop.frameworks.primerl.sim import Simulator

    root = str(tmp_path / "run")
    sim = Simulator(root, scenario="trainer-oom", max_steps=9)
    script = list(sim.script())
    oom_at = next(i for i, (at, act) in enumerate(script) if "trainer_oom" in repr(act) or at > sim.START + 60)
    for _at, act in script[:oom_at]:
        act()
    app = make_app(root, fixed=False, processes=False, disks=False, interval=0.2)
    rings = []
    app.bell = lambda: rings.append(1)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        assert "Down" not in pane(app, "header")
        for _at, act in script[oom_at:]:
            act()
        for _ in range(50):
            await pilot.pause(0.1)
            if rings:
                break
        assert rings, "no bell for the new critical finding"
        assert any("trainer died" in n for n in app.toasts)


async def test_s_appends_a_check_in(simulated):
    root = simulated("healthy", max_steps=3)
    app = make_app(root)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        await pilot.press("s")
        path = os.path.join(root, "STATUS.md")
        for _ in range(40):
            await pilot.pause(0.05)
            if os.path.exists(path):
                break
        assert "**Health**: Finished" in open(path).read()


async def test_the_trainers_numbers_for_a_step_show_while_the_orchestrator_is_a_step_ahead(simulated):
    """The orchestrator runs a step ahead (the normal async case), so the trainer's
    loss for step N lands in the row before the last; it must show at the next repaint, not
    two steps later."""
    from runtop.parsers.events import ORCHESTRATOR, TRAINER, StepMetrics

    app = make_app(simulated("healthy", max_steps=9, stop_after=4))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        await shown_after(pilot, StepMetrics(ORCHESTRATOR, 5, {"reward": 0.7}, origin="log", time="14:09:00"))
        assert "\n│ 5 " in pane(app, "steps")
        await shown_after(pilot, StepMetrics(TRAINER, 4, {"loss": 0.0777}, origin="metrics", time="14:09:05"))
        assert "0.0777" in pane(app, "steps")


async def test_a_stale_run_rings_once_however_many_polls_it_stays_stale(simulated, monkeypatch):
    """A silent pod once rang the bell and stacked a toast on every refresh (the stall
    message carries its growing duration). Kept open for 60 polls: one toast, one bell."""
    import itertools
    import time as _time

    from tests.tui_helpers import FixedProcs

    root = simulated("healthy", max_steps=9, stop_after=4)
    hour_ago = _time.time() - 3600
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (hour_ago, hour_ago), follow_symlinks=False)
    import runtop.tui.app

    monkeypatch.setattr(runtop.tui.app, "MIN_STEP_S", 0.05)  # 60 polls in seconds, not a quarter minute
    tick = itertools.count()
    t0 = _time.time()
    tree = ProcessSnapshot(procs=[
        ProcInfo(4242, t0 - 7200, 1, "VLLM::APIServer", "inference", "sleeping", 0.0, 9 << 30, 0),
        ProcInfo(4300, t0 - 7200, 1, "PRIME-RL::Orchestrator", "orchestrator", "sleeping", 0.0, 3 << 30, 0),
        ProcInfo(4400, t0 - 7200, 1, "PRIME-RL::Trainer", "trainer", "sleeping", 0.0, 20 << 30, 0),
    ], taken_at=t0)
    # Every reading of the clock is 5 s later: the stall's text changes from poll to poll.
    app = make_app(root, fixed=False, disks=False, interval=0.05, proc_sampler=FixedProcs(tree), clock=lambda: t0 + 5 * next(tick))
    rings = []
    app.bell = lambda: rings.append(1)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        start = app.monitor.steps_done
        while app.monitor.steps_done < start + 60:
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        stall = [a for a in app.monitor.view().verdict.alerts if a.rule == "stalled"]
        assert stall and stall[0].severity == "critical"
        assert len([t for t in app.toasts if "no log write anywhere" in t]) == 1, app.toasts
        assert rings == [1]


async def test_the_layout_follows_every_resize_both_ways(simulated):
    """Resizing the tmux pane is the main use; the layout was one resize behind
    (200×50 → 80×24 kept the full layout squeezed; 80×24 → 130×45 kept the compact one)."""
    from tests.tui_helpers import healthy_tree

    app = make_app(simulated("healthy", max_steps=9, stop_after=4), proc_sampler=FixedProcs(healthy_tree(FIXED_MTIME)))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        assert "Healthy" in pane(app, "header")
        assert not app.screen.has_class("-compact")
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.1)
        assert app.screen.has_class("-compact")
        assert "╭─ steps" in screen_text(app)  # a healthy run's compact slot: the steps
        await pilot.resize_terminal(130, 45)
        await pilot.pause(0.1)
        assert not app.screen.has_class("-compact")
        assert "╭─ processes" in screen_text(app)
        await pilot.resize_terminal(119, 45)
        await pilot.pause(0.1)
        assert app.screen.has_class("-compact")


async def test_ctrl_c_quits_the_palette_holds_runtops_commands_and_help_lists_navigation(simulated):
    """`ctrl+c` once did not quit, the palette held none of runtop's commands, `?` left
    out the navigation keys and was cut at 80×24."""
    from runtop.tui.keys import help_rows, palette_entries

    titles = [t for t, _h, _a in palette_entries()]
    assert "Zoom the disk pane" in titles and "Chart" in titles and "Resume" in titles and "Help" in titles
    assert any(k == "PgUp PgDn" for k, _d in help_rows()) and any(k == "ctrl+c" for k, _d in help_rows())
    app = make_app(simulated("healthy", max_steps=3))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Zoom the disk pane" in commands and "Quit" in commands
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.return_code is None  # still running
        await pilot.press("ctrl+c")
        await pilot.pause(0.2)
        assert app.return_code is not None  # ctrl+c asked the app to exit


def test_the_chart_marks_whole_steps_a_round_stride_apart():
    """The chart's x axis once had ticks at step 1.75."""
    from runtop.widgets.render import step_ticks

    assert step_ticks(1, 4, 8) == [1, 2, 3, 4]
    assert step_ticks(1, 100, 8) == [1, 20, 40, 60, 80, 100]
    assert all(isinstance(t, int) for t in step_ticks(3, 9137, 12)) and len(step_ticks(3, 9137, 12)) <= 13


async def test_enter_shows_every_alert_whole(simulated):
    """Alert text and its evidence were once cut to one line at every size. Enter (or
    `a`) shows each alert whole: message, cause, phase, evidence, since, and the next step."""
    from runtop.tui.alerts_screen import AlertsScreen

    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, AlertsScreen)
        text = screen_text(app)
        assert "inference, launcher, orchestrator" in text  # the message's end, cut in the alerts pane
        assert "cause: torch.OutOfMemoryError" in text and "evidence: logs/attempt_1/trainer.log" in text and "next (T): lower trainer.model.seq_len" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AlertsScreen)


async def test_enter_on_a_log_line_shows_its_traceback_whole_and_w_wraps(simulated):
    """The Logs pane shows a traceback's first and last two lines, each cut at the
    pane's edge. Focused, it has a cursor; Enter opens that line's record whole (every line
    the parser kept, where it came from) and `w` wraps long lines in place."""
    from runtop.tui.record_screen import RecordScreen

    app = make_app(simulated("trainer-oom", max_steps=9))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        logs = app.query_one(LogsPane)
        text = pane(app, "logs")
        assert "more lines (Enter: whole record)" in text  # the traceback is folded in the pane
        app.query_one("#log-view").focus()
        await pilot.pause()
        for _ in range(40):  # up to the folded traceback's first line
            line = logs.cursor_line()
            if line is not None and line.text.startswith("  Traceback"):
                break
            await pilot.press("up")
        assert not logs.follow  # moving the cursor back paused the tail
        rec = logs.cursor_line().record
        assert rec is not None and rec.origin.startswith("logs/") and " line " in rec.origin
        folded = [ln.text for ln in logs._shown if ln.record is rec]
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, RecordScreen)
        shown = screen_text(app)
        hidden = [t for t in rec.lines if t.strip() and not any(t.strip()[:40] in f for f in folded)]
        assert hidden, "the pane folded nothing: the test proves nothing"
        assert all(t.strip()[:40] in shown for t in hidden[:3])  # lines the pane folded away are here
        assert rec.origin in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecordScreen)
        await pilot.press("end")  # End follows again
        await pilot.pause()
        assert logs.follow
        await pilot.press("w")
        await pilot.pause()
        assert logs.wrap and "wrapped" in pane(app, "logs")
        drawn = app.query_one("#log-view").content
        assert not drawn.no_wrap


async def test_every_logged_metric_has_a_sparkline_when_zoomed_and_the_chart_picks_any(simulated):
    """The metrics pane showed a fixed seven and the chart cycled through those.
    Now the grid holds every number the run logs (the framework's extras and the step phases
    too), says how many it cannot fit, zooms with 0, and the chart's picker lists them all."""
    from textual.widgets import OptionList

    app = make_app(simulated("healthy", max_steps=6))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        text = pane(app, "metrics")
        assert "reward" in text and "more: 0 zooms" in text and "trainable_frac" not in text
        await pilot.press("0")
        await pilot.pause(0.2)
        text = pane(app, "metrics")
        # Extras, the other known metrics, and the phases' times: each with its own line.
        for name in ("reward", "mfu", "throughput tok s", "trainable_frac", "time/forward_backward"):
            assert name in text, name
        assert "more:" not in text
        await pilot.press("0")
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ChartScreen)
        picker = app.screen.query_one(OptionList)
        ids = [picker.get_option_at_index(i).id for i in range(picker.option_count)]
        assert ids[:2] == ["reward", "entropy"] and "trainable_frac" in ids and "time/forward_backward" in ids
        for _ in range(ids.index("trainable_frac")):
            await pilot.press("down")
        await pilot.pause(0.2)
        assert "trainable_frac by step (6 steps)" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.metric == "trainable_frac"  # the chart reopens on it
