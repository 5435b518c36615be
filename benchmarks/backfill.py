"""Backfill speed and memory: runtop over three big realistic logs, beside `grep -c`.

    python benchmarks/backfill.py [--size-mb 1024] [--framework all|prime-rl|skyrl|vllm] [--dir DIR] [--keep]

Writes, for each log kind, a run whose one big log is SIZE MB:
- prime-rl: orchestrator.log of colour-coded lines in the mix a long run writes (batch
  progress, a step line every 40 lines, warnings, a traceback now and then): 197k steps a
  GB, the stress case (68 days at 30 s a step);
- prime-rl-week: the same lines with a step every 250: the 32k steps a week-old run at
  19 s a step (faster than any run in docs/incidents.md) has when its log reaches 1 GB;
- quiet: a step every 2000 (the noise floor: progress lines the bulk pass drops in C);
- skyrl: a SkyRL driver log (Ray-prefixed loguru lines, agent transcript dumps, metric
  dicts, glued tqdm frames), step blocks in the shapes of tests/corpus/skyrl-*, 40
  transcript lines a step (98k steps a GB, the stress case);
- skyrl-week: 240 transcript lines a step (20k steps a GB: a week at 30 s a step);
- vllm: a prime-rl run whose inference.log is vLLM's (an access line per request, a stat
  line every 10 s, a warning now and then).
Then, in one run, on the same file: `grep -c` of the step (or stat) lines (the baseline),
runtop's full backfill (`runtop check --full`), the ratio, peak RSS, and the time to
the first answer (`runtop status --json`: each long log's last 8 MB, said).
The children run with Python's bytecode cache on (in a temp dir), as an installed runtop
has it: a sandbox's PYTHONDONTWRITEBYTECODE would add ~0.1 s of compiling to every figure.
The scan stage's backend is the one runtop picks (`RUNTOP_SCAN=hyperscan|grep|re|off` names one:
run once per backend to compare them on the same logs); it is printed with the figures.
Goals: backfill <= 3x grep (2x is the line to cross), <= 150 MB RSS, first status <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ESC = "\x1b"


def line(kind: int, step: int, i: int) -> str:
    t = f"{ESC}[2m{14 + (i // 3600) % 10:02d}:{(i // 60) % 60:02d}:{i % 60:02d}{ESC}[0m"
    if kind == 0:
        return f"{t} {ESC}[32m{ESC}[1mSUCCESS{ESC}[0m {ESC}[32m{ESC}[1m{ESC}[22mStep {step} |   31.0s | Reward 0.{i % 9999:04d} | Trainable 112/128 (87.5%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 0 | Error 0.0% | Cancelled 0.0% | Truncation 0.8%{ESC}[0m{ESC}[0m\n"
    if kind == 1:
        return f"{t} {ESC}[33m{ESC}[1mWARNING{ESC}[0m {ESC}[33m{ESC}[1m{ESC}[22mTrace failed in group {i:032x} (reverse-text) — ProviderError: Request timed out.{ESC}[0m{ESC}[0m\n"
    if kind == 2:
        return (
            f"{t} {ESC}[31m{ESC}[1m  ERROR{ESC}[0m Error in scoring\nTraceback (most recent call last):\n"
            '  File "/app/env.py", line 12, in score\n    return json.loads(x)\nValueError: bad json\n'
        )
    return f"{t} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22mTrain batch {i % 128}/128 ({i % 128 / 1.28:.1f}%) (+16 buffered); {i % 134} inflight episodes (train={i % 134}, eval=0){ESC}[0m{ESC}[0m\n"


def kind_of(i: int) -> int:
    """The mix a long prime-rl orchestrator writes: a step line every 40 lines, a warning every 97, a traceback every 5003."""
    return 0 if i % 40 == 0 else 1 if i % 97 == 0 else 2 if i % 5003 == 0 else 3


def quiet_kind_of(i: int) -> int:
    """The noise floor: a step line every 2000 lines, a warning every 4999, progress otherwise
    (what the bulk pass is for: bytes that carry nothing but the newest progress line)."""
    return 0 if i % 2000 == 0 else 1 if i % 4999 == 0 else 3


def generate(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    # Line i's step is the number of step lines up to it: i // 40.
    return _write(os.path.join(logs, "orchestrator.log"), "", lambda _n, i: line(kind_of(i), i // 40, i), size)


def generate_quiet(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    return _write(os.path.join(logs, "orchestrator.log"), "", lambda _n, i: line(quiet_kind_of(i), i // 2000, i), size)


def week_kind_of(i: int) -> int:
    """A week-old run's mix: a step line every 250 lines, a warning every 997, a traceback every 50003."""
    return 0 if i % 250 == 0 else 1 if i % 997 == 0 else 2 if i % 50003 == 0 else 3


