"""Time to detect, and false alarms: every framework's simulated run replayed through the engine
on a simulated clock (`runtop.playback.replay`), healthy with the pauses real runs have and
faulted at a step, judged by runtop beside a baseline measured in the same run — the same
engine with the fixed stall limits runtop had before it learned each run's pace (no step for
10 min, no write for 15 min).

    python benchmarks/detection.py [--hours 4] [--seeds 1] [--frameworks trl,verl,…] [--cases hang,…]

Healthy runs (each `--hours` of simulated time per seed, twice: plain and with block-buffered
logs): a first step 2–10 minutes late, 3 % of steps 2–4× slower, a save every 20 steps lasting
3–6 median steps that says it began where its framework says so and whose files grow as it
writes, an evaluation every 40 steps lasting 4–8 median steps printing what its framework prints
(prime-rl's orchestrator pausing for the trainer's save: back-pressure). Faults at a step past the
middle that no cadence explains: a hang with every process alive (GPUs idle holding memory; then
again without NVML); one rank of four stopped (its GPU idle while its peers spin in the
collective); one node of three stopped (prime-rl: its log stops a step before the others'); one
role's process killed while the others wait; the whole run killed; every step 3× slower (a
straggler); and the scenarios' own failures (a dead inference engine that still answers,
rollouts failing or rejected, a disk filling, a node's NCCL timeout, NaN in the loss). Printed
per framework, in simulated seconds: the time from the fault to the first finding and to Down,
the goal, whether and how soon after the first finding the culprit was named, and false alarms per
run-week. Findings of the training-signal rules (entropy, reward …) are counted apart on healthy
runs: the simulators' metrics are made up and drift over a day.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from runtop.config import Thresholds  # noqa: E402
from runtop.frameworks import get  # noqa: E402
from runtop.playback.replay import Habits, Outcome, Replay  # noqa: E402
from runtop.playback.replay_faults import culprit_named  # noqa: E402
from runtop.rules.pace import Limit, Pace, PaceView  # noqa: E402
from runtop.state.run import RunState  # noqa: E402

FRAMEWORKS = ["prime-rl", "skyrl", "verl", "trl", "openrlhf", "nemo-rl"]
LIVENESS = frozenset({"stalled", "slowdown", "vanished", "role_missing", "node_silent", "gpu_idle", "crash", "inference_dead"})
FAILURES = LIVENESS | {"rollouts_hung", "rollouts_failing", "disk_pressure", "checkpoint_incomplete"}
WEEK = 7 * 86400.0
CULPRIT_S = 30.0  # the culprit named within this long of the first finding
SAVE_EVERY = 20  # steps between two saves


class FixedView(PaceView):
    """The stall limit runtop had before: fixed minutes, whatever the run's pace."""

    def limit(self, state: RunState, cfg: Thresholds) -> Limit:
        med = self.median(cfg.time_scale)
        return Limit(max(cfg.stall_min_s, cfg.stall_k * med if med else 0.0), "fixed minutes", None)


class FixedPace(Pace):
    """No gaps for the rules to read (the slowdown rule did not exist), no pauses said: the median
    step comes from the gaps seen, handed over as if reported."""

    def view(self) -> PaceView:
        v = super().view()
        return FixedView(v.last_progress, v.step, (), v.attempt_gaps, v.saves, (), v.gaps or v.reported)


@dataclass
class Case:
    name: str
    habits: Habits = field(default_factory=Habits)
    fault: str | None = None
    gpus: bool = True
    scenario: str = "healthy"  # the simulator's own failure (fault "script")
    only: tuple[str, ...] = ()  # the frameworks it applies to (none: every one)
    nodes: int = 1
    ranks: int = 1
    rules: frozenset[str] = LIVENESS  # findings that count as found
    at_save: bool = False  # its failure comes at a save: the fault's step is the first save past the middle


