"""The screen reads frozen views: the engine writes its state on its own thread
and publishes copies; a view, once handed out, never changes under the pane drawing it."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.sources.gpu import RecordedProbe
from runtop.state.run import RunState
from runtop.view.publish import STATE_SLICES
from runtop.view.view import Slice
from tests.tui_helpers import BIG, H100, make_app, pane, settle


def _played(tmp_path, max_steps: int = 12):
    """A run written up to its first steps, with the rest of its script still to play."""
    sim = Simulator(str(tmp_path / "run"), scenario="healthy", max_steps=max_steps, stop_after=max_steps - 1)
    script = iter(sim.script())

    def play(steps: int) -> None:
        # Play actions until the trainer has written `steps` more steps.
        target = sim_steps(sim) + steps
        for _at, act in script:
            act()
            if sim_steps(sim) >= target:
                return

    return sim, play


def sim_steps(sim: Simulator) -> int:
    try:
        with open(f"{sim.root}/logs/attempt_1/trainer.log", encoding="utf-8") as f:
            return sum(1 for line in f if "SUCCESS" in line and "| Loss" in line)
    except FileNotFoundError:
        return 0


def _engine(root: str) -> Engine:
    return Engine(discover(root), gpu=RecordedProbe([H100]), vllm_url=None, processes=False, disks=False)


def _read_all(eng: Engine) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        eng.step()
        if eng.live.reader.done():
            break
    eng.step()


def test_every_state_field_belongs_to_exactly_one_slice():
    """A field left out would never reach the screen (and one in two slices would be copied twice)."""
    named = [n for names in STATE_SLICES.values() for n in names]
    fields = [f.name for f in dataclasses.fields(RunState)]
    assert sorted(named) == sorted(fields)


def test_a_published_view_does_not_change_while_the_engine_reads_on(tmp_path):
    """The run writes three more steps after the screen took its view: the view it holds still
    shows the old run, and the next view shows the new steps."""
    sim, play = _played(tmp_path)
    play(3)
    eng = _engine(sim.root)
    try:
        _read_all(eng)
        old = eng.view()
        steps, tail, seq = list(old.state.step_keys()), old.logs.lines, old.logs.seq
        last = old.state.last_row()
        assert steps and last is not None and last.trainer
        trainer_before = dict(last.trainer)
        play(3)
        _read_all(eng)
        new = eng.view()
        assert old.state.step_keys() == steps and old.logs.lines == tail and old.logs.seq == seq
        assert new.logs.seq > seq and len(new.logs.lines) > 0
        assert old.state.last_row().trainer == trainer_before
        assert len(new.state.step_keys()) >= len(steps) + 3
        assert new.state is not eng.state and old.state is not eng.state
        assert new.versions[Slice.STEPS] > old.versions[Slice.STEPS]
        assert new.versions[Slice.LOGS] > old.versions[Slice.LOGS]
    finally:
        eng.close()


def test_what_did_not_change_is_shared_not_copied(tmp_path):
    """A 100k-step run must not be copied at every poll: rows nobody wrote are the previous
    view's own objects; only the newest rows are new copies."""
    sim, play = _played(tmp_path, max_steps=16)
    play(6)
    eng = _engine(sim.root)
    try:
        _read_all(eng)
        old = eng.view()
        play(2)
        _read_all(eng)
        new = eng.view()
        first = old.state.step_keys()[0]
        assert new.state.steps[first] == old.state.steps[first]
        newest = new.state.step_keys()[-1]
        assert newest not in old.state.steps
        # No checkpoint was written between the two views: the slice is the same object.
        if new.versions[Slice.CHECKPOINTS] == old.versions[Slice.CHECKPOINTS]:
            assert new.state.checkpoints is old.state.checkpoints
        eng.refresh_view()
        again = eng.view()
        assert again.versions[Slice.STEPS] == new.versions[Slice.STEPS] and again.state.steps is new.state.steps
    finally:
        eng.close()


