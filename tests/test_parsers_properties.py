"""Random bytes, cut lines and huge lines never make a parser raise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers import metrics_jsonl, rollouts
from runtop.parsers.configs import parse_config
from runtop.parsers.text import parse_duration, redact, split_fields
from tests.helpers import events_of

REAL_LINES = [
    b"\x1b[2m14:01:58\x1b[0m \x1b[32m\x1b[1mSUCCESS\x1b[0m Step 1 |   31.0s | Reward 0.5412 | Trainable 112/128 (87.5%)\n",
    b"[trainer0]:14:02:33 SUCCESS Step 1 |  1m 18s | Loss 0.0031 | Entropy 0.4127 | LR 3.00e-06\n",
    b"14:05:20   ERROR Fatal error in train\nTraceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory\n",
    b"(APIServer pid=1) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: 1678.0 tokens/s, Running: 128 reqs\n",
    b'{"step": 1, "loss/mean": 0.1}\n',
]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from(["orchestrator", "trainer", "inference", "env"]))
def test_random_bytes_never_raise(data, role):
    events_of(data, role)
    metrics_jsonl.parse_line(data)
    rollouts.parse_line(data, None)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL_LINES), st.integers(min_value=0, max_value=200), st.sampled_from(["orchestrator", "trainer", "inference"]))
def test_cut_real_lines_never_raise(line, cut, role):
    events_of(line[:cut], role)
    events_of(line[cut:], role)
    metrics_jsonl.parse_line(line[:cut])


@settings(max_examples=200, deadline=None)
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
