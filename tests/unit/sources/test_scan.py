"""The scan stage keeps exactly what the keep rule keeps, whichever backend runs: Hyperscan's one
pass and GNU grep's children select the same lines, at the same offsets, as the rule read in
Python; and a week of an agent's transcripts left out of a SkyRL log changes nothing runtop says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtop.sources.bulk_grep as bulk_grep
import runtop.sources.scan as scan
from runtop.parsers.skim import ALL_NOISE, ORCHESTRATOR_NOISE, PROGRESS_NOISE, TABLE_NOISE, TRANSCRIPT_NOISE, VLLM_NOISE, BulkNoise
from tests.inner import examples
from tests.unit.parsers.test_skim import LINES

ESC = "\x1b"
P = f"{ESC}[36m(skyrl_entrypoint pid=4101){ESC}[0m "
TRANSCRIPT = f"{P}{{'role': 'assistant', 'content': 'Let me compute step 4: the answer is 12 because reasoning reasoning'}}"
# Transcripts the rule must keep: words of a death, a record glued behind, a tqdm frame glued in.
HOSTILE = [
    f"{P}{{'role': 'tool', 'content': 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'}}",
    f"{P}{{'role': 'assistant', 'content': 'ok'}}{P}2026-03-02 10:01:00.586 | INFO     | skyrl_train.trainer:train:342 - Finished: 'step', time cost: 71.01s",
    f"{P}{{'role': 'user', 'content': 'go'}}Training Batches Processed:   5%|          | 5/100 [01:16<?, 71.01s/it]",
    f"{P}{{'role': 'assistant', 'content': 'the job finished'}}",
]
SKYRL_LINES = [
    TRANSCRIPT, *HOSTILE,
    f"{P}2026-03-02 10:00:00.101 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'",
    f"{P}global_step: 3",
    f"{P}{{'policy_loss': -0.0031, 'policy_entropy': 0.6113, 'grad_norm': 0.2841, 'trainer/global_step': 3}}",
    "(skyrl_entrypoint pid=4101) {'role': 'system', 'content': 'You are a helpful agent.'}",
    "{'role': 'assistant', 'content': 'not under Ray: its own shape'}",
]
# A prime-rl orchestrator's chatter (an env's bar, INFO lines nothing reads, one with an end's
# words, one with a line of its own under it) and a TRL completions table.
T = f"{ESC}[2m14:00:01{ESC}[0m"
ORCH_LINES = [
    "\rRollouts (step 3):   4%|▍         | 7/170 [00:01<00:27,  6.02it/s]\rRollouts (step 3):   5%|▍         | 8/170 [00:01<00:27,  6.02it/s]",
    f"{T} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mDispatched 16 requests to the inference pool (112 in flight){ESC}[0m",
    f"{T} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mBuffer holds 112 samples{ESC}[0m",
    f"{T} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mthe evaluation is done{ESC}[0m",
    "14:00:02    INFO Sampled 16 examples from env reverse-text",
    "14:00:02    INFO Starting orchestrator with max_steps=40",
    f"{T} {ESC}[32m{ESC}[1mSUCCESS{ESC}[0m {ESC}[32m{ESC}[1m{ESC}[22mStep 3 |   31.0s | Reward 0.5 | Turns 1.0{ESC}[0m",
    f"{T} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mTrain batch 5/128 (3.9%) (+16 buffered); 30 inflight episodes{ESC}[0m",
    "    a line of its own under the record before it",
    "Traceback (most recent call last):",
    "┏━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓",
    "│ Solve for x: │ <think>…   │",
    "└──────────────┴────────────┘",
]
RULES = {"all": ALL_NOISE, "progress": PROGRESS_NOISE, "vllm": VLLM_NOISE, "transcripts": TRANSCRIPT_NOISE, "orchestrator": ORCHESTRATOR_NOISE,
         "table": TABLE_NOISE}
IN_PROCESS = ["re"] + (["hyperscan"] if scan._hyperscan() is not None else [])


def kept_by(name: str, path: str, rule: BulkNoise, window: int | None = None) -> list[tuple[int, bytes]]:
    st_ = os.stat(path)
    s = scan.open_scan(name, path, (st_.st_dev, st_.st_ino), 0, st_.st_size, rule, 64 * 1024)
    try:
        taken = s.take(st_.st_size)
    finally:
        s.close()
    assert taken is not None
    return taken[0]


def by_rule(data: bytes, rule: BulkNoise) -> list[tuple[int, bytes]]:
    """The rule applied line by line, offsets counted: what every backend must hand on."""
    out, pos = [], 0
    for line in data.split(b"\n")[:-1]:
        if rule.keeps(line):
            out.append((pos, line))
        pos += len(line) + 1
    return rule.gate(out)


lines_st = st.lists(st.sampled_from([ln.encode() for ln in SKYRL_LINES + ORCH_LINES] + LINES), max_size=80)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=lines_st, rule=st.sampled_from(sorted(RULES)))
def test_each_backend_keeps_exactly_what_the_rule_keeps(tmp_path, picks, rule):
    data = b"".join(p + b"\n" for p in picks)
    path = tmp_path / "driver.log"
    path.write_bytes(data)
    want = by_rule(data, RULES[rule])
    for name in IN_PROCESS:
        assert kept_by(name, str(path), RULES[rule]) == want, name
    if bulk_grep.gnu_grep() is not None and not any(m in data for m in RULES[rule].latest_wins):
        # (grep puts back no latest-wins line: the tailer does, after any backend)
        assert kept_by("grep", str(path), RULES[rule]) == want, "grep"


@pytest.mark.skipif(scan._hyperscan() is None, reason="the fast extra (hyperscan) is not installed")
@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.sampled_from([b"{'role': '", b"(w pid=1) ", b"\x1b[36m", b"\x1b[0m ", b"Train batch ", b"HTTP/1.1\" 200", b"ERROR",
                                 b"INFO ", b"x", b" ", b"\n", b"Avg prompt throughput", b"CUDA", b"}(", b"pid=22, ip=10.0.0.1) ", b"rro", b"r"]), max_size=40))
def test_a_keep_rule_compiled_to_hyperscan_keeps_what_it_keeps_in_python(pieces):
    """Fragments glued at random: markers across words, guard words half-there, empty lines."""
    data = b"".join(pieces)
    if not data.endswith(b"\n"):
        data += b"\n"
    for rule in RULES.values():
        fast = scan.PythonFinder(rule, scan.hyperscan_words(rule.glue) if rule.glue else None)
        assert rule.gate(fast(data)) == rule.gate(scan.PythonFinder(rule)(data)) == by_rule(data, rule)
        if rule.glue:
            assert sorted(scan.hyperscan_words(rule.glue)(data)) == sorted(w for w in rule.glue if w in data)


def test_a_line_longer_than_a_window_is_judged_by_its_head(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "WINDOW", 4096)
    path = tmp_path / "driver.log"
    long = b"x" * 20000
    path.write_bytes(TRANSCRIPT.encode() + b"\n" + long + b"\n" + b"global_step: 3\n")
    for name in IN_PROCESS:
        st_ = os.stat(path)
        s = scan.open_scan(name, str(path), (st_.st_dev, st_.st_ino), 0, st_.st_size, TRANSCRIPT_NOISE, 1024)
        got, cut = s.take(st_.st_size) or ([], -1)
        s.close()
        assert [(off, len(line)) for off, line in got] == [(len(TRANSCRIPT) + 1, 1024), (len(TRANSCRIPT) + 2 + 20000, 14)], name
        assert cut == 1


def write_agent_run(root: Path, steps: int, transcript: int) -> None:
    logs = root / "logs"
    logs.mkdir(parents=True)
    out = ["+ uv run --isolated -m skyrl_train.entrypoints.main_base trainer.run_name=agent trainer.ckpt_path=/tmp/ck trainer.logger=console",
           f"{P}2026-03-02 10:00:04.885 | INFO     | skyrl_train.trainer:train:290 - Total steps: 1000"]
    for step in range(1, steps + 1):
        t = f"2026-03-02 {10 + step // 60:02d}:{step % 60:02d}"
        out += [f"{P}{t}:01.101 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'", f"{P}global_step: {step}"]
        out += [TRANSCRIPT.replace("step 4", f"step {k}") for k in range(transcript)]
        if step == steps - 1:
            out += HOSTILE
        out += [f"{P}{t}:02.586 | INFO     | skyrl_train.trainer:train:342 - Finished: 'step', time cost: 71.01s",
                f"{P}{{'policy_loss': -0.0031, 'policy_entropy': 0.6113, 'grad_norm': 0.2841, 'policy_lr': 1e-06, 'trainer/global_step': {step}}}"]
    out += [f"{P}{{'role': 'tool', 'content': 'Traceback (most recent call last): ...'}}",
            f"{P}*** SIGBUS received at time=1771500000 on cpu 3 ***"]
    (logs / "agent.log").write_text("\n".join(out) + "\n")


def status_json(root: Path, backend: str, full: bool = True) -> dict:
    env = dict(os.environ, RUNTOP_SCAN=backend)
    code = ("import sys, runtop.sources.bulk_grep as b; b.BULK_MIN = 0 if sys.argv[1] != 'off' else 1 << 62\n"
            "from runtop.cli.main import main; raise SystemExit(main(['status', '--json', *sys.argv[3:], sys.argv[2]]))")
    out = subprocess.run([sys.executable, "-c", code, backend, str(root), *(["--full"] if full else [])], capture_output=True, text=True, env=env, check=False)
    doc = json.loads(out.stdout)
    for volatile in ("generated_at", "alerts", "health"):
        doc.pop(volatile, None)
    return doc


def test_an_agent_run_read_without_its_transcripts_says_what_it_says_with_them(tmp_path):
    """A SkyRL agent run's log is mostly transcripts: the scan leaves them out, and the status
    (steps, losses, the SIGBUS at the end, the OOM words an agent's tool printed) is the same as
    when every transcript went through the records stage."""
    write_agent_run(tmp_path, steps=30, transcript=40)
    careful = status_json(tmp_path, "off")
    assert careful["progress"]["trainer_step"] == 30
    for backend in ["re", *(["grep"] if bulk_grep.gnu_grep() else []), *(["hyperscan"] if scan._hyperscan() else [])]:
        assert status_json(tmp_path, backend) == careful, backend


def test_the_tailer_hands_on_the_same_lines_through_every_backend(tmp_path, monkeypatch):
    """A line over the cap (cut once), transcripts, an access line with a record glued to it: the
    tailer's lines are Python's through every backend, less the transcripts. (A non-ASCII line
    over the cap is cut in bytes by grep and in characters by Python: left as it was.)"""
    from runtop.parsers.skim import skim
    from runtop.sources.tailer import FileTailer

    monkeypatch.setattr(bulk_grep, "BULK_MIN", 0)
    path = tmp_path / "driver.log"
    # Transcripts enough to be most of the bytes (else the tailer reads on in Python).
    body = [TRANSCRIPT] * 1500 + [*HOSTILE, "x" * 70000, "é" * 300,
            '(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OKCRITICAL 11-05 03:07:53 MQLLMEngine is already dead',
            f"{P}global_step: 3"]
    path.write_text("\n".join(body) + "\n")  # one read's worth: Python's own cut of a long line depends on where reads end

    def lines(backend: str | None) -> tuple[list[str], int]:
        monkeypatch.setenv("RUNTOP_SCAN", backend or "off")
        t = FileTailer(str(path), prefilter=skim, bulk=TRANSCRIPT_NOISE if backend else None)
        out: list[str] = []
        while True:
            res = t.read(4 << 20)  # the backfill's budget: a long line comes whole in a read
            out += res.lines
            if res.eof:
                t.close()
                return out, t.capped

    python = lines(None)
    assert python[1] == 1 and sum("'content': 'Let me compute" in line for line in python[0]) == 1500
    for backend in ["re", *(["grep"] if bulk_grep.gnu_grep() else []), *(["hyperscan"] if scan._hyperscan() else [])]:
        got = lines(backend)
        # Python's own reading keeps the transcripts (no keep rule): compare the rest.
        assert got[1] == python[1], backend
        assert got[0] == [line for line in python[0] if "'content': 'Let me compute" not in line], backend


def test_a_bounded_status_of_a_long_agent_log_scans_its_tail_and_says_the_same(tmp_path):
    """`runtop status` on a 12 MB agent log reads its last 8 MB, starting mid-line: the cut line
    is dropped, the rest scanned, and the answer is the one Python's reading of every line gives."""
    write_agent_run(tmp_path, steps=2400, transcript=40)
    assert (tmp_path / "logs" / "agent.log").stat().st_size > 10 << 20
    careful = status_json(tmp_path, "off", full=False)
    assert careful["progress"]["trainer_step"] == 2400
    for backend in ["re", *(["hyperscan"] if scan._hyperscan() else [])]:
        assert status_json(tmp_path, backend, full=False) == careful, backend


def test_an_orchestrator_s_chatter_is_left_out_only_where_no_line_changes_records(tmp_path):
    """INFO lines nothing reads go, unless the next line kept is a line of theirs (an indented
    line under them) or they hold an end's words; an env's bar goes; steps, progress, starts stay.
    A week-old orchestrator's chatter read without them says the same as read with them."""
    quiet, below, done = ORCH_LINES[1].encode(), ORCH_LINES[8].encode(), ORCH_LINES[3].encode()
    step, bar, start = ORCH_LINES[6].encode(), ORCH_LINES[0].encode(), ORCH_LINES[5].encode()
    data = b"".join(line + b"\n" for line in (step, quiet, bar, quiet, step, quiet, below, done, step, start, quiet, step))
    path = tmp_path / "orchestrator.log"
    path.write_bytes(data)
    for name in [*IN_PROCESS, *(["grep"] if bulk_grep.gnu_grep() else [])]:
        kept = [line for _off, line in kept_by(name, str(path), ORCHESTRATOR_NOISE)]
        assert kept == [step, step, quiet, below, done, step, start, step], name


@pytest.mark.skipif(scan._hyperscan() is None or bulk_grep.gnu_grep() is None, reason="needs both Hyperscan and GNU grep")
@pytest.mark.parametrize("rule", [TRANSCRIPT_NOISE, TABLE_NOISE, PROGRESS_NOISE, VLLM_NOISE], ids=["transcripts", "tables", "progress", "vllm"])
def test_a_stretch_of_a_megabyte_goes_to_grep_for_every_rule_and_a_shorter_one_to_hyperscan(monkeypatch, rule):
    """A first status's 8 MB tail too: measured quicker, tables and transcripts included."""
    monkeypatch.delenv("RUNTOP_SCAN", raising=False)
    if rule.drop_re and not bulk_grep.pcre():
        pytest.skip("a rule with shapes takes grep's -P")
    assert scan.backend(rule, bulk_grep.BULK_MIN) == "grep"
    assert scan.backend(rule, 8 << 20) == "grep" and scan.min_stretch("grep", rule) == 1 << 20
    assert scan.backend(rule, (1 << 20) - 1) == "hyperscan"


@pytest.mark.skipif(bulk_grep.gnu_grep() is None, reason="needs GNU grep")
def test_a_rule_with_shapes_waits_for_a_long_stretch_where_grep_has_no_pcre(monkeypatch):
    """Without `-P` the stray grep of a rule with shapes would fail: only long stretches are tried."""
    monkeypatch.delenv("RUNTOP_SCAN", raising=False)
    monkeypatch.setattr(bulk_grep, "pcre", lambda: False)
    assert scan.grep_min(TRANSCRIPT_NOISE) == scan.grep_min(ORCHESTRATOR_NOISE) == bulk_grep.BULK_MIN
    assert scan.grep_min(PROGRESS_NOISE) == 1 << 20


@pytest.mark.skipif(scan._hyperscan() is None or not bulk_grep.pcre(), reason="needs Hyperscan and GNU grep with -P")
def test_an_orchestrator_s_chatter_goes_to_grep_from_a_megabyte_where_grep_gates_it_itself(monkeypatch):
    """A first status's 8 MB tail of a noisy orchestrator: grep's gate beats the gate in Python."""
    monkeypatch.delenv("RUNTOP_SCAN", raising=False)
    assert ORCHESTRATOR_NOISE.grep_gates()
    assert scan.backend(ORCHESTRATOR_NOISE, 8 << 20) == "grep" and scan.min_stretch("grep", ORCHESTRATOR_NOISE) == 1 << 20
    assert scan.backend(ORCHESTRATOR_NOISE, (1 << 20) - 1) == "hyperscan"