def test_a_view_shares_the_history_s_blocks_and_the_engine_copies_only_the_one_it_writes():
    """A 100k-step run is not copied at every view: a frozen history holds the same column
    blocks; the next write copies the one block it lands in, and the older view never sees it."""
    from runtop.parsers.events import ORCHESTRATOR, StepMetrics
    from runtop.state.run import RunState
    from runtop.view.publish import Publisher

    s, pub = RunState(), Publisher()
    for k in range(1, 3001):
        s.apply(StepMetrics(ORCHESTRATOR, k, {"reward": k / 1000}), "o")
    old = pub.freeze(s)
    s.apply(StepMetrics(ORCHESTRATOR, 3001, {"reward": 9.0}), "o")
    s.apply(StepMetrics(ORCHESTRATOR, 5, {"seq_len": 800.0}), "o")
    new = pub.freeze(s)
    old_blocks, new_blocks = old.steps.blocks(), new.steps.blocks()
    assert len(new_blocks) == len(old_blocks) == 3
    assert new_blocks[1] is old_blocks[1]  # nobody wrote there
    assert new_blocks[0] is not old_blocks[0] and new_blocks[2] is not old_blocks[2]
    assert 3001 not in old.steps and old.steps[5].rollout == {"reward": 0.005}
    assert new.steps[3001].value("reward") == 9.0 and new.steps[5].rollout == {"reward": 0.005, "seq_len": 800.0}


async def test_the_screen_repaints_while_the_engine_holds_its_lock(simulated):
    """The screen never waits on the disk. The engine's lock is held (as during a
    read of a 64 MB burst) and a key that repaints is answered anyway."""
    app = make_app(simulated("healthy", max_steps=9, stop_after=4))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with app.monitor.lock:
                held.set()
                release.wait(10)

        t = threading.Thread(target=hold)
        t.start()
        try:
            assert held.wait(5)
            started = time.monotonic()
            await pilot.press("r")
            await pilot.pause()
            app.refresh_panes()
            assert time.monotonic() - started < 2.0
            assert "step 4/9" in pane(app, "header")
        finally:
            release.set()
            t.join()


async def test_a_pane_repaints_when_a_slice_it_reads_moves_and_not_otherwise(simulated):
    """The disk pane reads disks and checkpoints: a new number in a step row alone does not
    repaint it; the step table, which reads steps, repaints."""
    from runtop.parsers.events import ORCHESTRATOR, StepMetrics

    app = make_app(simulated("healthy", max_steps=9, stop_after=4))
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        disk = app.query_one("#disk")
        steps = app.query_one("#steps")
        # Under the engine's lock, so no probe reading lands between the two views.
        with app.monitor.lock:
            before = app.monitor.refresh_view()
            disk.update_view(before)
            steps.update_view(before)
            app.monitor.state.apply(StepMetrics(ORCHESTRATOR, 4, {"reward": 0.777}, origin="metrics", time="14:10:00"))
            after = app.monitor.refresh_view()
            assert after.versions[Slice.STEPS] > before.versions[Slice.STEPS]
            moved = {s for s in Slice if after.versions[s] != before.versions[s]}
            assert disk.update_view(after) is False, moved
            assert steps.update_view(after) is True
        await pilot.pause()
        assert "0.777" in pane(app, "steps"), pane(app, "steps")


def test_the_backfilled_history_taking_over_is_published_whole(tmp_path):
    """A big log is shown from its tail first, then the history read behind it takes over:
    the next view holds every step, not the rows the tail's state had."""
    from runtop.engine.live import LiveRun
    from tests.helpers import long_orchestrator_log

    root = long_orchestrator_log(tmp_path)
    layout = discover(root)
    eng = Engine(layout, run=LiveRun(layout, tail_bytes=64 * 1024, poll=True), gpu=RecordedProbe([H100]), vllm_url=None, processes=False, disks=False)
    try:
        eng.step()
        assert len(eng.view().state.steps) < 3000  # the recent past first
        deadline = time.monotonic() + 30
        while eng.live.backfill_progress() < 1.0 and time.monotonic() < deadline:
            eng.step()
            time.sleep(0.02)
        eng.step()
        shown = eng.view()
        assert len(shown.state.steps) == 3000 and shown.state.steps[1].value("reward") == 0.5 and shown.backfill == 1.0
    finally:
        eng.close()


