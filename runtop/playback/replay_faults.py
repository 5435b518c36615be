"""The faults the detection replay injects at a step (`runtop.playback.replay`; docs/reading.md,
"Stalls, at the run's own pace"): a hang with every process alive (every GPU idle holding its
memory), one rank that stopped (its GPU idle while its peers' spin in the collective waiting on
it), one node that stopped (its own log stops a step before the others'), one role's process
killed (the others wait), the whole run killed, a straggler (every step 3× slower), or the
scenario's own failure (timed from its first action)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

    from runtop.engine.engine import Engine
    from runtop.simulator.outcome import Outcome
    from runtop.simulator.virtual import VirtualProcesses

TICK = 2.0  # the engine's poll, in simulated seconds, while a fault is being waited on
STOPS = ("hang", "hang-rank", "hang-node", "role-death", "kill")  # faults after which nothing more is written
STUCK_RANK = 2  # the rank that stops in `hang-rank` (of the trainer's four)
NODE_RE = re.compile(r"node_(\d+)\.log$")


class Faults:
    """Mixed into `Replay`, whose clock, judging and outcome these use."""

    if TYPE_CHECKING:
        fault: str | None
        fault_step: int | None
        after_fault_s: float
        rng: random.Random
        t: float
        out: Outcome
        ranks: int
        _silenced: str | None
        _appended: set[str]
        _unjudged: bool

        def _wait(self, engine: Engine | None, until: float, tick: float | None, stop_at_down: bool = False) -> None: ...
        def _judge(self, engine: Engine) -> None: ...
        def _done(self) -> Outcome: ...
        def _tail(self) -> float: ...

    def _fault_before(self, step: int) -> None:
        """A step before a node's hang, that node stops writing: it hung after the step's collectives
        and never logged it, while the others log it and wait in the next step's first collective."""
        if self.fault != "hang-node" or self.fault_step is None or step != self.fault_step - 1 or self._silenced is not None:
            return
        nodes = sorted((int(m.group(1)), rel) for rel in self._appended if (m := NODE_RE.search(rel)))
        if len(nodes) >= 2:
            self._silenced = nodes[-1][1]
            self.out.fault_at = self.t
            self.out.culprit = f"node {nodes[-1][0]}"

    def _stops(self, step: int) -> bool:
        return self.fault in STOPS and self.fault_step is not None and step >= self.fault_step

    def _after(self, engine: Engine, procs: VirtualProcesses, fault: str) -> Outcome:
        """The run stops right after its last write, and runtop is watched until it says Down."""
        if self._unjudged:
            self._judge(engine)  # the last write, judged as it came
        if self.out.fault_at is None:
            self.out.fault_at = self.t
        if fault == "kill":
            procs.end()
        elif fault == "role-death":
            roles = {role for _, role in procs.titles}
            dead = next(r for r in ("orchestrator", "inference", "generator") if r in roles)
            procs.end([dead])  # killed (the OOM killer's SIGKILL): its log says nothing
            procs.hung = True  # the others wait for it, their GPUs idle
            self.out.culprit = dead
        else:
            procs.hung = True
            if fault == "hang-rank":
                procs.stuck = STUCK_RANK
                self.out.culprit = f"GPU {self._gpu_of(procs, STUCK_RANK)}"
            elif fault == "hang-node":
                procs.stuck = -1  # no rank of this machine's: its trainer GPUs all spin, waiting
        self._wait(engine, self.t + self.after_fault_s, TICK, stop_at_down=True)
        engine.close()
        return self._done()

    def _gpu_of(self, procs: VirtualProcesses, rank: int) -> int:
        """The GPU index a trainer rank holds (`VirtualGpus`: inference's first, then the trainer's)."""
        return rank + (1 if any(role == "inference" for _, role in procs.titles) else 0)

    def _next_factor(self, step: int) -> float:
        if self.fault == "straggler" and self.fault_step is not None and step >= self.fault_step:
            if self.out.fault_at is None:
                self.out.fault_at = self.t
            return 3.0
        return self._tail()

    def applies(self, titles: tuple[tuple[str, str], ...], nodes: int) -> bool:
        """Whether the fault can happen to this run (one role's death needs a second role; one node's
        hang, several nodes)."""
        roles = {role for _, role in titles}
        if self.fault == "role-death":
            return bool(roles & {"orchestrator", "inference", "generator"})
        return self.fault != "hang-node" or nodes > 1


def culprit_named(message: str, culprit: str | None) -> bool:
    """Whether a finding names the culprit as the one that stopped first (`node 2 stopped first`,
    `rank on GPU 3 stopped first`), or the dead role as dead or gone."""
    if culprit is None or re.search(rf"\b{re.escape(culprit)}\b", message, re.I) is None:
        return False
    return "stopped first" in message if culprit.startswith(("GPU", "node")) else re.search(r"not running|died|gone|exited|dead", message) is not None
