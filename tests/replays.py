"""A framework's simulated run replayed through the engine on a simulated clock
(`runtop.playback.replay`), as the stall, pause and culprit stories replay it."""

from __future__ import annotations

from typing import Any

from runtop.frameworks import get
from runtop.playback.replay import Outcome, Replay

# The findings that call a silent run stalled.
STALL = frozenset({"stalled", "gpu_idle"})


def replay(fw: str, steps: int, scenario: str = "healthy", **kw: Any) -> Outcome:
    """`steps` of `fw`'s `scenario` (seed 3, a save every 20 steps), replayed with the Replay's
    own options in `kw` (`fault`, `fault_step`, `habits` …; `nodes` goes to the simulator)."""
    plug = get(fw)
    extra = {"nodes": kw.pop("nodes")} if "nodes" in kw else {}
    r = Replay(lambda root: plug.simulator(root, scenario, max_steps=steps, ckpt_interval=20, seed=3, speed=1.0, **extra), seed=3, **kw)
    try:
        return r.run()
    finally:
        r.close()
