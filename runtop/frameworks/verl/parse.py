"""verl's driver log → events (docs/formats.md, "Other frameworks"; shapes from genuine logs users
posted: verl-project/verl#7412, #2060, #1208, #316, #4921, #1691, #2398).

    (TaskRunner pid=222265) step:34 - global_seqlen/min:419336 - actor/entropy:0.2226 - … - timing_s/step:96.551
    (main_task pid=51520) step:5 - …                      (before 2025-03 the driver was `main_task`)
    step:0 - val-aux/openai/gsm8k/reward/mean@1:0.565 - val-core/openai/gsm8k/acc/mean@1:0.508
    Training Progress:   6%|▌         | 12/200 [17:38<4:36:12, 88.2s/it]
    (WorkerDict pid=87687) torch.OutOfMemoryError: CUDA out of memory. …
    ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
    (raylet) A worker died or was killed while executing a task by an unexpected system error. …

Records are cut by the shared Ray-driver-log header (Ray prefixes, `(raylet)`, `[repeated
Nx]`), with one addition: each `step:N - …` line is a record of its own (consecutive lines of
one Ray process are otherwise one record). Crashes go through the shared root-cause selection.
"""

from __future__ import annotations

import re
from dataclasses import replace

from runtop.frameworks.driver_log import RecordParser, ray_led
from runtop.parsers.events import TRAINER, CheckpointDir, Event, MaxSteps, RoleFinished, StepMetrics, Unrecognised
from runtop.parsers.metrics_generic import events_of, row_of
from runtop.parsers.numbers import strict_float
from runtop.parsers.records import Record

STEP_RE = re.compile(r"step:(\d{1,9}) - ", re.ASCII)
PAIR_RE = re.compile(r"([\w/@.\-]+):([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)(?= - |\s*$)", re.ASCII)
TOTAL_RE = re.compile(r"Total training steps: (\d{1,9})", re.ASCII)
BAR_RE = re.compile(r"Training Progress:.{0,80}?(?<!\d)(\d{1,9})/(\d{1,9}) \[", re.ASCII)
CKPT_DIR_RE = re.compile(r"""(?:trainer\.default_local_dir=|'default_local_dir': ')([^\s',\]]+)""", re.ASCII)
SAVED_RE = re.compile(r"(?:local_global_step_folder: |[Ss]aved? (?:checkpoint|model) to:? )(\S+?)/global_step_\d+", re.ASCII)

# verl's keys → runtop's metric registry (its console and file logger write the same keys).
ROLLOUT_KEYS = {
    "critic/score/mean": "reward", "response_length/mean": "seq_len", "response_length/clip_ratio": "truncated",
    "num_turns/mean": "turns",
}
TRAINER_KEYS = {
    "actor/pg_loss": "loss", "actor/entropy": "entropy", "actor/entropy_loss": "entropy",  # the older name
    "actor/ppo_kl": "kl", "actor/pg_clipfrac": "clip_ratio", "actor/grad_norm": "grad_norm", "actor/lr": "lr",
    "timing_s/step": "step_time_s", "perf/throughput": "throughput_tok_s",
    "perf/max_memory_allocated_gb": "peak_mem_gib", "actor/perf/max_memory_allocated_gb": "peak_mem_gib",
}
PHASE = "timing_s/"
# verl's own lines that begin a record even right after another line of the same Ray process.
OWN_STARTS = ("Training Progress", "Final validation metrics", '("Final validation metrics', "local_global_step_folder", "Total training steps")


def _own(body: str) -> Record | None:
    """verl's step line, bar and end always start a record."""
    if body.startswith("step:") and STEP_RE.match(body):
        return Record("verl-step", None, None, body)
    if body.startswith(OWN_STARTS):
        return Record("verl", None, None, body)
    return None


header = ray_led(_own)


KEYS = {**ROLLOUT_KEYS, **TRAINER_KEYS}


def step_events(msg: str, time: str | None) -> list[Event]:
    m = STEP_RE.match(msg)
    if m is None:
        return []
    step = int(m.group(1))
    if step == 0:
        return []  # `step:0` is the validation before training (`val-core/…`): no training step
    data = {k: v for k, raw in PAIR_RE.findall(msg[m.end() - 3:]) if (v := strict_float(raw)) is not None}
    out = events_of(step, data, KEYS, PHASE, origin="log")
    return [replace(e, time=time) if isinstance(e, StepMetrics) else e for e in out]


def metrics_line(line: str, source: str) -> list[Event]:
    """verl's file logger (`trainer.logger=[…,file]`): `{"step": N, "data": {<the console's keys>}}`."""
    got = row_of(line, source)
    if got is None or isinstance(got, Unrecognised):
        return [] if got is None else [got]
    step, data = got
    return [] if step == 0 else events_of(step, data, KEYS, PHASE)


class VerlParser(RecordParser):
    """Records of one verl driver log → events. Keeps only the last time seen."""

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        if self.vllm_or_clock(rec, out):
            return
        msg = rec.message.strip()
        if rec.fmt == "verl-step":
            out.extend(step_events(msg, rec.time or self.last_time))
            return
        if msg.lstrip('("').startswith("Final validation metrics"):  # pprint wraps a long one: `("Final validation metrics: {…"`
            # `fit()` prints it after the last step, then returns: the run ended normally.
            out.append(RoleFinished(TRAINER, rec.time or self.last_time))
            return
        if msg.startswith("Total training steps") and (total := TOTAL_RE.match(msg)) is not None:
            out.append(MaxSteps(int(total.group(1)), "the log's `Total training steps`"))
            return
        if "Training Progress" in msg and (bar := BAR_RE.search(msg)) is not None:
            out.append(MaxSteps(int(bar.group(2)), "the Training Progress bar"))
            return
        if "default_local_dir" in msg or "aved" in msg or msg.startswith("local_global_step_folder"):
            for line in (msg, *rec.lines()[:200]):
                found = CKPT_DIR_RE.search(line) or SAVED_RE.search(line)
                if found:
                    out.append(CheckpointDir(found.group(1), "the log's trainer.default_local_dir"))
                    break
        if rec.time is None and self.last_time is not None:
            rec.time = self.last_time
        # A worker's own traceback is fatal only with a way to die in it (vLLM prints one per
        # failed request); the driver's (TaskRunner, main_task) ends the run.
        self.crash(rec, role, out, fatal_traceback=rec.proc is None or rec.proc.startswith(("TaskRunner", "main_task")))


Parser = VerlParser  # what the plug-in base asks for
