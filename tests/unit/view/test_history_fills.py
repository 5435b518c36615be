"""While the history of a long log is read behind the live tail, the step table and the
charts fill chunk by chunk, below the steps the tail read itself, and the
hand-over at the end leaves exactly the whole run."""

from __future__ import annotations

import threading
import time

import runtop.engine.live
from benchmarks.backfill import generate
from runtop.engine.live import LiveRun
from runtop.engine.reader import RunReader
from runtop.engine.snapshot import read_run
from runtop.frameworks.discovery import discover


def gated(monkeypatch) -> threading.Event:
    """Hold the backfill's end until the test has looked: on a loaded machine it could
    otherwise finish before the live tail's first read, and there would be nothing to fill."""
    gate = threading.Event()

    class Gated(RunReader):
        def done(self) -> bool:
            if super().done() and not gate.is_set():
                time.sleep(0.001)
                return False
            return super().done()

    monkeypatch.setattr(runtop.engine.live, "RunReader", Gated)
    return gate


def test_the_history_fills_in_below_the_tail_before_the_backfill_ends(tmp_path, monkeypatch):
    root = str(tmp_path / "run")
    generate(root, 6 << 20)  # ~1100 steps
    monkeypatch.setattr(runtop.engine.live, "BACKFILL_CHUNK", 64 << 10)  # many chunks: each hand-over is seen
    gate = gated(monkeypatch)
    live = LiveRun(discover(root), tail_bytes=256 << 10, processes=False)
    try:
        live.step()
        tail_first = live._tail_first  # noqa: SLF001 - the first step the tail itself read (history may already sit below it)
        assert tail_first is not None and tail_first > 500 and live.backfill_progress() < 1.0  # the tail: the newest steps only
        partial = None
        deadline = time.monotonic() + 60
        while live.backfill_progress() < 1.0 and time.monotonic() < deadline:
            live.step()
            keys = live.state.step_keys()
            if partial is None and keys[0] < tail_first and live.backfill_progress() < 1.0:
                partial = (len(keys), keys[0])  # the first history rows in place while the backfill still reads
            if partial is not None and live._full is not None and RunReader.done(live._full):  # noqa: SLF001 - all read: the gate opens
                gate.set()  # all read and handed over: let the backfill end
            time.sleep(0.002)
        gate.set()
        live.step()
        assert partial is not None, "no history reached the live state before the backfill ended"
        assert partial[0] < len(live.state.step_keys())  # it went on filling
        whole = read_run(root, processes=False)
        assert live.state.step_keys() == whole.step_keys()
        assert [r.value("reward") for r in live.state.rows()] == [r.value("reward") for r in whole.rows()]
    finally:
        live.close()
