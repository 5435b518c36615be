"""A genuine TRL GRPOTrainer, trained on this machine's CPU, under runtop's eyes: launched as
users launch it (`python train_grpo.py --output_dir DIR > DIR/train.log 2>&1`) in a real tmux
Launcher pane, with runtop's engine, `runtop watch`, `runtop send` and the TUI watching. TRL's
own files are the reference: `trainer_state.json`'s log_history for the steps, the files a save
leaves for the checkpoints, the trainer's process for ownership. Marked `real`: run with
`pytest -m real` after `pip install -r tests/real/requirements.txt` (README, "A real framework")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtop.engine.engine import Engine
from runtop.engine.snapshot import read_and_judge
from runtop.frameworks.discovery import discover
from tests.alert_server import AlertServer
from tests.real.harness import LiveTrl, missing, wait_for

WHY_NOT = missing()
pytestmark = [pytest.mark.real, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]
RUNTOP = [sys.executable, "-m", "runtop"]
POLL = 1.0  # the engine's interval in these stories: "within two polls" is two of these
# What TRL 1.16 on transformers 5.24 writes into a checkpoint-N, the last file being trainer_state.json.
WHOLE = {"config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "rng_state.pth", "scheduler.pt",
         "tokenizer.json", "tokenizer_config.json", "trainer_state.json", "training_args.bin"}


@pytest.fixture
def live(tmp_path):
    run = LiveTrl(tmp_path)
    try:
        yield run
    finally:
        run.close()  # never a trainer left running


def watcher(root: Path) -> Engine:
    return Engine(discover(str(root)), interval=POLL, vllm_url=None, disks=False, gpus=False)


def step_until(engine: Engine, pred, timeout: float = 60.0) -> bool:
    return bool(wait_for(lambda: (engine.step(), pred(engine))[1], timeout, every=0.05))


def started(run: LiveTrl) -> bool:
    """The console has begun (discovery needs a log with something in it)."""
    return run.log.is_file() and run.log.stat().st_size > 0


# ---- detection and ownership --------------------------------------------------------------
def test_the_live_trainer_is_the_runs_own_process_and_named_trainer(live):
    live.launch("--max_steps", "40")
    # A bystander in the Logs window: a person's `tail -f` on the run's log is never the run.
    live.tmux("send-keys", "-t", "grpo:Logs", f"tail -f {live.log}", "Enter")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)
    trainer = live.trainer_pid()
    assert step_until(engine, lambda e: e.state.framework == "trl" and bool(e.state.processes)), engine.state.detection
    assert engine.state.processes == {"trainer": [trainer]}, "the trainer alone, by its role, not the shell, tmux or tail"
    out = subprocess.run([*RUNTOP, "status", str(live.root), "--json"], capture_output=True, text=True, timeout=60)
    report = json.loads(out.stdout)
    assert report["framework"] == "trl" and report["processes"] == {"trainer": [trainer]}, report["processes"]
    assert report["health"]["verdict"] in ("Healthy", "Unknown"), report["health"]


# ---- steps: every logged value equals TRL's own log_history ------------------------------
def test_every_logged_step_equals_trls_own_log_history(live):
    live.launch("--max_steps", "8", env="RUNTOP_REAL_REWARD_SECONDS=0.2")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)  # from the launch on: the log has no framework's signs yet
    assert wait_for(live.at_prompt, 120), "the trainer ran to its end"
    assert step_until(engine, lambda e: e.verdict.verdict == "Finished", 10), engine.verdict.reasons
    history = [h for h in live.trl_state(8)["log_history"] if "loss" in h]
    assert [h["step"] for h in history] == list(range(1, 9))
    rows = {r.step: r for r in engine.state.rows()}
    assert sorted(rows) == list(range(1, 9)), "the steps TRL logged, numbered as TRL numbers them"
    keys = {"reward": "reward", "loss": "loss", "grad_norm": "grad_norm", "kl": "kl", "completions/mean_length": "seq_len"}
    for h in history:
        for trl_key, ours in keys.items():
            # The console prints each float as `f"{v:.4g}"` (transformers' ProgressCallback): that is what is there to read.
            assert rows[h["step"]].value(ours) == float(f"{h[trl_key]:.4g}"), (h["step"], trl_key, rows[h["step"]].value(ours), h[trl_key])
    assert engine.state.max_steps == 8


# ---- checkpoints: complete exactly when TRL wrote it whole ----------------------------------
def stop_mid_save(run: LiveTrl, step: int) -> int:
    """SIGSTOP the trainer while checkpoint-N exists but is not whole (a save takes ~10 ms here:
    the directory is watched every millisecond)."""
    ck = run.root / f"checkpoint-{step}"
    pid = run.trainer_pid()
    assert pid is not None
    assert wait_for(ck.is_dir, 120, every=0.001), f"no checkpoint-{step}"
    os.kill(pid, signal.SIGSTOP)
    return pid


def test_a_checkpoint_is_complete_exactly_when_trl_wrote_it_whole_and_a_save_killed_midway_is_not(live):
    live.launch("--max_steps", "20", env="RUNTOP_REAL_REWARD_SECONDS=0.3")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)
    for step in (2, 4, 6):
        pid = stop_mid_save(live, step)
        files = set(os.listdir(live.root / f"checkpoint-{step}"))
        assert files < WHOLE, f"stopped while checkpoint-{step} is being written: {sorted(files)}"
        assert step_until(engine, lambda e: step in e.state.checkpoints, 10)  # noqa: B023
        ck = engine.state.checkpoints[step]
        assert not ck.complete, (step, sorted(files), ck.reason)
        if step == 6:
            os.kill(pid, signal.SIGKILL)  # the save never finishes
            break
        os.kill(pid, signal.SIGCONT)
        assert wait_for((live.root / f"checkpoint-{step}" / "trainer_state.json").is_file, 30)
        os.kill(pid, signal.SIGSTOP)  # whole now: judged while nothing moves
        assert set(os.listdir(live.root / f"checkpoint-{step}")) == WHOLE
        assert step_until(engine, lambda e: e.state.checkpoints[step].complete, 5), engine.state.checkpoints[step]  # noqa: B023
        os.kill(pid, signal.SIGCONT)
    assert wait_for(lambda: live.trainer_pid() is None, 10)
    assert set(os.listdir(live.root / "checkpoint-6")) < WHOLE
    assert step_until(engine, lambda e: e.verdict.verdict == "Down", 10)
    assert engine.state.last_complete_checkpoint().step == 4 and not engine.state.checkpoints[6].complete
    assert "last complete checkpoint: step 4" in engine.verdict.reasons[0]
    # A fresh look agrees, and the resume it offers is the whole one. No watcher recorded the
    # pane and its command while the trainer lived, and the pane's screen is never read for one
    # (the run can print a line that looks like a prompt): both are named, as a user would.
    r = subprocess.run([*RUNTOP, "actions", str(live.root), "--tmux-socket", live.sock, "--tmux-target", "grpo:Launcher",
                        "--launch-cmd", live.command("--max_steps", "20")], capture_output=True, text=True, timeout=60)
    assert "--resume_from_checkpoint" in r.stdout and f"{live.root}/checkpoint-4" in r.stdout and "checkpoint-6 " not in r.stdout, r.stdout


# ---- deaths ------------------------------------------------------------------------------
def test_a_trainer_killed_with_sigkill_is_down_within_two_polls_naming_the_vanished_process(live):
    live.launch("--max_steps", "40")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)
    assert step_until(engine, lambda e: e.state.framework == "trl" and bool(e.state.processes) and e.state.last_complete_checkpoint() is not None, 90)
    assert engine.verdict.verdict == "Healthy", engine.verdict.reasons
    killed_at = time.monotonic()
    live.kill()
    assert step_until(engine, lambda e: e.verdict.verdict == "Down", 2 * POLL + 1.0), engine.verdict.reasons
    took = time.monotonic() - killed_at
    assert took <= 2 * POLL + 1.0 and engine.lifetimes.gone_samples <= 2, (took, engine.lifetimes.gone_samples)
    reason = engine.verdict.reasons[0]
    assert reason.startswith("every process of the run exited at") and "the logs say nothing" in reason, reason
    assert "trainer" in (engine.verdict.alerts[0].evidence or "")
    print(f"\nDown {took:.2f} s after kill -9 (poll {POLL:g} s)")


def test_a_reward_function_that_raises_at_step_k_is_down_naming_the_exception_and_the_step(live):
    live.launch("--max_steps", "10", env="RUNTOP_REAL_REWARD_RAISES_AT=4 RUNTOP_REAL_REWARD_SECONDS=0.2")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)
    assert wait_for(live.at_prompt, 90), "the trainer exited on its own"
    assert step_until(engine, lambda e: e.verdict.verdict == "Down" and e.verdict.alerts[0].rule == "crash", 10), engine.verdict.reasons
    reason = engine.verdict.reasons[0]
    assert reason.startswith("trainer died: ConnectionError (reward server unreachable: connection refused)"), reason
    assert "in step 4 (step 3 was its last)" in reason, reason
    assert engine.state.trainer_step == 3


def test_a_run_that_reaches_max_steps_is_finished_and_still_finished_an_hour_later(live):
    live.launch("--max_steps", "6", env="RUNTOP_REAL_REWARD_SECONDS=0.2")
    assert wait_for(lambda: started(live), 30)
    engine = watcher(live.root)
    assert step_until(engine, lambda e: bool(e.state.processes), 60)
    assert step_until(engine, lambda e: e.verdict.verdict == "Finished" and live.at_prompt(), 120), engine.verdict.reasons
    assert engine.verdict.reasons[0].startswith("finished at step 6"), engine.verdict.reasons
    engine.close()
    hour_ago = time.time() - 3600
    for d, _, names in os.walk(live.root):
        for n in names:
            os.utime(os.path.join(d, n), (hour_ago, hour_ago))
    _, verdict = read_and_judge(str(live.root), disks=False, gpus=False)
    assert verdict.verdict == "Finished", verdict.reasons
    assert not any(f.down for f in verdict.alerts), [f.message for f in verdict.alerts]


# ---- actions: runtop's resume of a real trainer --------------------------------------------
def trainer_resumed(run: LiveTrl, n: int) -> bool:
    """TRL's own word that it went on from checkpoint-N: the next save's global_step."""
    path = run.root / f"checkpoint-{n + 2}" / "trainer_state.json"
    return path.is_file() and json.loads(path.read_text())["global_step"] == n + 2


def test_send_resume_after_a_kill_resumes_the_real_trainer_and_watch_pages_once_each_way(live):
    srv = AlertServer()
    live.launch("--max_steps", "400")  # long enough never to finish within the test
    assert wait_for(lambda: started(live), 30)
    watch = subprocess.Popen([*RUNTOP, "watch", str(live.root), "--interval", "1", "--notify", srv.url(), "--tmux-socket", live.sock],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for(lambda: (live.root / ".runtop" / "launch.json").is_file() and live.logged_steps() >= 3, 90), "watch proved the Launcher pane"
        assert wait_for(lambda: (live.root / "checkpoint-2" / "trainer_state.json").is_file(), 60)
        live.kill()
        assert wait_for(lambda: srv.messages(), 15), "the Down page"
        n = read_and_judge(str(live.root), disks=False, gpus=False)[0].last_complete_checkpoint().step
        r = subprocess.run([*RUNTOP, "send", "resume", str(live.root), "--yes", "--tmux-socket", live.sock], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        typed = f"--resume_from_checkpoint {live.root}/checkpoint-{n} > {live.log} 2>&1"
        assert typed in r.stderr, r.stderr  # the console still goes to the run's log
        assert wait_for(lambda: typed in live.screen().replace("\n", ""), 10)
        assert wait_for(lambda: trainer_resumed(live, n), 120), "TRL went on from the checkpoint runtop named"
        history = [h["step"] for h in live.trl_state(n + 2)["log_history"] if "loss" in h]
        assert history == list(range(1, n + 3)), history
        assert wait_for(lambda: len(srv.messages()) >= 2, 30)
        time.sleep(3)  # anything more would come now
    finally:
        live.close()
        watch.terminate()
        said = watch.communicate(timeout=30)[0]
        srv.close()
    titles = [m["title"] for m in srv.messages()]
    assert len(titles) == 2 and titles[0].endswith("is Down") and "recovered" in titles[1], (titles, said)
    assert "every process of the run exited" in srv.messages()[0]["message"]


async def test_r_in_the_tui_resumes_the_real_trainer_and_runtop_shows_the_new_attempt_healthy(live):
    from runtop.tui.app import RuntopApp
    from runtop.tui.confirm_screen import ConfirmScreen
    from tests.live.test_actions import open_modal

    live.launch("--max_steps", "400")  # long enough never to finish within the test
    assert wait_for(lambda: started(live), 30)
    app = RuntopApp(discover(str(live.root)), interval=POLL, action_options={"socket": live.sock}, vllm_url=None, disks=False, gpus=False)
    async with app.run_test(size=(200, 50)) as pilot:
        mon = app.monitor

        async def until(pred, timeout: float) -> bool:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if pred():
                    return True
                await pilot.pause(0.2)
            return False

        assert await until(lambda: (live.root / ".runtop" / "launch.json").is_file() and mon.state.last_complete_checkpoint() is not None, 90)
        live.kill()
        assert await until(lambda: mon.verdict.verdict == "Down", 15), mon.verdict.reasons
        n = mon.state.last_complete_checkpoint().step
        await open_modal(pilot, "R")
        screen = app.screen
        assert isinstance(screen, ConfirmScreen), app.toasts
        assert f"--resume_from_checkpoint {live.root}/checkpoint-{n}" in screen.plan.text
        await pilot.press(*str(n), "enter")
        assert await until(lambda: trainer_resumed(live, n), 120), live.screen()[-600:]
        assert await until(lambda: len(mon.state.attempts) == 2 and mon.verdict.verdict == "Healthy" and (mon.state.trainer_step or 0) > n, 30), \
            (mon.verdict.reasons, mon.state.attempts, mon.state.trainer_step)
        assert min(r.step for r in mon.state.rows() if r.attempt == 2) == n + 1, "the new attempt goes on from the checkpoint"
