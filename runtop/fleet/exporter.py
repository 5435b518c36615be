"""runtop's judgment as Prometheus metrics (join the engines users already run, do
not imitate them): `runtop export PATH… --port 9464`, or `--textfile FILE` for
node_exporter's textfile collector. One engine per run, stepped by the exporter's loop; each
scrape reads every engine's newest verdict and state under its lock (no I/O on a scrape).

Each run's `run` label is its directory's name, with as many parents as tell it from another
run's of the same name (`a/run`, `b/run`).

    runtop_up{run}                               1 while the run's files are read, 0 when none is
    runtop_verdict{run,verdict}                  1 for the verdict now, 0 for the other four
    runtop_finding{run,rule,severity}            the findings now, by rule and severity
    runtop_step{run,role}                        the trainer's and the rollout side's step
    runtop_max_steps{run}
    runtop_step_age_seconds{run}                 since the newest write to the run's logs or metrics
    runtop_last_complete_checkpoint_step{run}    -1 when there is none
    runtop_metric{run,name}                      the newest value of each key metric
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from runtop.engine.engine import Engine
from runtop.parsers.hygiene import shown

VERDICTS = ("Healthy", "Degraded", "Down", "Finished", "Unknown")
KEY_METRICS = ("reward", "entropy", "kl", "grad_norm", "loss", "seq_len", "step_time_s")


def run_labels(roots: list[str]) -> list[str]:
    """Each run's `run` label: its directory's name, or as many of its parents as tell it
    from the others (`a/run`, `b/run`): two runs named alike once exported one label set, and
    each scrape's series of one overwrote the other's. On one line (`shown`)."""
    parts = [os.path.normpath(r).strip(os.sep).split(os.sep) for r in roots]
    depth = [1] * len(roots)
    while True:
        labels = [shown("/".join(p[-d:])) for p, d in zip(parts, depth)]
        seen = Counter(labels)
        clash = [i for i, label in enumerate(labels) if seen[label] > 1 and depth[i] < len(parts[i])]
        if not clash:
            break
        for i in clash:
            depth[i] += 1
    # Still alike (names that differ only in what `shown` escapes): numbered.
    count: Counter[str] = Counter()
    out = []
    for label in labels:
        count[label] += 1
        out.append(label if seen[label] == 1 else f"{label}#{count[label]}")
    return out


class RunsCollector(Collector):
    def __init__(self, engines: Iterable[Engine]) -> None:
        self.engines = list(engines)
        self.labels = run_labels([e.layout.root for e in self.engines])

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("runtop_up", "1 while runtop reads the run's files, 0 when it reads none", labels=["run"])
        verdict = GaugeMetricFamily("runtop_verdict", "1 for the run's verdict now (Healthy, Degraded, Down, Finished, Unknown)",
                                    labels=["run", "verdict"])
        finding = GaugeMetricFamily("runtop_finding", "findings now, by rule and severity", labels=["run", "rule", "severity"])
        step = GaugeMetricFamily("runtop_step", "the newest step of each side of the run", labels=["run", "role"])
        max_steps = GaugeMetricFamily("runtop_max_steps", "the run's planned number of steps", labels=["run"])
        age = GaugeMetricFamily("runtop_step_age_seconds", "seconds since the newest write to the run's logs or metrics", labels=["run"])
        ckpt = GaugeMetricFamily("runtop_last_complete_checkpoint_step", "the last complete checkpoint's step (-1: none)", labels=["run"])
        metric = GaugeMetricFamily("runtop_metric", "the newest value of a key training metric", labels=["run", "name"])
        job_left = GaugeMetricFamily("runtop_slurm_time_left_seconds", "time left of the run's SLURM job while it runs", labels=["run", "job"])
        job_state = GaugeMetricFamily("runtop_slurm_job_state", "1 for the SLURM job's state now", labels=["run", "job", "state"])
        for engine, run in zip(self.engines, self.labels):
            with engine.lock:
                st, v, now = engine.state, engine.verdict, engine.clock()
                writes = st.write_times()
                up.add_metric([run], 1.0 if writes else 0.0)
                for name in VERDICTS:
                    verdict.add_metric([run, name], 1.0 if v.verdict == name else 0.0)
                for (rule, severity), n in sorted(Counter((f.rule, f.severity) for f in v.alerts).items()):
                    finding.add_metric([run, rule, severity], float(n))
                for role, value in (("trainer", st.trainer_step), ("rollout", st.rollout_step)):
                    if value is not None:
                        step.add_metric([run, role], float(value))
                if st.max_steps:
                    max_steps.add_metric([run], float(st.max_steps))
                if writes:
                    age.add_metric([run], max(0.0, now - max(writes)))
                last = st.last_complete_checkpoint()
                ckpt.add_metric([run], float(last.step) if last is not None else -1.0)
                rows = st.rows(5)
                for name in KEY_METRICS:
                    newest = next((r.value(name) for r in reversed(rows) if r.value(name) is not None), None)
                    if newest is not None:
                        metric.add_metric([run, name], newest)
                slurm = st.slurm
                if slurm is not None and slurm.job is not None:
                    job_state.add_metric([run, slurm.job.job_id, slurm.job.state.value], 1.0)
                    left = slurm.job.time_left()
                    if slurm.job.state.alive and left is not None:
                        job_left.add_metric([run, slurm.job.job_id], left)
        yield from (up, verdict, finding, step, max_steps, age, ckpt, metric, job_left, job_state)


def registry_for(engines: Iterable[Engine]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunsCollector(engines))
    return registry
