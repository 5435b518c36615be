"""What a SkyRL driver log looks like, for the simulator: its day and clock, the Ray
processes that print into it, its colours, the agent's tools and format rules, and the
names the simulated run uses."""

from __future__ import annotations

import datetime as _dt

RUN_NAME = "biomni-qwen30ba3b-rubric-gspo-sim"
START = 9 * 3600 + 8 * 60 + 41  # 09:08:41 on the day below
DAY = _dt.datetime(2026, 2, 19, tzinfo=_dt.timezone.utc)
ENTRY = "skyrl_entrypoint pid=66570"
WORKER = "MegatronPolicyWorkerBase pid=67012"
ENGINE = "AsyncVLLMInferenceEngine pid=67540"
CYAN, RESET = "\x1b[36m", "\x1b[0m"
PROMPTS, SAMPLES = 4, 5  # a small batch: 20 trajectories per step
TOOLS = ("advanced_web_search", "query_ensembl", "query_clinvar", "get_rna_seq_archs4", "gget.info")
RULE_TEXT = {
    2: "Rule 2 failed: response does not contain exactly one <think> and one </think>",
    3: "Rule 3 failed: response does not end with </execute> or </solution>",
    7: "Rule 7 failed: is_last but outer is <execute>, expected <solution>",
}


def stamp(t: float, sep: str = " ") -> str:
    return (DAY + _dt.timedelta(seconds=t)).strftime(f"%Y-%m-%d{sep}%H:%M:%S")
