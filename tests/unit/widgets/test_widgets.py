"""Each pane's picture from a view built by hand (tests mirror the folders).

Widgets render a `View` and nothing else, so a pane can be drawn without an app, a run
or a terminal: here each one's words for the states a researcher must read at a glance.
"""

from __future__ import annotations

import time

from rich.console import Console

from runtop.parsers.events import GENERATOR, ORCHESTRATOR, TRAINER, AgentReward, FormatFailure, StepMetrics
from runtop.rules.findings import Finding
from runtop.rules.health import Verdict
from runtop.state.log_tail import TailView
from runtop.state.parts import Checkpoint, LogLine
from runtop.state.run import RunState
from runtop.view.view import Slice, SystemView, View
from runtop.widgets.alerts_pane import AlertsPane
from runtop.widgets.disk_pane import DiskPane
from runtop.widgets.health_header import HealthHeader
from runtop.widgets.metric_sparklines import MetricSparklines
from runtop.widgets.rollout_gauges import RolloutGauges
from runtop.widgets.step_table import StepTable


def text_of(renderable) -> str:
    console = Console(width=240, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def view(state: RunState, verdict: Verdict | None = None, **kw) -> View:
    return View(state, SystemView(), verdict or Verdict("Healthy"), time.time(), versions={s: 1 for s in Slice}, **kw)


def run(steps: int = 3, framework: str = "prime-rl", rollout_role: str = ORCHESTRATOR) -> RunState:
    s = RunState(path="/runs/r1", framework=framework, layout="main", run_name="r1", max_steps=10)
    for n in range(1, steps + 1):
        s.apply(StepMetrics(rollout_role, n, {"reward": 0.5 + n / 100}, origin="log"), "o")
        s.apply(StepMetrics(TRAINER, n, {"loss": 0.01 * n, "entropy": 0.4 - n / 100, "step_time_s": 35.0}, origin="metrics"), "m")
    return s


def test_the_header_shows_the_verdict_the_step_and_that_history_is_still_being_read():
    v = Verdict("Down", ["trainer died: torch.OutOfMemoryError"])
    out = text_of(HealthHeader().render_view(view(run(), v, backfill=0.4)))
    assert " Down " in out and "torch.OutOfMemoryError" in out and "step 3/10" in out
    assert "reading history 40%" in out
    assert "reading history" not in text_of(HealthHeader().render_view(view(run(), v)))


def test_alerts_say_no_alerts_on_a_healthy_run_and_list_each_finding_otherwise():
    assert "no alerts" in text_of(AlertsPane().render_view(view(run())))
    f = Finding("inference_dead", "critical", "vLLM is running but holds no GPU memory", "NVML", None, down=True)
    out = text_of(AlertsPane().render_view(view(run(), Verdict("Down", [f.message], [f]))))
    assert "down " in out and "holds no GPU memory" in out


def test_a_partial_checkpoint_is_marked_with_its_reason_beside_the_complete_one():
    s = run()
    s.checkpoints[2] = Checkpoint(2, "/runs/r1/checkpoints/step_2", True, "complete", 6 << 30)
    s.checkpoints[4] = Checkpoint(4, "/runs/r1/checkpoints/step_4", False, "common.pt is 421 KB", 421 << 10)
    out = text_of(DiskPane().render_view(view(s, checkpoint_dir="/runs/r1/checkpoints")))
    assert "step_2" in out and "✓ complete" in out
    assert "step_4" in out and "✗ common.pt is 421 KB" in out


def test_the_step_table_shows_each_sides_numbers_in_one_row_per_step():
    table = StepTable()
    out = text_of(table._render_table(view(run())))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines[0].split()[:3] == ["step", "reward", "loss"]
    assert lines[-1].split()[:3] == ["3", "0.5300", "0.03000"]  # one format per column: the same decimals


def test_a_column_never_mixes_fixed_and_exponent_notation():
    """The KL column once read `9.30e-04` above `0.00136`."""
    from runtop.widgets.render import column_format

    kl = column_format([0.00093, 0.00136, 0.00153])
    assert [kl(v) for v in (0.00093, 0.00136)] == ["9.30e-04", "1.36e-03"]
    loss = column_format([0.008995, -0.004815, 0.001129])
    assert [loss(v) for v in (0.008995, -0.004815)] == ["0.008995", "-0.004815"]
    reward = column_format([5.334, 5.33, 5.25])
    assert [reward(v) for v in (5.334, 5.33)] == ["5.334", "5.330"]


def test_sparklines_draw_the_metrics_that_have_numbers():
    out = text_of(MetricSparklines().render_view(view(run(5))))
    assert "reward" in out and "entropy" in out and "loss" in out
    assert "kl" not in out.lower().split()  # no KL numbers were read: no empty line for it


def test_agent_gauges_come_from_the_plug_ins_own_counters_only():
    """SkyRL-agent's ft/gt pass rates and format rules show when its plug-in counted them;
    a prime-rl run draws none (the counters live in the plug-in's state)."""
    from runtop.frameworks import get

    fw = get("skyrl")
    sky = run(2, framework=fw.name, rollout_role=GENERATOR)
    sky.use_plugin(fw.new_state, fw.reducers)
    for value in (1.0, 0.0, 1.0):
        sky.apply(AgentReward("ft", value), "o")
    sky.apply(FormatFailure(3, count=2), "o")
    out = text_of(RolloutGauges().render_view(view(sky)))
    assert "ft pass" in out and "2/3" in out and "R3×2" in out
    prime = run(2)
    assert "ft pass" not in text_of(RolloutGauges().render_view(view(prime)))


def test_a_view_carries_the_log_tail_it_was_published_with():
    lines = (LogLine(TRAINER, "ERROR", "14:00:00", "CUDA out of memory"),)
    v = view(run(), logs=TailView(lines, 1))
    assert v.logs.lines == lines and v.logs.seq == 1


def test_the_band_names_the_next_step_and_its_key():
    """The verdict band says what to do next: a dead run with a complete checkpoint
    is resumed from it (R); one without sends the user to the logs; a healthy run is calm. The key
    comes first: a long next step is cut at the band's end."""
    s = run()
    s.checkpoints[2] = Checkpoint(2, "/runs/r1/checkpoints/step_2", True, "complete", 6 << 30)
    header = HealthHeader()
    header.keys = {"resume": "R", "logs": "8", "alerts": "9"}
    down = text_of(header.render_view(view(s, Verdict("Down", ["trainer died: torch.OutOfMemoryError"]))))
    assert "next (R): resume from step 2 (last complete)" in down
    assert down.index("next (R):") < down.index("step 3/10")  # a dead run's next step comes first
    s.processes = {"trainer": [4400]}  # still up (a hang): stop first
    header.keys["restart"] = "T"
    assert "next (T): stop, then resume from step 2 (last complete)" in text_of(header.render_view(view(s, Verdict("Down", ["hung"]))))
    s.processes = None
    s.checkpoints.clear()
    assert "next (8): read the logs" in text_of(header.render_view(view(s, Verdict("Down", ["x"]))))
    assert "next (9): read the alerts" in text_of(header.render_view(view(s, Verdict("Degraded", ["y"]))))
    assert "next" not in text_of(header.render_view(view(run(), Verdict("Healthy"))))


def test_a_long_cause_takes_two_lines_of_the_band():
    """Drawn without a terminal the band is 200 columns: a cause longer than that goes on."""
    cause = "inference server (vLLM) died: RuntimeError (CUDA error: an illegal memory access was encountered); in EngineCore_DP0"
    second = "orchestrator cannot reach vLLM: Inference server was not reached after 60 seconds (6 retries) FINAL"
    out = text_of(HealthHeader().render_view(view(run(), Verdict("Down", [cause, second]))))
    lines = out.splitlines()
    assert "Down" in lines[1] and "EngineCore_DP0" in lines[1] and "FINAL" in lines[2] and "Down" not in lines[2]


def test_the_disk_pane_keeps_its_columns_when_a_checkpoint_fails():
    """A long reason once squeezed the bar, the percent and the sizes to nothing exactly
    when a checkpoint failed. The reason goes on a line of its own; the disks keep theirs."""
    import dataclasses

    from tests.tui_helpers import FixedDisks

    s = run()
    s.checkpoints[4] = Checkpoint(4, "/runs/r1/ckpts/global_step_4", False,
                                  "policy/ holds only common.pt, metadata.json (421 KB): no weight shards, a failed save", 421 << 10)
    v = dataclasses.replace(view(s, checkpoint_dir="/runs/r1/ckpts"), system=SystemView(disk=FixedDisks(pressure=True).sample(0.0)))
    lines = text_of(DiskPane().render_view(v)).splitlines()
    shm = next(ln for ln in lines if ln.startswith("/dev/shm"))
    assert "70%" in shm and "360.0G/512.0G" in shm and "█" in shm
    step4 = next(i for i, ln in enumerate(lines) if "global_step_4" in ln)
    assert "421.0K" in lines[step4] and "✗ incomplete" in lines[step4]
    assert "policy/ holds only common.pt" in lines[step4 + 1]


def test_the_demos_gpus_say_simulated_and_a_machines_do_not():
    """The demo shows a GPU reading, labelled so no one takes it for a machine's."""
    import dataclasses

    from runtop.sources.gpu import GpuReading, GpuSnapshot
    from runtop.widgets.gpu_pane import GpuPane

    reading = GpuReading(0, "H100", 95.0, 60 << 30, 80 << 30, 64.0, 600.0)
    pane = GpuPane()
    for simulated, title in ((True, "gpus · simulated"), (False, "gpus")):
        snap = GpuSnapshot([reading], driver="550", taken_at=time.time(), simulated=simulated)
        out = text_of(pane.render_view(dataclasses.replace(view(run()), system=SystemView(gpu=snap))))
        assert "95%" in out and pane.border_title == title


def test_alert_words_agree_with_the_verdict():
    """Lines marked "critical" under a Degraded band once read as a contradiction. A finding
    that makes the run Down says `down`; one that needs you while the run still trains (a
    failed save) says `act now`; both still ring (their severity stays critical)."""
    dead = Finding("crash", "critical", "trainer died: SIGBUS", down=True)
    save = Finding("checkpoint_incomplete", "critical", "step 8's save failed: no weight shards")
    warn = Finding("disk_pressure", "warning", "/dev/shm is 88% full")
    out = text_of(AlertsPane().render_view(view(run(), Verdict("Degraded", [save.message], [save, warn]))))
    assert "act now " in out and "warning " in out and "critical" not in out and "down " not in out
    out = text_of(AlertsPane().render_view(view(run(), Verdict("Down", [dead.message], [dead, save]))))
    assert out.splitlines()[0].startswith("down ") and "act now" in out


def test_the_processes_pane_leads_with_the_runs_slurm_job():
    """On a login node the job is all there is to see of the run's processes."""
    from runtop.parsers.slurm import JobState, SlurmJob
    from runtop.sources.processes import ProcessSnapshot
    from runtop.sources.slurm import JobRef, SlurmSnapshot
    from runtop.widgets.process_tree import ProcessTree

    s = run()
    job = SlurmJob("4242", JobState.RUNNING, "RUNNING", elapsed_s=3600.0, limit_s=86400.0 - 1800, nodes="gpu-[01-04]", node_count=4)
    s.slurm = SlurmSnapshot(JobRef("4242", "job_4242.log in the run dir", log="job_4242.log"), job, True, "squeue --json + sacct --json")
    import dataclasses

    v = dataclasses.replace(view(s), system=SystemView(procs=ProcessSnapshot()))
    lines = text_of(ProcessTree().render_view(v)).splitlines()
    assert lines[0].startswith("SLURM job 4242 RUNNING · 4 nodes gpu-[01-04] · 22h30m left  (squeue --json + sacct --json)"), lines[0]
    assert "no process of this run is running" in lines[1]
    s.slurm = dataclasses.replace(s.slurm, job=dataclasses.replace(job, state=JobState.PENDING, state_text="PENDING", reason="Priority"))
    line = text_of(ProcessTree().render_view(dataclasses.replace(v, state=s))).splitlines()[0]
    assert "job 4242 PENDING · 4 nodes gpu-[01-04] · Priority" in line and "left" not in line


def test_the_processes_pane_says_why_the_ray_state_api_or_the_trainer_endpoint_gave_nothing():
    """A probe the run's config asked for and that failed is said, not silent."""
    import dataclasses

    from runtop.sources.processes import ProcessSnapshot
    from runtop.sources.trainer_metrics import TrainerLive
    from runtop.widgets.process_tree import ProcessTree

    s = run()
    errors = {"ray": "Ray's state API needs the extra: pip install '.[ray]' in runtop's checkout",
              "trainer": "trainer /metrics at http://127.0.0.1:8000/metrics: [Errno 111] Connection refused"}
    v = dataclasses.replace(view(s), system=SystemView(procs=ProcessSnapshot(), errors=errors))
    lines = text_of(ProcessTree().render_view(v)).splitlines()
    assert lines[0] == "Ray: Ray's state API needs the extra: pip install '.[ray]' in runtop's checkout"
    assert lines[1] == "trainer /metrics at http://127.0.0.1:8000/metrics: [Errno 111] Connection refused"
    live = TrainerLive("http://127.0.0.1:8000/metrics", 40, v.now - 5, v.now)
    v2 = dataclasses.replace(v, system=SystemView(procs=ProcessSnapshot(), trainer=live))
    assert text_of(ProcessTree().render_view(v2)).splitlines()[0] == "trainer /metrics: step 40, 5s ago"
