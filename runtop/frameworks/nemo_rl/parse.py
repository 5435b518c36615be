"""NeMo-RL's driver console → events. The step block as NeMo-RL's GRPO loop prints it
(nemo_rl/algorithms/grpo.py; its bullet names match those a log parser written against
genuine NeMo-RL logs reads: `• Generation KL Error`, `• Buffer Size`, `• weight_sync: Xs`):

    ========================= Step 12/500 =========================
    ▶ Preparing batch...
    📊 Training Results:
      • Loss: 0.0123
      • Avg Reward: 0.6100
      • Mean Generation Length: 412.3000
    ⏱️  Timing:
      • Total step time: 88.10s
      • generation: 60.20s (68.3%)

Ray workers' lines (`(VllmGenerationWorker pid=N) …`) may land between a step's lines, so
the bullets are read line by line against the step and section last seen, wherever the
record cutting put them. Crashes: the shared selection.
"""

from __future__ import annotations

import re

from runtop.frameworks.driver_log import RecordParser, ray_led
from runtop.parsers.columns import BY_NAME, ROLLOUT
from runtop.parsers.events import ROLLOUT_SIDE, TRAINER, Event, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.numbers import strict_float
from runtop.parsers.progress import registry_name
from runtop.parsers.records import Record

STEP_RE = re.compile(r"^=+ Step (\d{1,9})/(\d{1,9}) =+\s*$", re.ASCII)
BULLET_RE = re.compile(r"^\s*• ([^:]{1,80}): ([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(s?)")
ROLLOUT_BULLETS = {"Avg Reward": "reward", "Avg Filtered Reward": "reward", "Mean Generation Length": "seq_len"}
TRAINER_BULLETS = {"Loss": "loss", "Total step time": "step_time_s"}


def _own(body: str) -> Record | None:
    return Record("nemo-step", None, None, body.strip()) if body.startswith("=") and STEP_RE.match(body) else None


header = ray_led(_own)


class NemoRlParser(RecordParser):
    def __init__(self) -> None:
        self.step: int | None = None
        self.max_steps: int | None = None
        self.timing = False  # inside the `⏱️  Timing:` section

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        lines = rec.lines()
        if rec.proc is None or rec.fmt == "nemo-step":
            for line in (rec.message, *lines):
                self._line(line, out)
        if rec.fmt != "nemo-step":
            self.crash(rec, role, out, fatal_traceback=rec.proc is None)

    def _line(self, line: str, out: list[Event]) -> None:
        s = line.strip()
        m = STEP_RE.match(s)
        if m:
            self.step, total = int(m.group(1)), int(m.group(2))
            self.timing = False
            if total != self.max_steps:
                self.max_steps = total
                out.append(MaxSteps(total, "the Step N/M header"))
            return
        if s.startswith(("📊 Training Results", "📊")):
            self.timing = False
            return
        if "Timing:" in s and s.startswith("⏱"):
            self.timing = True
            return
        if self.step is None or not s.startswith("•"):
            return
        b = BULLET_RE.match(s)
        if b is None or (value := strict_float(b.group(2))) is None:
            return
        name = b.group(1).strip()
        # DPO and SFT write their bullets in lower case (`• loss:`), GRPO capitalised: any key the
        # registry knows by another spelling is that metric.
        known = registry_name(name)
        if name not in ROLLOUT_BULLETS and name not in TRAINER_BULLETS and known is not None:
            side = ROLLOUT_SIDE if BY_NAME[known].owner == ROLLOUT else TRAINER
            out.append(StepMetrics(side, self.step, {known: value}, {}, "log"))
        elif name in ROLLOUT_BULLETS:
            out.append(StepMetrics(ROLLOUT_SIDE, self.step, {ROLLOUT_BULLETS[name]: value}, {}, "log"))
        elif name in TRAINER_BULLETS:
            out.append(StepMetrics(TRAINER, self.step, {TRAINER_BULLETS[name]: value}, {}, "log"))
            if name == "Total step time" and self.step == self.max_steps:
                out.append(RoleFinished(TRAINER))  # the loop ends after its last step's timing
        elif self.timing and b.group(3) == "s":
            out.append(StepMetrics(TRAINER, self.step, {}, {name: value}, "log"))
        else:
            out.append(StepMetrics(TRAINER, self.step, {}, {}, "log", None, {name: value}))


Parser = NemoRlParser  # what the plug-in base asks for
