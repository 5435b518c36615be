"""How a run says it ended normally, whatever its framework (docs/reading.md, "Ends"):
`RL trainer finished!`, `SFT trainer finished!`, `Training completed. Do not forget to share
your model…` (transformers' Trainer), `Training finished`, `Orchestrator finished.`, Ray's
`Job 'raysubmit_…' succeeded`, the Trainer's `{'train_runtime': …}` summary.

A timer that finished (`Finished: 'generate'`), an epoch or a phase that completed, a
checkpoint saved — none of these is the run's end. Pure and total.
"""

from __future__ import annotations

import re

# The run's own last words: a training/trainer/run/job (optionally named: `RL`, `SFT`, `GRPO`,
# `Orchestrator`) that finished, completed or is done, at the start of its message.
END_RE = re.compile(
    r"^\W{0,4}(?:(?:[A-Z][\w-]{0,15} ){0,2})?(?:training|trainer|orchestrator|run|job|fit)(?: run| loop| process)?"
    r"(?: has| is| was)? (?:successfully )?(?:finished|completed|complete|done|succeeded|ended)(?: successfully)?(?:[.!: ]|$)",
    re.ASCII | re.I,
)
# `Finished training`, `Training finished after 400 steps`, `All training done`.
END_ALT_RE = re.compile(r"^\W{0,4}(?:finished|completed|done with) training\b|^\W{0,4}all (?:training )?(?:steps )?(?:done|finished|complete)\b",
                        re.ASCII | re.I)
RAY_JOB_RE = re.compile(r"Job '[\w.:-]{1,120}' succeeded", re.ASCII)
# DeepSpeed's launcher, for each rank it started: `Process 2871140 exits successfully.`
LAUNCHER_RE = re.compile(r"^Process \d{1,9} exits successfully\.?$", re.ASCII)
# Not an end, though the words are near: a phase, an epoch, an evaluation, a save.
NOT_END_RE = re.compile(r"epoch|eval|valid|sav|checkpoint|warm|phase|rollout|generat|step \d|batch|\bstage\b|\bfailed\b|\berror\b",
                        re.ASCII | re.I)
SUMMARY_RE = re.compile(r"^\{['\"]train_runtime['\"]: ", re.ASCII)
MAX_END_LINE = 200


def says_ended(message: str) -> bool:
    """True when `message` (a record's message, its header stripped) is a run's normal end."""
    text = message.strip()
    if not text or len(text) > MAX_END_LINE:
        return SUMMARY_RE.match(text) is not None
    if SUMMARY_RE.match(text) or RAY_JOB_RE.search(text) or LAUNCHER_RE.match(text):
        return True
    if not (END_RE.match(text) or END_ALT_RE.match(text)):
        return False
    return NOT_END_RE.search(text) is None


# A cheap first look: records without any of these words are not read for an end.
QUICK_RE = re.compile(r"[Ff]inish|[Cc]omplete|[Dd]one|[Ss]ucceeded|[Ee]nded|train_runtime", re.ASCII)
