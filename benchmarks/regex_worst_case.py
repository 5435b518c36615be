"""Worst-case line cost of every parser, beside a typical line and `grep`.

    python benchmarks/regex_worst_case.py

For each parser entry point: the cost of a typical real line, and of the worst 8 KB and
64 KB lines built from its patterns' own alphabets behind the heads real lines start
with (tests/regex_audit.py builds them; tests/unit/parsers/test_regex_linear.py holds the growth to
linear). Linear growth from 8 KB to 64 KB is ~8×; quadratic would be ~64×. The baseline:
`grep -c` over the same 64 KB line, measured in the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.regex_audit import line_cost, parser_entries, parser_worst  # noqa: E402

TYPICAL = {
    "prime-rl orchestrator": "14:01:58 SUCCESS Step 7 |   31.0s | Reward 0.5412 | Seq. Length 812.3 | Trainable 112/128 (87.5%)",
    "prime-rl trainer": "14:02:33 SUCCESS Step 7 |  1m 18s | Loss 0.0031 | Entropy 0.4127 | Grad. Norm 0.2200 | LR 3.00e-06",
    "vLLM": "(APIServer pid=1) INFO 08-21 14:01:27 [loggers.py:257] Engine 000: Avg prompt throughput: 1678.0 tokens/s, Running: 128 reqs, GPU KV cache usage: 61.2%",
    "SkyRL driver": "(skyrl_entrypoint pid=1) Rubric evaluation complete for instance 1234: total=6.5, gt=1.0, rubric=4.5, ft=1.0",
    "metrics.jsonl": '{"step": 7, "loss/mean": 0.0031, "entropy/all/mean": 0.41, "time/step": 78.1}',
    "traces.jsonl": '{"traces": [{"rewards": {"r": {"score": 1.0, "weight": 1.0}}, "nodes": [{"sampled": true}], "stop_condition": "max_turns"}]}',
    "config": 'max_steps = 20\n[ckpt]\ninterval = 2\n[model]\nname = "Qwen/Qwen3-4B"',
    "text helpers": "Step 7 |  1m 18s | Loss 0.0031",
    "SkyRL launch and code": "python -m skyrl_train.entrypoints.main_base trainer.ckpt_path=/ck trainer.train_batch_size=16",
    "redaction": "+ export WANDB_API_KEY=abc123 && uv run rl --api-key sk-abcdefghijklmnopqrstuv",
}


def grep_ms(line: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(line + "\n")
    try:
        t0 = time.perf_counter()
        subprocess.run(["grep", "-c", "Step", f.name], capture_output=True)
        return (time.perf_counter() - t0) * 1e3
    finally:
        os.unlink(f.name)


def main() -> int:
    print(f"{'parser':<24}{'typical line':>14}{'worst 8 KB':>12}{'worst 64 KB':>13}{'growth':>8}   worst line")
    worst_growth = 0.0
    for name, (fn, heads) in parser_entries().items():
        typical = line_cost(fn, TYPICAL[name], repeat=20)
        small, large, what = parser_worst(fn, heads)
        growth = large / max(small, 1e-6)
        worst_growth = max(worst_growth, growth if large > 0.004 else 0.0)
        print(f"{name:<24}{typical * 1e6:>11.1f} µs{small * 1e3:>9.2f} ms{large * 1e3:>10.2f} ms{growth:>7.1f}×   {what[:60]}")
    print(f"\nbaseline: grep -c over one 64 KB line: {grep_ms('Step 7 | ' + '7' * 65536):.2f} ms (process start included)")
    print(f"largest growth 8 KB → 64 KB among lines costing > 4 ms: {worst_growth:.1f}× (linear ≈ 8×, quadratic ≈ 64×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
