"""Fuzz: every parser entry point is total, and whole mutated run dirs never
kill a command.

The per-parser fuzz is marked `slow` (10,000 examples each); CI runs it, as it runs every
test. `pytest -m "not slow"` skips it while you work. The pipeline fuzz uses a fixed seed,
so a failure reproduces.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtop.cli.main import main
from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from runtop.parsers import metrics_jsonl, rollouts
from runtop.parsers.configs import parse_config
from runtop.parsers.hygiene import mask, printable, public, redact
from runtop.parsers.numbers import loads, strict_float, strict_int
from runtop.parsers.skyrl_agent import called_functions, format_rule, launch_config
from runtop.parsers.text import clean_bytes, parse_duration, split_fields
from runtop.sources.vllm_metrics import parse_metrics
from tests.helpers import events_of, skyrl_events_of
from tests.stories.test_hostile_input import CASES
from tests.unit.parsers.test_parsers_properties import REAL_LINES, SKYRL_LINES

N = 10_000
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
HOSTILE = [c[2].encode("utf-8", "surrogatepass")[:2000] for c in CASES]
PIECES = REAL_LINES + SKYRL_LINES + HOSTILE + [b"\x1b]", b"\x07", b"\r", b"\n", b"[", b"{", b'"', b"\xff", b"\xc2\x9b", b"9" * 50, b"NaN", b"-Infinity"]


@st.composite
def log_bytes(draw) -> bytes:
    """Real lines, hostile lines and raw bytes, cut and glued together."""
    parts = draw(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=64)), max_size=12))
    data = b"".join(parts)
    if data and draw(st.booleans()):
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=16)) + data[cut:]
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["step", "loss/mean", "time/step", "traces", "rewards", "score", "weight", "errors", "type", "nodes", "timing", "reward", "run", "work", "x"]), kids, max_size=5),
    max_leaves=30,
)


@pytest.mark.slow
@FUZZ
@given(log_bytes(), st.sampled_from(["orchestrator", "trainer", "inference", "env"]))
def test_prime_rl_and_vllm_log_records(data, role):
    events_of(data, role)


@pytest.mark.slow
@FUZZ
@given(log_bytes(), st.none() | st.integers(1, 64))
def test_skyrl_driver_log_records(data, batch):
    skyrl_events_of(data, batch)


@pytest.mark.slow
@FUZZ
@given(st.one_of(json_values.map(lambda v: json.dumps(v, allow_nan=True)), log_bytes().map(lambda b: b.decode("utf-8", "replace"))))
def test_structured_lines(line):
    metrics_jsonl.parse_line(line)
    rollouts.parse_line(line, None)
    rollouts.parse_line(line, 3)
    parse_config(line, "json")
    parse_config(line, "toml")
    try:
        loads(line)
    except ValueError:
        pass  # the one exception `loads` promises


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=400))
def test_text_helpers(text):
    parse_duration(text)
    split_fields(text)
    strict_int(text)
    strict_float(text)
    launch_config(text)
    called_functions(text)
    format_rule(text)
    for out in (redact(text), printable(text), public(text)):
        assert isinstance(out, str)
    assert len(mask(text)) == len(text)
    for ch in "\x1b\x07\x9b\u202e":
        assert ch not in public(text) and ch not in mask(text)
    try:
        parse_metrics(text)
    except ValueError:
        pass  # "not Prometheus text", said in the pane


@pytest.mark.slow
@FUZZ
@given(log_bytes())
def test_clean_bytes_leaves_no_escape(data):
    out = clean_bytes(data)
    assert b"\x1b" not in out and b"\x07" not in out


# ---- whole run dirs, mutated --------------------------------------------------------------
BIG = 1 << 20


def _sparse_copy(src: str, dst: str) -> None:
    """The simulated checkpoint shards are GB-sized sparse files: copy their size, not their zeros."""
    if os.path.getsize(src) > BIG:
        with open(dst, "wb") as f:
            f.truncate(os.path.getsize(src))
    else:
        shutil.copy2(src, dst)


def _mutate(root: str, rng: random.Random) -> str:
    files = sorted(os.path.join(d, n) for d, _s, ns in os.walk(root) for n in ns)
    path = rng.choice(files)
    if os.path.islink(path) or os.path.getsize(path) > BIG:
        with open(path, "r+b") as f:
            f.truncate(rng.randint(0, BIG))
        return f"shrink {os.path.relpath(path, root)}"
    with open(path, "rb") as f:
        data = f.read()
    op = rng.choice(["cut", "insert", "flip", "hostile", "empty", "dup", "dir", "loop", "delete", "binary"])
    at = rng.randint(0, len(data))
    if op == "cut":
        data = data[:at]
    elif op == "insert":
        data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) + data[at:]
    elif op == "flip" and data:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    elif op == "hostile":
        data = data[:at] + rng.choice(HOSTILE) + data[at:]
    elif op == "empty":
        data = b""
    elif op == "dup":
        data = data + data[at:]
    elif op == "binary":
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 4096)))
    if op == "dir":
        os.unlink(path)
        os.mkdir(path)
    elif op == "loop":
        os.unlink(path)
        os.symlink(os.path.basename(path), path)
    elif op == "delete":
        os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return f"{op} {os.path.relpath(path, root)}"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    base = tmp_path_factory.mktemp("seeds")
    out = []
    for scenario in ("healthy", "trainer-oom", "partial-checkpoint"):
        root = str(base / scenario)
        Simulator(root, scenario=scenario, max_steps=6, fail_step=4).run()
        out.append((root, root))
    sky = str(base / "skyrl")
    SkyrlSimulator(sky, max_steps=2).run()
    log = next(os.path.join(sky, "logs", n) for n in os.listdir(os.path.join(sky, "logs")) if not n.startswith("infra"))
    out.append((sky, log))
    return out


@pytest.mark.slow  # 40 mutated run dirs through every command: CI runs it, the inner loop does not
def test_mutated_run_dirs_never_kill_a_command(seeds, tmp_path):
    rng = random.Random(20261123)
    for i in range(40):
        src, target = rng.choice(seeds)
        root = str(tmp_path / f"m{i}")
        shutil.copytree(src, root, symlinks=True, copy_function=_sparse_copy)
        what = [_mutate(root, rng) for _ in range(rng.randint(1, 4))]
        arg = os.path.join(root, os.path.relpath(target, src)) if target != src else root
        for argv in (["status", arg], ["status", "--json", arg], ["check", arg]):
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(argv)
            assert code not in (70, 130), f"{argv[0]} after {what}: {err.getvalue()}"
            assert "\x1b" not in out.getvalue() + err.getvalue()
            if "--json" in argv and code == 0:
                json.loads(out.getvalue())
        shutil.rmtree(root)
