"""A SkyRL driver log's lines start the same records whichever way `header` reads them: its
one-match reading of a loguru record or a `print` behind one Ray prefix (most of a log) gives
exactly the record the step-by-step reading gives (the prefix, Ray's folds and a rank's prefix
taken off, then the body), on any line and after any record, an agent's code block included.
Its bars are split the same whether a line holds one frame or many."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers.records import Record, RecordAssembler
from runtop.parsers.skyrl_records import frames, header, header_by_steps, split_frames
from tests.inner import examples

PREFIXES = [
    "", "(skyrl_entrypoint pid=4101) ", "(skyrl_entrypoint pid=4101)", "(skyrl_entrypoint pid=4101)  ",
    "(skyrl_entrypoint pid=4101)\t", "(pid=9) ", "(raylet) ", "(FSDPPolicyWorkerBase pid=12, ip=10.0.0.2) ",
    "(a b.c:d-e pid=3) ", "(bad pid=x) ", "(AsyncVLLMInferenceEngine pid=5) ", "(skyrl_entrypoint pid=4101 ",
    "(x pid=1)(y pid=2) ",
]
RANKS = ["", "[rank0]:", "[rank12]: "]
BODIES = [
    "2026-03-02 10:01:01.101 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'",
    "2026-03-02 10:01:01.586 | INFO     | skyrl_train.trainer:train:342 - Finished: 'step', time cost: 71.01s",
    "2026-03-02T10:01:01,5 | ERROR | skyrl_train.workers:run:9 -Traceback (most recent call last):",
    "2026-03-02 10:01:01 |WARNING| m:f:1 - ",
    "2026-03-02 10:01:01 | INFO | m:f:1 -\n",
    "2026-03-02 10:01 | INFO | m:f:1 - cut",
    "2026-03-02 10:01:01 | NOTICE | m:f:1 - odd level",
    "global_step: 3", "global_step: x", "ft_reward: 1.0", "total_reward: nan", "reward/avg_pass_at_5: 0.61",
    "avg_final_rewards: 0.2", "{'policy_loss': -0.003, 'trainer/global_step': 3}", "{\"a\": 1}",
    "Step 3: {'a': '0.1000'}", "Policy Train epoch [1/1]:  50%|#    | 2/4 [00:11<00:11,  5.52s/it, pg=-0.011]",
    "Training Batches Processed:   1%|          | 1/100 [01:16<?, 71.01s/it]", "Started: 'generate'",
    "Finished: 'generate', time cost: 41.20s", "Total steps: 100", "Rubric evaluation complete for instance a: total=1",
    "*** SIGSEGV received at time=1", "Attempt #2 (Total restarts: 1)", "Training exited with code 1",
    "[2026-02-19 16:44:02] Attempt #2", "[2025-01-18 21:04:10,118] [INFO] [logging.py:128:log_dist] x",
    "+ uv run -m skyrl_train.entrypoints.main_base", "++ echo", "+x", "Traceback (most recent call last):",
    "  File \"x.py\", line 1, in <module>", "", " global_step: 3", "INFO 08-21 14:01:27 [loggers.py:257] Engine 000: x",
    "Code execution took 3.2 seconds", "the answer is 7 global_step: 4",
]
SUFFIXES = ["", " [repeated 2x across cluster]", "\r", " ", "  [repeated 10x across cluster] tail"]
PROCS = [None, "skyrl_entrypoint pid=4101", "FSDPPolicyWorkerBase pid=12", "raylet"]
PENDING_MESSAGES = ["Started: 'step'", "Code execution took 3.2 seconds", "Timeout error during execute", "global_step: 3"]

lines = st.one_of(
    st.builds(lambda p, r, b, s: p + r + b + s, st.sampled_from(PREFIXES), st.sampled_from(RANKS), st.sampled_from(BODIES),
              st.sampled_from(SUFFIXES)),
    st.text(alphabet=st.sampled_from(sorted(set("".join(PREFIXES + BODIES + SUFFIXES)))), max_size=120),
)
pendings = st.one_of(st.none(), st.builds(lambda m, p: Record("print", None, None, m, p), st.sampled_from(PENDING_MESSAGES),
                                          st.sampled_from(PROCS)))


@settings(max_examples=examples(3000), deadline=None)
@given(lines, pendings)
def test_a_line_starts_the_record_the_step_by_step_reading_says(line, pending):
    assert header(line, pending) == header_by_steps(line, pending)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(lines, max_size=30))
def test_a_stretch_of_lines_groups_into_the_same_records(stretch):
    fast, slow = RecordAssembler(header), RecordAssembler(header_by_steps)
    assert fast.feed(stretch) + fast.flush() == slow.feed(stretch) + slow.flush()


def test_an_agent_block_keeps_its_output_lines_whatever_they_look_like():
    """The model's output under `Code execution took …` may print anything: a reward line there
    is its output, not the agent's own print, and the fast reading leaves it to the block."""
    block = Record("print", None, None, "Code execution took 3.2 seconds", "skyrl_entrypoint pid=4101")
    line = "(skyrl_entrypoint pid=4101) reward/avg_pass_at_5: 0.61"
    assert header(line, block) is None
    assert header(line, None) == Record("print", None, None, "reward/avg_pass_at_5: 0.61", "skyrl_entrypoint pid=4101")


BAR_PIECES = [
    "Policy Train epoch [1/1]:  50%|#####     | 2/4 [00:11<00:11,  5.52s/it, pg=-0.011]",
    "Training Batches Processed:   1%|          | 1/100 [01:16<?, 71.01s/it]", "100%|##| 4/4 [00:22<00:00]",
    "(FSDPPolicyWorkerBase pid=4388) ", "{'policy_loss': -0.003}", "global_step: 3", "\r", "\r", " ", "  ", "%|", "x",
]


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.one_of(st.lists(st.sampled_from(BAR_PIECES), max_size=6).map("".join), st.sampled_from(BODIES)), max_size=20))
def test_bars_split_the_same_whether_a_line_holds_one_frame_or_many(stretch):
    """Each bar line read on its own (`frames`, every `\r`-separated frame looked at) and the
    lines without a bar as they are: what `split_frames` hands on, a single frame read directly."""
    assert split_frames(stretch) == [piece for line in stretch for piece in (frames(line) if "%|" in line else [line])]
