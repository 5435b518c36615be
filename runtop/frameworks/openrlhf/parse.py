"""OpenRLHF's driver console → events. Shapes from a genuine run users posted
(OpenRLHF/OpenRLHF#350): the Ray prefix printed alone on its line, then the line it prefixes;
vLLM's `Processed prompts` bars; the trainer's `Episode [1/1]:  92%|…| 11/12 […]` bar, one
tick per global step; `[repeated 3x across cluster]`; `Job 'raysubmit_…' succeeded` at the
end. The step dict `✨ Global step 12: {'rollout/reward_mean': …}` follows docs/formats.md (from
OpenRLHF's source; no genuine paste of it was found). Crashes: the shared selection.
"""

from __future__ import annotations

import re
from typing import Any

from runtop.frameworks.driver_log import RecordParser, ray_led
from runtop.frameworks.generic.parse import GenericParser
from runtop.parsers.events import TRAINER, Event, MaxSteps, RoleFinished, StepMetrics
from runtop.parsers.metrics_generic import events_of
from runtop.parsers.progress import last_bar, literal_dict
from runtop.parsers.records import Record

EPISODE_RE = re.compile(r"Episode \[(\d{1,6})/(\d{1,6})\]:.{0,80}?(?<!\d)(\d{1,9})/(\d{1,9}) \[", re.ASCII)
GLOBAL_STEP_RE = re.compile(r"Global step (\d{1,9}): (\{.*\})\s*$", re.ASCII | re.S)
JOB_DONE_RE = re.compile(r"Job '[\w-]+' succeeded", re.ASCII)
KEYS = {
    "rollout/reward_mean": "reward", "reward": "reward", "rollout/response_length_mean": "seq_len", "response_length": "seq_len",
    "rollout/truncated_rate": "truncated", "policy_loss": "loss", "kl": "kl", "actor_lr": "lr", "entropy_loss": "entropy",
    "policy_entropy": "entropy", "clip_ratio": "clip_ratio", "timing/step_total": "step_time_s",
}
PHASE = "timing/"


def _own(body: str) -> Record | None:
    """The Episode bar (as last drawn), the step dict, Ray's job verdict."""
    if "Episode [" in body and EPISODE_RE.search(body):
        return Record("orlhf-episode", None, None, body.strip().split("\r")[-1])
    if (i := body.find("Global step ")) >= 0:
        return Record("orlhf-step", None, None, body[i:].strip())
    if JOB_DONE_RE.search(body):
        return Record("orlhf-done", None, None, body.strip())
    return None


header = ray_led(_own)


class OpenRlhfParser(RecordParser):
    def __init__(self) -> None:
        self.max_steps: int | None = None
        # What one tick of the Episode bar is: a step (v0.5-v0.8), or a prompt (v0.9 counts
        # `rollout_batch_size` prompts a step: 128/7500, 256/7500, …). Known from a step dict
        # printed before the bar, or from the bar moving by more than one; a step until then.
        self.per_tick: int | None = None
        self.last_n: int | None = None
        self.last_global: int | None = None
        self.saw_episode = False
        self.generic = GenericParser()

    def _ticks(self, n: int) -> int | None:
        """Items the bar counts per step, as far as the log shows it."""
        if self.last_global and n > 1.5 * self.last_global:
            self.per_tick = max(1, round(n / self.last_global))
        elif self.last_n is not None and n > self.last_n and (n - self.last_n) > 1 and n % (n - self.last_n) == 0:
            self.per_tick = n - self.last_n
        elif self.per_tick is None:
            self.per_tick = 1
        self.last_n = n
        return self.per_tick

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        if rec.fmt == "ray-prefix":
            return
        if rec.fmt == "orlhf-episode":
            m = EPISODE_RE.search(rec.message)
            if m:
                self.saw_episode = True
                episode, episodes, n, per = (int(g) for g in m.groups())
                tick = (self._ticks(n) if n else self.per_tick) or 1
                total = episodes * (per // tick)
                if total != self.max_steps:
                    self.max_steps = total
                    out.append(MaxSteps(total, "the Episode bar" if tick == 1 else f"the Episode bar ({tick} prompts a step)"))
                if n == 0:
                    return
                # One step per `tick`: progress, and the step's numbers in the bar's postfix
                # (`reward=0.219, kl=0.0027, policy_loss=…`) where no step dict prints them.
                bar = last_bar(rec.message)
                post = dict(bar.postfix) if bar is not None else {}
                step = ((episode - 1) * per + n) // tick
                out.extend(events_of(step, post, KEYS, PHASE, origin="bar") if post else [StepMetrics(TRAINER, step, {}, {}, "log")])
                if episode == episodes and n == per:
                    out.append(RoleFinished(TRAINER, rec.time))  # the last episode's bar at N/N: training is done
            return
        if rec.fmt == "orlhf-step":
            m = GLOBAL_STEP_RE.match(rec.message)
            data = _dict(m.group(2)) if m else None
            if m and data is not None:
                self.last_global = int(m.group(1))
                out.extend(events_of(int(m.group(1)), data, KEYS, PHASE, origin="log"))
            return
        if rec.fmt == "orlhf-done":
            out.append(RoleFinished(TRAINER, rec.time))
            return
        if rec.fmt == "bar" and not self.saw_episode:
            # No Episode bar (an SFT or RM run: `Train step of epoch 0: …| 180/180 […, gpt_loss=1.17]`,
            # `Train epoch: 100%|…| 1/1`): the generic reader's bars are its progress and its end.
            self.generic.read_progress(rec, rec.message, out)
            return
        self.crash(rec, role, out, fatal_traceback=rec.proc is None)


def _dict(text: str) -> dict[str, Any] | None:
    return literal_dict(text)


Parser = OpenRlhfParser  # what the plug-in base asks for
