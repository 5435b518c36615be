"""How a run says it is pausing between two steps to evaluate or to save, whatever its framework
(docs/reading.md, "Stalls, at the run's own pace"): the words each framework prints when an
evaluation starts, ticks or ends, and when a save starts.

    Evaluation Progress:  40%|████      | 2/5 [03:12<04:48, 96.1s/it]      SkyRL's eval bar (any tqdm bar of an eval)
    test_gen_batch meta info: {…, 'validate': True}                        verl, each validation batch
    validation generation end                                               verl, a batch generated
    ▶ Starting validation at step 40...                                     NeMo-RL
    📊 Validation Results:                                                  NeMo-RL, the end
    Saving checkpoint for step 40...                                        NeMo-RL
    local_global_step_folder: checkpoints/x/global_step_40                  verl, before it writes
    Saving model checkpoint to out/checkpoint-40                            transformers' Trainer (TRL)

Pure and total: a message in, events out (an evaluation's `Phase("eval", …)`, a save's
`CheckpointSave`), never an exception.
"""

from __future__ import annotations

import re

from .events import TRAINER, CheckpointSave, Event, Phase
from .progress import BAR_RE

EVAL = "eval"
EVAL_BAR_RE = re.compile(r"(?:^|\r)\s{0,4}(?:\[?[\w ]{0,30}\b)?(?:[Ee]val|[Vv]alid)\w{0,12}(?:[ \w]{0,20})?:?\s{0,4}\d{1,3}%\|", re.ASCII)
EVAL_START_RE = re.compile(r"^\W{0,4}Starting validation at step (\d{1,9})|^test_gen_batch meta info\b|^validation generation end\b", re.ASCII)
EVAL_END_RE = re.compile(r"^\W{0,4}Validation Results:", re.ASCII)
SAVE_RE = re.compile(r"^(?:Saving checkpoint for step (\d{1,9})|local_global_step_folder: \S*?global_step_(\d{1,9})\b"
                     r"|Saving model checkpoint to \S*?checkpoint-(\d{1,9})\b)", re.ASCII)


def says(message: str) -> bool:
    """Whether `message` may say a pause: a plain word every such message holds (most records are
    passed at memory speed, without a regex)."""
    return ("valuat" in message or "alidat" in message or "Saving " in message or "test_gen_batch" in message
            or "local_global_step_folder" in message)


def pauses_in(message: str, time: str | None, role: str = TRAINER) -> list[Event]:
    """The evaluation or save `message` announces, ticks or ends; [] for any other message."""
    text = message.strip()
    if not says(text):
        return []
    if (save := SAVE_RE.match(text)) is not None:
        return [CheckpointSave(role, int(next(g for g in save.groups() if g)), time)]
    if EVAL_START_RE.match(text):
        return [Phase(EVAL, True, time)]
    if EVAL_END_RE.match(text):
        return [Phase(EVAL, False, time)]
    if EVAL_BAR_RE.search(text) and (bar := BAR_RE.search(text)) is not None:
        n, total = int(bar.group("n")), int(bar.group("total"))
        return [Phase(EVAL, n < total, time, progress=(n, total))]  # the bar at its total: the end
    return []