def generate_week(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    return _write(os.path.join(logs, "orchestrator.log"), "", lambda _n, i: line(week_kind_of(i), i // 250, i), size)


def generate_skyrl_week(root: str, size: int) -> str:
    return generate_skyrl(root, size, transcript=240)


def skyrl_step(step: int, i: int, transcript: int = 40) -> str:
    """One SkyRL step in its driver log's shapes (tests/corpus/skyrl-*): the transcript dump
    dominates, as in the Biomni runs of docs/incidents.md."""
    p = f"{ESC}[36m(skyrl_entrypoint pid=4101){ESC}[0m "
    t = f"2026-03-02 {10 + (step // 60) % 10:02d}:{step % 60:02d}:{i % 60:02d}"
    out = [f"{p}{t}.101 | INFO     | skyrl_train.trainer:train:342 - Started: 'step'\n",
           f"{p}{t}.228 | INFO     | skyrl_train.trainer:train:342 - Started: 'generate'\n",
           f"{p}global_step: {step}\n"]
    for k in range(transcript):  # the agent's transcripts, printed by the generator
        out.append(f"{p}{{'role': 'assistant', 'content': 'Let me compute step {k}: the answer is {(i * 7 + k) % 997} because "
                   f"{'reasoning ' * 12}'}}\n")
    out += [f"{p}{t}.340 | INFO     | skyrl_train.trainer:train:342 - Finished: 'generate', time cost: 41.20s\n",
            f"{p}reward/avg_pass_at_5: 0.61, reward/avg_raw_reward: 0.{i % 99:02d}\n",
            f"{ESC}[36m(FSDPPolicyWorkerBase pid=4388){ESC}[0m Policy Train epoch [1/1]:  50%|█████     | 2/4 [00:11<00:11,  5.52s/it, pg=-0.011, glen=401.0]"
            f"{ESC}[36m(FSDPPolicyWorkerBase pid=4388){ESC}[0m Policy Train epoch [1/1]: 100%|██████████| 4/4 [00:22<00:00,  5.60s/it, pg=-0.009]\n",
            f"{p}{t}.586 | INFO     | skyrl_train.trainer:train:342 - Finished: 'step', time cost: 71.01s\n",
            f"{p}{{'loss_metrics/clip_ratio': 0.0121, 'policy_loss': -0.0031, 'policy_entropy': 0.6113, 'grad_norm': 0.2841, "
            f"'policy_lr': 1e-06, 'trainer/global_step': {step}}}\n",
            f"Training Batches Processed:   {step % 100}%|          | {step}/1000000 [01:16<?, 71.01s/it]\n"]
    return "".join(out)


def generate_skyrl(root: str, size: int, transcript: int = 40) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    path = os.path.join(logs, "gsm8k_grpo.log")
    head = ("+ uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base trainer.run_name=gsm8k_grpo "
            "trainer.ckpt_path=/tmp/ckpts trainer.ckpt_interval=10 trainer.logger=console\n"
            f"{ESC}[36m(skyrl_entrypoint pid=4101){ESC}[0m 2026-03-02 10:00:04.885 | INFO     | skyrl_train.trainer:train:290 - Total steps: 1000000\n")
    return _write(path, head, lambda step, i: skyrl_step(step, i, transcript), size)


def vllm_line(kind: int, step: int, i: int) -> str:
    p = "(APIServer pid=2209876) "
    t = f"08-21 {14 + (i // 3600) % 10:02d}:{(i // 60) % 60:02d}:{i % 60:02d}"
    if kind == 0:
        return (f"{p}INFO {t} [loggers.py:257] Engine 000: Avg prompt throughput: {1000 + i % 900}.0 tokens/s, Avg generation "
                f"throughput: 4473.3 tokens/s, Running: {i % 128} reqs, Waiting: 0 reqs, GPU KV cache usage: 22.8%, Prefix cache hit rate: 40.0%\n")
    if kind == 1:
        return f"{p}WARNING {t} [protocol.py:51] The following fields were present in the request but ignored: {{'logprobs'}}\n"
    return f'{p}INFO:     127.0.0.1:{40000 + i % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


def generate_vllm(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, "orchestrator.log"), "w", encoding="utf-8") as f:
        f.write(line(3, 0, 1))
    path = os.path.join(logs, "inference.log")
    return _write(path, "", lambda step, i: vllm_line(0 if i % 200 == 0 else 1 if i % 997 == 0 else 2, step, i), size)


def _write(path: str, head: str, make, size: int) -> str:
    written, i = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        buf: list[str] = []
        while written < size:
            i += 1
            s = make(i, i)
            buf.append(s)
            written += len(s)
            if len(buf) >= 2000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    return path


def run_child(cmd: list[str], ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 gives this child's own rusage (peak RSS), unlike RUSAGE_CHILDREN's running max
    out_chunks = []
    while True:
        chunk = proc.stdout.read(1 << 16)
        if not chunk:
            break
        out_chunks.append(chunk)
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in ok:  # grep -c exits 1 on no match; check 0-4 by verdict
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss / 1024, b"".join(out_chunks).decode(errors="replace")


KINDS = {
    # kind: (generator, grep pattern, where the last step is in the status JSON)
    "prime-rl": (generate, "SUCCESS", "rollout_step"),
    "prime-rl-week": (generate_week, "SUCCESS", "rollout_step"),
    "quiet": (generate_quiet, "SUCCESS", "rollout_step"),
    "skyrl": (generate_skyrl, "Finished: 'step'", "trainer_step"),
    "skyrl-week": (generate_skyrl_week, "Finished: 'step'", "trainer_step"),
    "vllm": (generate_vllm, "Avg prompt throughput", None),
}


def grep_pass(root: str, path: str) -> float | None:
    """runtop's own bulk pass over `path` (`BulkGrep`: the drop grep and the rescue grep beside
    it, their kept lines taken chunk by chunk), timed alone: with the start-up, the floor of this
    design however fast the Python after it. None where runtop makes no bulk pass: the plug-in
    names no noise for this log, or grep keeps most of a chunk and the tailer reads on in Python."""
    from runtop.discovery import discover
    from runtop.frameworks import get
    from runtop.snapshot import CHUNK
    from runtop.sources.bulk_grep import WORTH_IT, BulkGrep, last_line_end
    from runtop.sources.run_reader import MAX_LINE

    layout = discover(root)
    tracked = next(t for t in layout.logs if os.path.samefile(t.path, path))
    noise = get(layout.framework).bulk_noise(tracked)
    if noise is None:
        return None
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        end = last_line_end(fd, 0, st.st_size)
        bulk = BulkGrep(path, (st.st_dev, st.st_ino), 0, end, noise, MAX_LINE["log"])
        pos = 0
        try:
            while pos < end:
                start, pos = pos, min(pos + CHUNK, end)
                taken = bulk.take(pos)
                if taken is None:
                    raise SystemExit(f"grep failed on {path}")
                if sum(len(line) + 1 for _, line in taken[0]) > (pos - start) * WORTH_IT:
                    return None  # as FileTailer._bulk_read: the rest is read in Python
        finally:
            bulk.close()
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def measure(kind: str, base: str, size_mb: int) -> tuple[str, float, float, float, float, float, float | None, str]:
    """One log kind. The children write to files and nothing big is parsed here between them:
    a forked child's peak RSS starts at this process's (Linux counts the parent's pages the
    vfork shares), so a parent holding a 200k-step JSON would inflate every figure after it."""
    _make, pattern, step_key = KINDS[kind]
    root = os.path.join(base, f"bench-{kind}")
    # Written by a child: this process stays small (see above), whatever the writing costs.
    path = subprocess.run([sys.executable, os.path.abspath(__file__), "--generate", kind, root, str(size_mb << 20)],
                          check=True, capture_output=True, text=True).stdout.strip()
    mb = os.path.getsize(path) / (1 << 20)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache for both sides
    g_s, _g_rss, g_out = run_child(["grep", "-c", pattern, path])
    # Timed in a child: importing runtop here would grow this process, and every child's peak RSS with it.
    p_out = subprocess.run([sys.executable, os.path.abspath(__file__), "--grep-pass", root, path], check=True, capture_output=True, text=True).stdout
    p_s = None if p_out.strip() == "-" else float(p_out)
    # The full backfill: `check --full` reads every byte and judges (no 200k-step JSON to print).
    r_s, r_rss, _ = run_child([sys.executable, "-m", "runtop", "check", "--full", root], ok=(0, 1, 2, 4))
    f_s, _f_rss, f_out = run_child([sys.executable, "-m", "runtop", "status", "--json", root])
    first = json.loads(f_out)
    seen = f"step {first['progress'][step_key]}" if step_key else f"vLLM running {(first.get('vllm') or {}).get('running')}"
    shutil.rmtree(root, ignore_errors=True)
    return kind, mb, g_s, r_s, r_rss, f_s, p_s, f"grep {g_out.strip()}, first status: {first['health']['verdict']}, {seen}"


def startup_floor(base: str) -> float:
    """The best of three `runtop check` on a run of one line: what any figure above pays first."""
    logs = os.path.join(base, "floor", "logs")
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, "orchestrator.log"), "w", encoding="utf-8") as f:
        f.write(line(0, 1, 0))
    return min(run_child([sys.executable, "-m", "runtop", "check", os.path.dirname(logs)], ok=(0, 1, 2, 3, 4))[0] for _ in range(3))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":
        print(KINDS[sys.argv[2]][0](sys.argv[3], int(sys.argv[4])))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--grep-pass":
        p_s = grep_pass(sys.argv[2], sys.argv[3])
        print("-" if p_s is None else f"{p_s:.4f}")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--framework", choices=("all", *KINDS), default="all")
    ap.add_argument("--dir", default=None, help="where to write the runs (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the base dir")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="runtop-bench-")
    # Every child inherits this: bytecode cached as an installed runtop has it, outside the tree.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(base, "pycache")
    try:
        floor = startup_floor(base)  # first: its first run writes the cache the others use
        kinds = list(KINDS) if args.framework == "all" else [args.framework]
        rows = [measure(k, base, args.size_mb) for k in kinds]
        print(f"{'log':14}{'MB':>7}{'grep -c s':>11}{'runtop full s':>15}{'ratio':>8}{'peak RSS MB':>13}{'first status s':>16}"
              f"{'grep pass s':>13}{'floor':>8}  check")
        for kind, mb, g_s, r_s, r_rss, f_s, p_s, note in rows:
            floor_x = f"{(floor + p_s) / g_s:7.1f}x" if p_s is not None else f"{'-':>8}"
            p_text = f"{p_s:13.2f}" if p_s is not None else f"{'-':>13}"
            print(f"{kind:14}{mb:7.0f}{g_s:11.2f}{r_s:15.2f}{r_s / g_s:7.1f}x{r_rss:13.1f}{f_s:16.2f}{p_text}{floor_x}  {note}")
        from runtop.parsers.skim import PROGRESS_NOISE, TRANSCRIPT_NOISE
        from runtop.sources.scan import backend

        print(f"scan backend: {backend(PROGRESS_NOISE)} for markers, {backend(TRANSCRIPT_NOISE)} for shapes (RUNTOP_SCAN={os.environ.get('RUNTOP_SCAN', '')!r})")
        print(f"start-up floor: runtop check on a one-line run {floor:.2f} s (the interpreter and imports, in every figure above)")
        print("grep pass: runtop's own grep children over the log, alone; floor: (start-up + grep pass) / grep -c, the ratio no\n"
              "  Python after them can beat; '-': no bulk pass (SkyRL's logs go back to Python after one chunk: grep keeps most lines)")
        print("goals: full backfill <= 3x grep (2x the line to cross), <= 150 MB RSS, first status <= 1 s")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