CASES = [
    Case("healthy"),
    Case("healthy, buffered logs", Habits(buffered=True)),
    Case("hang (GPUs idle)", fault="hang"),
    Case("hang (no NVML)", fault="hang", gpus=False),
    Case("hang, one rank of 4", fault="hang-rank", ranks=4),
    Case("hang, one node of 3", fault="hang-node", only=("prime-rl",), nodes=3),
    Case("one role killed", fault="role-death"),
    Case("whole run killed", fault="kill"),
    Case("straggler 3×", fault="straggler"),
    Case("engine dead, API up", fault="script", scenario="inference-death", only=("prime-rl",), rules=FAILURES),
    Case("rollouts failing", fault="script", scenario="rollouts-failing", only=("prime-rl",), rules=FAILURES),
    Case("rollouts rejected", fault="script", scenario="rollouts-hung", only=("prime-rl",), rules=FAILURES),
    Case("disk filling", fault="script", scenario="disk-filling", only=("prime-rl",), rules=FAILURES),
    Case("disk full at a save", fault="script", scenario="disk-full", only=("skyrl",), rules=FAILURES, at_save=True),
    Case("a node's NCCL timeout", fault="script", scenario="node-nccl-timeout", only=("prime-rl",), rules=FAILURES),
    Case("NaN in the loss", fault="script", scenario="nan-loss", only=("trl",), rules=frozenset({"training_signal"})),
]


def simulator(fw: str, case: Case, steps: int, seed: int, fault_step: int | None) -> tuple[dict[str, object], tuple[tuple[str, str], ...]]:
    """The simulator's arguments for the case, and its run's processes (asked of one made and dropped)."""
    kw: dict[str, object] = {"max_steps": steps, "ckpt_interval": SAVE_EVERY, "seed": seed, "speed": 1.0}
    sim = get(fw).simulator(None, case.scenario, **kw)
    takes, titles = inspect.signature(type(sim).__init__).parameters, sim.TITLES
    sim.stop()
    if case.nodes > 1 and "nodes" in takes:
        kw["nodes"] = case.nodes
    if case.fault == "script" and fault_step is not None and "fail_step" in takes:
        kw["fail_step"] = fault_step
    return kw, titles


