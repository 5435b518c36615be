"""Time to detect, and false alarms: every framework's simulated run replayed through the engine
on a simulated clock (`runtop.simulator.replay`), healthy with the pauses real runs have and
faulted at a step, judged by runtop beside a baseline measured in the same run — the same
engine with the fixed stall limits runtop had before it learned each run's pace (no step for
10 min, no write for 15 min).

    python benchmarks/detection.py [--hours 24] [--frameworks trl,verl,…] [--seed 1]

Healthy runs (each `--hours` of simulated time, twice: plain and with block-buffered logs): a
first step 2–10 minutes late, 3 % of steps 2–4× slower, a save every 20 steps lasting 3–6 median steps and
seen only when whole, an evaluation every 40 steps lasting 4–8 median steps with a bar in the
log. Faults at a step past the middle that no cadence explains: a hang with every process alive
(GPUs idle holding memory; then again without NVML), the whole run killed, every step 3× slower
(a straggler). Printed per framework, in simulated seconds: the time from the fault to the first
finding of the liveness rules and to Down, the goal, and false alarms per run-week. Findings of
the training-signal rules (entropy, reward …) are counted apart: the simulators' metrics are
made up and drift over a day.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from runtop.config import Thresholds  # noqa: E402
from runtop.frameworks import get  # noqa: E402
from runtop.pace import Limit, Pace, PaceView  # noqa: E402
from runtop.simulator.replay import Habits, Outcome, Replay  # noqa: E402
from runtop.state import RunState  # noqa: E402

FRAMEWORKS = ["prime-rl", "skyrl", "verl", "trl", "openrlhf", "nemo-rl"]
LIVENESS = frozenset({"stalled", "slowdown", "vanished", "role_missing", "node_silent", "gpu_idle", "crash", "inference_dead"})
WEEK = 7 * 86400.0


class FixedView(PaceView):
    """The stall limit runtop had before: fixed minutes, whatever the run's pace."""

    def limit(self, state: RunState, cfg: Thresholds) -> Limit:
        med = self.median(cfg.time_scale)
        return Limit(max(cfg.stall_min_s, cfg.stall_k * med if med else 0.0), "fixed minutes", None)


class FixedPace(Pace):
    """No gaps for the rules to read (the slowdown rule did not exist): the median step comes
    from the gaps seen, handed over as if reported."""

    def view(self) -> PaceView:
        v = super().view()
        return FixedView(v.last_progress, v.step, (), v.attempt_gaps, v.saves, (), v.gaps or v.reported)


@dataclass
class Case:
    name: str
    habits: Habits
    fault: str | None = None
    gpus: bool = True


CASES = [
    Case("healthy", Habits()),
    Case("healthy, buffered logs", Habits(buffered=True)),
    Case("hang (GPUs idle)", Habits(), "hang"),
    Case("hang (no NVML)", Habits(), "hang", gpus=False),
    Case("whole run killed", Habits(), "kill"),
    Case("straggler 3×", Habits(), "straggler"),
]


def replay(fw: str, case: Case, steps: int, seed: int, baseline: bool, per: float = 60.0) -> Outcome:
    plug = get(fw)
    fault_step = steps // 2 + 3 if case.fault else None  # past the middle, off every cadence
    r = Replay(lambda root: plug.simulator(root, "healthy", max_steps=steps, ckpt_interval=20, seed=seed, speed=1.0),
               habits=case.habits, fault=case.fault, fault_step=fault_step, gpus=case.gpus, seed=seed,
               pace=FixedPace if baseline else None, after_fault_s=max(3600.0, 20 * per))  # long-step runs: room for 2x p99
    try:
        return r.run()
    finally:
        r.close()


def steps_for(fw: str, hours: float, seed: int) -> tuple[int, float]:
    """How many steps make `hours` of the framework's simulated run (its pace measured on a short one)."""
    out = replay(fw, Case("probe", Habits()), 60, seed, False)
    per = out.seconds / max(out.steps, 1)
    if out.step_median:
        per = min(per, 1.25 * out.step_median)  # the first steps' warm-up is not the run's pace
    return max(60, int(hours * 3600 / per)), per


