"""Random bytes, cut lines and huge lines never make a parser raise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers import metrics_jsonl, rollouts
from runtop.parsers.configs import parse_config
from runtop.parsers.skyrl_agent import called_functions, format_rule, launch_config
from runtop.parsers.text import parse_duration, redact, split_fields
from tests.helpers import events_of, skyrl_events_of
from tests.inner import examples

REAL_LINES = [
    b"\x1b[2m14:01:58\x1b[0m \x1b[32m\x1b[1mSUCCESS\x1b[0m Step 1 |   31.0s | Reward 0.5412 | Trainable 112/128 (87.5%)\n",
    b"[trainer0]:14:02:33 SUCCESS Step 1 |  1m 18s | Loss 0.0031 | Entropy 0.4127 | LR 3.00e-06\n",
    b"14:05:20   ERROR Fatal error in train\nTraceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory\n",
    b"(APIServer pid=1) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: 1678.0 tokens/s, Running: 128 reqs\n",
    b'{"step": 1, "loss/mean": 0.1}\n',
]


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=4096), st.sampled_from(["orchestrator", "trainer", "inference", "env"]))
def test_random_bytes_never_raise(data, role):
    events_of(data, role)
    metrics_jsonl.parse_line(data)
    rollouts.parse_line(data, None)


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(REAL_LINES), st.integers(min_value=0, max_value=200), st.sampled_from(["orchestrator", "trainer", "inference"]))
def test_cut_real_lines_never_raise(line, cut, role):
    events_of(line[:cut], role)
    events_of(line[cut:], role)
    metrics_jsonl.parse_line(line[:cut])


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=300))
def test_text_helpers_are_total(text):
    parse_duration(text)
    split_fields(text)
    redact(text)
    parse_config(text, "toml")
    parse_config(text, "json")


def test_huge_lines_never_raise():
    huge = b"14:01:58 WARNING " + b"x" * (2 << 20) + b"\n" + b"Step 9 | " * 100_000 + b"\n"
    events_of(huge, "orchestrator")
    metrics_jsonl.parse_line(b'{"step": 1, "loss/mean": ' + b"9" * 100_000 + b"}")


SKYRL_LINES = [
    b"\x1b[36m(skyrl_entrypoint pid=66570)\x1b[0m 2026-02-19 11:00:58.123 | INFO     | skyrl_train.trainer:train:342 - Finished: 'generate', time cost: 5941.60s\n",
    b"(skyrl_entrypoint pid=66570) {'policy_loss': 9.59e-05, 'policy_lr': 9.99e-07, 'ppo_clip_ratio': 0.3125, 'policy_entropy': 7.453125}\n",
    b"(skyrl_entrypoint pid=66570) Step 1: \n(skyrl_entrypoint pid=66570) {'loss/avg_final_rewards': '5.2275', 'timing/generate': '5941.6000'}\n",
    b"\rPolicy Train epoch [1/1]: 100%|\xe2\x96\x88\xe2\x96\x88| 80/80 [02:57<00:00,  2.22s/it, pg=-0.402, ent=9.05, grad_norm=0.34](skyrl_entrypoint pid=1) global_step: 2\n",
    b"\rTraining Batches Processed:   0%|          | 1/212 [1:43:52<365:16:51, 6232.28s/it]",
    b"(skyrl_entrypoint pid=1) 2026-02-19 10:00:00.000 | WARNING  | skyrl_agent.tools:execute:212 - Code execution took 278.41 seconds. Code:\n(skyrl_entrypoint pid=1) res = advanced_web_search('BRCA1')\n(skyrl_entrypoint pid=1) Output:\n",
    b"(skyrl_entrypoint pid=1) Rubric evaluation complete for instance 1234: total=6.5, gt=1.0, rubric=4.5, ft=1.0\n",
    b"[2026-02-19 16:44:02] Attempt #2 (Total restarts: 1)\n[2026-02-19 16:44:02] Training exited with code 1 after 27115s\n",
    b"+ python -m skyrl_train.entrypoints.main_base trainer.ckpt_path=/x 'trainer.run_name=a b' generator.n_samples_per_prompt=5\n",
    b"(raylet) A worker died or was killed while executing a task by an unexpected system error. [repeated 3x across cluster]\n",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=4096))
def test_skyrl_random_bytes_never_raise(data):
    skyrl_events_of(data)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(SKYRL_LINES), st.integers(min_value=0, max_value=400), st.binary(max_size=40))
def test_skyrl_cut_and_garbled_lines_never_raise(line, cut, junk):
    skyrl_events_of(line[:cut])
    skyrl_events_of(line[cut:])
    skyrl_events_of(line[:cut] + junk + line[cut:])


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from(SKYRL_LINES), max_size=12), st.text(max_size=200))
def test_skyrl_shuffled_records_never_raise(lines, text):
    skyrl_events_of(b"".join(lines) + text.encode("utf-8", "surrogatepass"))
    launch_config(text)
    called_functions(text)
    format_rule(text)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from([b"[rank0]:", b"[rank12]: ", b"[default3]:", b"[trainer0]:", b"[", b"]:", b"\n", b"\n[", b"x", b" ", b"[rank", b"0]:", b"epoch [1/1]: "]), max_size=30))
def test_rank_prefixes_go_as_the_line_start_regex_takes_them(parts):
    """`strip_rank_prefixes` searches for `\\n[` instead of trying `(?m)^` at every byte (that was
    7.7 s a GB of a SkyRL log); it removes exactly what the regex removes."""
    from runtop.parsers.text import TORCHRUN_PREFIX_RE_B, strip_rank_prefixes

    data = b"".join(parts)
    assert strip_rank_prefixes(data) == TORCHRUN_PREFIX_RE_B.sub(b"", data)


# ---- the generic reader (no framework's help) -------------------------------------------------
GENERIC_LINES = [
    "Training Progress:   6%|▌         | 12/200 [17:38<4:36:12, 88.2s/it, loss=0.3]",
    "[2026-03-02 10:26:08,331][__main__][INFO] - step 7/600 loss=0.0241 reward=0.2504 kl=0.0033",
    "{'loss': '-7.749e-07', 'grad_norm': '1.269', 'reward': '0.1146'}",
    '{"step": 8, "loss": 0.02, "data": {"actor/pg_loss": 0.1}}',
    "========================= Step 10/600 =========================",
    "  • Avg Reward: 0.3300",
    "slurmstepd: error: *** JOB 4412871 ON gpu-a07 CANCELLED AT 2025-03-02T10:00:01 DUE TO TIME LIMIT ***",
    "(WorkerDict pid=4811, ip=10.0.0.3) *** SIGABRT received at time=1712345678 on cpu 17 ***",
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 88, in <module>',
    "ValueError: Expected parameter logits",
    "Training completed. Do not forget to share your model on huggingface.co/models =)",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(GENERIC_LINES), st.text(max_size=200)), max_size=20), st.integers(min_value=0, max_value=300))
def test_the_generic_reader_never_raises_on_cut_shuffled_or_random_lines(lines, cut):
    from runtop.frameworks.generic.parse import GenericParser, header
    from runtop.parsers import ends, progress
    from runtop.parsers.records import RecordAssembler
    from runtop.parsers.skyrl_records import split_frames

    lines = [ln[:cut] if i % 3 == 0 else ln for i, ln in enumerate(lines)]
    asm = RecordAssembler(header)
    GenericParser().parse(asm.feed(split_frames(lines)) + asm.flush(), "trainer")
    for ln in lines:
        progress.last_bar(ln)
        progress.step_header(ln, len(progress.pairs(ln)))
        progress.logged_dict(ln)
        ends.says_ended(ln)
