"""What to do next, in words (issue 14: the verdict band names the next step).

One sentence from the verdict and the run's state: resume from the last complete
checkpoint, read the logs, look at the alerts. An action is named by its registry name
(`runtop.actions.REGISTRY`); the screen shows its key.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtop.health import READING, Verdict
from runtop.state import RunState


@dataclass(frozen=True)
class Advice:
    text: str
    action: str | None = None  # a vetted action this advice leads to (its key is the screen's)
    pane: str | None = None  # a pane to read (its number key is the screen's)


def advise(state: RunState, verdict: Verdict) -> Advice | None:
    if verdict.verdict == "Down":
        ckpt = state.last_complete_checkpoint()
        if ckpt is not None:
            slurm = state.slurm
            if slurm is not None and slurm.job is not None:
                # A SLURM run resumes by sbatch of its script, once its job has ended (issue 17).
                if not slurm.job.state.ended:
                    return Advice(f"scancel job {slurm.job.job_id}, then resubmit from step {ckpt.step} (last complete)", action="stop")
                return Advice(f"resubmit its batch script from step {ckpt.step} (last complete)", action="resume")
            # Processes still up (a hang, a half-dead run) must be stopped before a resume.
            if any(pids for pids in (state.processes or {}).values()):
                return Advice(f"stop, then resume from step {ckpt.step} (last complete)", action="restart")
            return Advice(f"resume from step {ckpt.step} (last complete)", action="resume")
        if state.checkpoints:
            return Advice("no complete checkpoint: read the logs before relaunching", pane="logs")
        return Advice("read the logs", pane="logs")
    if verdict.verdict == "Degraded":
        return Advice("read the alerts", pane="alerts")
    if verdict.verdict == "Unknown" and verdict != READING and not any(info.bytes_read for info in state.files.values()):
        # Only of a run judged with nothing read: beside a run starting up, or one whose tail is
        # still being read, the question was false (seen in tmux over step 32091 of a 1 GB run).
        return Advice("nothing read yet: is this the run's output directory?")
    return None