def replay(fw: str, case: Case, steps: int, seed: int, baseline: bool, per: float = 60.0) -> Outcome | None:
    """The case replayed (None: not a fault this framework's run can have: a second role, a second node)."""
    plug = get(fw)
    fault_step = steps // 2 + 3 if case.fault else None  # past the middle, off every cadence
    if case.at_save:
        fault_step = (steps // 2 // SAVE_EVERY + 1) * SAVE_EVERY
    kw, titles = simulator(fw, case, steps, seed, fault_step)
    r = Replay(lambda root: plug.simulator(root, case.scenario, **kw), habits=case.habits, fault=case.fault, fault_step=fault_step,
               gpus=case.gpus, seed=seed, pace=FixedPace if baseline else None, ranks=case.ranks,
               after_fault_s=max(3600.0, 20 * per))  # long-step runs: room for 2x p99
    try:
        return r.run() if r.applies(titles, case.nodes) else None
    finally:
        r.close()


def steps_for(fw: str, hours: float, seed: int) -> tuple[int, float]:
    """How many steps make `hours` of the framework's simulated run (its pace measured on a short one)."""
    out = replay(fw, Case("probe"), 60, seed, False)
    assert out is not None
    per = out.seconds / max(out.steps, 1)
    if out.step_median:
        per = min(per, 1.25 * out.step_median)  # the first steps' warm-up is not the run's pace
    return max(60, int(hours * 3600 / per)), per


def p99(out: Outcome) -> float:
    times = sorted(out.step_times)
    return times[min(len(times) - 1, int(0.99 * len(times)))] if times else 0.0


def show(t: float | None) -> str:
    return "—" if t is None else f"{t:.0f}s"


def goal_of(case: Case, out: Outcome, per: float) -> float | None:
    """The issue's goal for the first finding, in simulated seconds after the fault."""
    if case.fault in ("kill", "role-death"):
        return 2 * 2.0  # two polls
    if case.fault == "straggler":
        return 5 * 3 * (out.step_median or per)  # five slowed steps
    if case.fault in ("hang", "hang-rank", "hang-node"):
        return max(2 * p99(out), 60.0)
    return None


def times(case: Case, out: Outcome) -> tuple[float | None, float | None, float | None, str]:
    """(first finding, Down, culprit named after the first finding), seconds from the fault; the first finding."""
    fa = out.fault_at or 0.0
    first = out.caught(case.rules)
    down = next((f for f in out.findings if f.label == "down" and out.fault_at is not None and f.at >= fa), None)
    named = next((f for f in out.findings if f.at >= fa and culprit_named(f.message, out.culprit)), None)
    return (None if first is None else first.at - fa, None if down is None else down.at - fa,
            None if named is None or first is None else max(0.0, named.at - first.at),
            "" if first is None else f"{first.rule}: {first.message[:110]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Four hours a seed: the replay's dry run rescans the run dir at every action, which grows with
    # the steps already written (about 20 minutes for every framework at 4 h; 24 h takes hours).
    ap.add_argument("--hours", type=float, default=4.0, help="simulated hours of each healthy run, per seed")
    ap.add_argument("--seeds", type=int, default=1, help="healthy runs of --hours each, seeds 1…N")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--cases", default="", help="only the cases whose names hold one of these words (comma-separated)")
    ap.add_argument("--seed", type=int, default=1, help="the faulted runs' seed")
    args = ap.parse_args()
    wanted = [w.strip() for w in args.cases.split(",") if w.strip()]
    started = time.monotonic()
    verdicts: list[str] = []
    print("simulated seconds; ours | baseline (fixed limits) in the same run\n")
    for fw in args.frameworks.split(","):
        steps, per = steps_for(fw, args.hours, args.seed)
        print(f"## {fw}: {steps} steps of ~{per:.0f}s in {args.hours:g} h")
        healthy_s = 0.0
        false = {"ours": [0, 0, 0], "base": [0, 0, 0]}  # down, degraded, signal
        for case in CASES:
            if (case.only and fw not in case.only) or (wanted and not any(w in case.name for w in wanted)):
                continue
            if case.fault is None:
                for seed in range(1, args.seeds + 1):
                    runs = [replay(fw, case, steps, seed, b, per) for b in (False, True)]
                    ours, base = runs
                    assert ours is not None and base is not None
                    healthy_s += ours.seconds
                    for key, out in (("ours", ours), ("base", base)):
                        false[key][0] += len(out.alarms(LIVENESS, True))
                        false[key][1] += len(out.alarms(LIVENESS, False))
                        false[key][2] += sum(1 for f in out.findings if f.rule not in LIVENESS and f.label != "info")
                    said = "; ".join(sorted({f"{f.rule}: {f.message[:90]}" for f in ours.alarms(LIVENESS, False) + ours.alarms(LIVENESS, True)}))[:300]
                    print(f"  {case.name:24s} seed {seed}  {ours.seconds / 3600:5.1f} h  false Down {len(ours.alarms(LIVENESS, True))} | "
                          f"{len(base.alarms(LIVENESS, True))}   false Degraded {len(ours.alarms(LIVENESS, False))} | "
                          f"{len(base.alarms(LIVENESS, False))}" + (f"   ({said})" if said else ""))
                continue
            n = min(steps, 200)
            ours_or_none = replay(fw, case, n, args.seed, False, per)
            if ours_or_none is None:
                continue  # not a fault this framework's run can have (a second role, a second node)
            ours = ours_or_none
            base = replay(fw, case, n, args.seed, True, per)
            assert base is not None
            (o1, o2, oc, said), (b1, b2, bc, _) = times(case, ours), times(case, base)
            goal = goal_of(case, ours, per)
            ok = o1 is not None and (goal is None or o1 <= goal)
            named = "" if ours.culprit is None else f"   culprit +{show(oc)} | +{show(bc)} {'met' if oc is not None and oc <= CULPRIT_S else 'MISSED'}"
            verdicts.append(f"{fw} {case.name}: {'met' if ok else 'MISSED'}" + (f", culprit {'met' if oc is not None and oc <= CULPRIT_S else 'MISSED'}" if named else ""))
            print(f"  {case.name:24s} first {show(o1):>6s} | {show(b1):>6s}   Down {show(o2):>6s} | {show(b2):>6s}   "
                  f"goal {'≤ ' + format(goal, '.0f') + 's' if goal is not None else 'found'} {'met' if ok else 'MISSED'}{named}"
                  + (f"   ({said})" if said else ""))
        if healthy_s:
            weeks = healthy_s / WEEK
            o, b = false["ours"], false["base"]
            print(f"  per run-week ({healthy_s / 3600:.0f} h healthy): false Down {o[0] / weeks:.1f} | {b[0] / weeks:.1f}, "
                  f"false Degraded {o[1] / weeks:.1f} | {b[1] / weeks:.1f}; training-signal findings {o[2] / weeks:.1f} (simulated metrics)")
            verdicts.append(f"{fw} healthy ({healthy_s / 3600:.0f} h): false Down {o[0]}, false Degraded {o[1]} = {o[1] / weeks:.1f}/week "
                            f"({'met' if o[0] == 0 and o[1] / weeks < 1 else 'MISSED'})")
        print()
    print("goals:\n  " + "\n  ".join(verdicts))
    print(f"\n({time.monotonic() - started:.0f} s wall)")


if __name__ == "__main__":
    main()