def p99(out: Outcome) -> float:
    times = sorted(out.step_times)
    return times[min(len(times) - 1, int(0.99 * len(times)))] if times else 0.0


def show(t: float | None) -> str:
    return "—" if t is None else f"{t:.0f}s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=24.0, help="simulated hours of each healthy run")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    started = time.monotonic()
    verdicts: list[str] = []
    print("simulated seconds; ours | baseline (fixed limits) in the same run\n")
    for fw in args.frameworks.split(","):
        steps, per = steps_for(fw, args.hours, args.seed)
        print(f"## {fw}: {steps} steps of ~{per:.0f}s in {args.hours:g} h")
        healthy_s = 0.0
        false = {"ours": [0, 0, 0], "base": [0, 0, 0]}  # down, degraded, signal
        for case in CASES:
            n = steps if case.fault is None else min(steps, 200)
            ours, base = (replay(fw, case, n, args.seed, b, per) for b in (False, True))
            if case.fault is None:
                healthy_s += ours.seconds
                for key, out in (("ours", ours), ("base", base)):
                    false[key][0] += len(out.alarms(LIVENESS, True))
                    false[key][1] += len(out.alarms(LIVENESS, False))
                    false[key][2] += sum(1 for f in out.findings if f.rule not in LIVENESS and f.label != "info")
                said = "; ".join(sorted({f"{f.rule}: {f.message[:90]}" for f in ours.alarms(LIVENESS, False)}))[:300]
                print(f"  {case.name:24s} {ours.seconds / 3600:5.1f} h  false Down {len(ours.alarms(LIVENESS, True))} | "
                      f"{len(base.alarms(LIVENESS, True))}   false Degraded {len(ours.alarms(LIVENESS, False))} | "
                      f"{len(base.alarms(LIVENESS, False))}" + (f"   ({said})" if said else ""))
                continue
            gap99 = p99(ours)
            goal = 2 * 2.0 if case.fault == "kill" else (5 * 3 * (ours.step_median or per) if case.fault == "straggler" else max(2 * gap99, 60.0))
            rows = []
            for out in (ours, base):
                first = out.caught(LIVENESS)
                down = next((f for f in out.findings if f.label == "down" and out.fault_at is not None and f.at >= out.fault_at), None)
                fa = out.fault_at or 0.0
                rows.append((None if first is None else first.at - fa, None if down is None else down.at - fa, first))
            (o1, o2, of), (b1, b2, _) = rows
            ok = o1 is not None and o1 <= goal
            verdicts.append(f"{fw} {case.name}: {'met' if ok else 'MISSED'}")
            print(f"  {case.name:24s} first {show(o1):>6s} | {show(b1):>6s}   Down {show(o2):>6s} | {show(b2):>6s}   goal ≤ {goal:.0f}s "
                  f"{'met' if ok else 'MISSED'}" + (f"   ({of.rule}: {of.message[:110]})" if of else ""))
        weeks = healthy_s / WEEK
        o, b = false["ours"], false["base"]
        print(f"  per run-week ({healthy_s / 3600:.0f} h healthy): false Down {o[0] / weeks:.1f} | {b[0] / weeks:.1f}, "
              f"false Degraded {o[1] / weeks:.1f} | {b[1] / weeks:.1f}; training-signal findings {o[2] / weeks:.1f} (simulated metrics)\n")
        verdicts.append(f"{fw} healthy: false Down {o[0]}, false Degraded/week {o[1] / weeks:.1f} ({'met' if o[0] == 0 and o[1] / weeks < 1 else 'MISSED'})")
    print("goals:\n  " + "\n  ".join(verdicts))
    print(f"\n({time.monotonic() - started:.0f} s wall)")


if __name__ == "__main__":
    main()