def test_the_first_frames_of_a_big_run_never_say_nothing_was_read(tmp_path, monkeypatch):
    """The first read of a run's tail takes several slices, and a view is published between
    them: those frames show the steps read so far, so their verdict must not be the one judged
    before anything was read ("nothing to judge yet: no log lines or metrics read", seen in
    tmux over step 32083 of a 1 GB run). They say the tail is being read; once it is, the
    verdict is the rules' own."""
    import runtop.engine.engine as engine_mod
    from runtop.engine.live import LiveRun
    from runtop.rules.advice import advise
    from tests.helpers import long_orchestrator_log

    monkeypatch.setattr(engine_mod, "SLICE_BYTES", 16 * 1024)  # a 256 KB tail: many slices
    monkeypatch.setattr(engine_mod, "PUBLISH_S", 0.0)
    root = long_orchestrator_log(tmp_path)
    layout = discover(root)
    eng = Engine(layout, run=LiveRun(layout, tail_bytes=256 * 1024, poll=True), gpu=RecordedProbe([H100]), vllm_url=None, processes=False, disks=False)
    frames, advised = [], []
    publish = eng._publish

    def recorded():
        view = publish()
        frames.append((len(view.state.steps), view.verdict.verdict, view.verdict.reasons))
        advised.append(advise(view.state, view.verdict))
        return view

    monkeypatch.setattr(eng, "_publish", recorded)
    try:
        eng.step()
        shown = [f for f in frames if f[0]]
        assert len(shown) >= 2  # a frame was published part-way, with steps on it
        assert not any("no log lines or metrics read" in " ".join(reasons) for _, _, reasons in shown), shown
        assert all(reasons == ["reading the run's files: judged once the tail is read"] for _, _, reasons in shown[:-1])
        assert shown[-1][1] == "Healthy"
        assert not any(a is not None and "nothing read yet" in a.text for a in advised), advised  # the band's "next:"
        # Later bursts are read in slices too: their frames keep the verdict already judged.
        frames.clear()
        with open(os.path.join(root, "logs", "orchestrator.log"), "a") as f:
            for step in range(3001, 4001):
                f.write(f"14:30:00 SUCCESS Step {step} |   31.0s | Reward 0.5 | Trainable 1/2 (50.0%)\n")
        eng.step()
    finally:
        eng.close()
    assert len(frames) >= 2 and all(verdict == "Healthy" for _, verdict, _ in frames), frames


def test_the_band_asks_about_the_directory_only_when_nothing_was_read(tmp_path):
    """`next: nothing read yet: is this the run's output directory?` is for a directory with
    nothing to read; a run whose logs were read but that has no step yet (an inference log
    only, a run starting up) is Unknown for that reason, and the question would be false."""
    from runtop.engine.snapshot import read_and_judge
    from runtop.rules.advice import Advice, advise

    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    (logs / "orchestrator.log").write_text("")
    _state, verdict = read_and_judge(str(tmp_path / "run"), processes=False, disks=False)
    assert verdict.verdict == "Unknown"
    assert advise(_state, verdict) == Advice("nothing read yet: is this the run's output directory?")
    (logs / "orchestrator.log").write_text("14:00:01    INFO Train batch 1/8 (12.5%)\n")
    state, verdict = read_and_judge(str(tmp_path / "run"), processes=False, disks=False)
    assert verdict.verdict == "Unknown" and verdict.reasons == ["no step finished yet (starting up?)"]
    assert advise(state, verdict) is None


def test_a_run_with_nothing_written_is_not_left_reading(tmp_path):
    """The screen starts on "reading the run's files" and the first step judges what it read,
    even when that is nothing: a run whose logs are still empty is then asked about, not left
    reading."""
    from runtop.rules.advice import advise
    from runtop.rules.health import READING

    (tmp_path / "run" / "logs").mkdir(parents=True)
    (tmp_path / "run" / "logs" / "orchestrator.log").write_text("")
    eng = Engine(discover(str(tmp_path / "run")), gpus=False, vllm_url=None, processes=False, disks=False)
    eng.probes = []  # no probe news either: nothing at all changes in the first step
    try:
        assert eng.published is not None and eng.published.verdict == READING and advise(eng.published.state, READING) is None
        eng.step()
        shown = eng.published
    finally:
        eng.close()
    assert shown.verdict.reasons == ["nothing to judge yet: no log lines or metrics read"]
    advice = advise(shown.state, shown.verdict)
    assert advice is not None and advice.text == "nothing read yet: is this the run's output directory?"
