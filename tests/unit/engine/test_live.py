"""Cold start on a big log: a status at once from the tail, then the full history."""

from __future__ import annotations

import os
import time

from runtop.engine.live import LiveRun
from runtop.frameworks.discovery import discover
from tests.helpers import long_orchestrator_log


def test_tail_first_then_backfilled_history(tmp_path):
    root = long_orchestrator_log(tmp_path)
    live = LiveRun(discover(root), tail_bytes=64 * 1024, poll=True)
    try:
        live.step()
        first = live.state
        assert first.rollout_step == 3000 and len(first.steps) < 3000  # the recent past only
        shown, seq = live.tail.lines(), live.tail.seq
        assert shown and "Step 3000" in shown[-1].text
        deadline = time.monotonic() + 30
        while live.backfill_progress() < 1.0 and time.monotonic() < deadline:
            live.step()  # the owner's loop: it takes over the backfilled state when ready
            time.sleep(0.05)
        assert len(live.state.steps) == 3000 and live.backfill_progress() == 1.0
        with open(os.path.join(root, "logs", "orchestrator.log"), "a") as f:
            f.write("14:00:00 SUCCESS Step 3001 |   31.0s | Reward 0.6 | Trainable 1/2 (50.0%)\n")
        live.step()
        assert live.state.rollout_step == 3001 and live.state.steps[3001].value("reward") == 0.6
        # The Logs pane's tail is the engine's, not the state's: the takeover by
        # the backfilled reader kept what it showed, and the new line came after it, once.
        after = live.tail.lines()
        assert live.tail.seq == seq + 1 and after[-2] == shown[-1] and "Step 3001" in after[-1].text
    finally:
        live.close()


def test_watchfiles_wakes_the_reader_on_a_write(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "logs"))
    log = os.path.join(root, "logs", "orchestrator.log")
    with open(log, "w") as f:
        f.write("14:00:00 SUCCESS Step 1 |   31.0s | Reward 0.5 | Trainable 1/2 (50.0%)\n")
    live = LiveRun(discover(root))
    try:
        live.step()
        time.sleep(0.3)  # let the watcher settle
        with open(log, "a") as f:
            f.write("14:00:30 SUCCESS Step 2 |   31.0s | Reward 0.5 | Trainable 1/2 (50.0%)\n")
        assert live.waiter.mode == "watchfiles"
        assert live.wait(10.0) is True
        live.step()
        assert live.state.rollout_step == 2
    finally:
        live.close()


def test_network_filesystems_are_polled():
    from runtop.sources.watch import is_network_fs

    mounts = "/dev/vda / ext4 rw 0 0\nserver:/export /mnt/nfs nfs4 rw 0 0\n"
    assert is_network_fs("/mnt/nfs/runs/x", mounts) and not is_network_fs("/home/x", mounts)
