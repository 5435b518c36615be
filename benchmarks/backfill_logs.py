"""The big logs `benchmarks/backfill.py` reads, one generator a kind (each writes a run whose one
big log is `size` bytes and returns the log's path). Their shapes are the frameworks' own
(tests/corpus/, docs/formats.md); their mixes are what a long run writes, said on each.
"""

from __future__ import annotations

import os

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


# ---- a prime-rl orchestrator with the noise a real one writes between two steps --------------
# ~170 tqdm redraws (one line of `\r`-separated frames: the bar of the env's rollouts) and ~250
# ANSI-coloured INFO lines, of which the `Train batch` progress is half and the rest the
# dispatcher's and the buffer's chatter; a step every ~60 KB: 17k steps a GB (a week at 35 s).
NOISY_INFO = (
    "Received {n} rollouts for group {h} from env reverse-text (reward 0.{r:04d}, {t} tokens)",
    "Dispatched {n} requests to the inference pool ({t} in flight)",
    "Buffer holds {t} samples ({n} from the last policy step)",
    "Sampled {n} examples from env reverse-text (epoch {r}, {t} left)",
)


def noisy_step(step: int, i: int) -> str:
    t = f"{ESC}[2m{14 + (i // 3600) % 10:02d}:{(i // 60) % 60:02d}:{i % 60:02d}{ESC}[0m"
    frames = "".join(f"\rRollouts (step {step}):  {k * 100 // 170:3d}%|{'█' * (k * 10 // 170):<10}| {k}/170 [00:{k // 6:02d}<00:{(170 - k) // 6:02d},  6.02it/s]"
                     for k in range(1, 171))
    out = [frames + "\n"]
    for k in range(250):
        if k % 2 == 0:
            out.append(line(3, step, i * 250 + k))
            continue
        msg = NOISY_INFO[k % len(NOISY_INFO)].format(n=16 + k % 7, h=f"{(i * 31 + k):012x}", r=(i * 7 + k) % 9999, t=100 + k)
        out.append(f"{t} {ESC}[1m   INFO{ESC}[0m {ESC}[1m{ESC}[22m{msg}{ESC}[0m{ESC}[0m\n")
    if step % 4 == 0:
        out.append(line(1, step, i))
    out.append(line(0, step, i))
    return "".join(out)


def generate_noisy(root: str, size: int) -> str:
    logs = os.path.join(root, "logs")
    os.makedirs(logs, exist_ok=True)
    return _write(os.path.join(logs, "orchestrator.log"), "", noisy_step, size)


# ---- verl: the driver log of a week-old GRPO run with an async vLLM rollout -------------------
# A step line of ~100 metrics (verl's own keys, as verl-project/verl#7412 prints them), the
# Training Progress bar, and the async vLLM servers' lines under their Ray prefix: an access
# line per request (1024 a step: 128 prompts x 8), a stat line every few seconds, and now and then
# math-verify's timeout with its traceback in the reward workers: ~100 KB a step, 10k steps a
# GB (a week at 60 s).
VERL_KEYS = (
    [f"actor/{k}" for k in ("entropy", "pg_loss", "pg_clipfrac", "ppo_kl", "kl_loss", "kl_coef", "grad_norm", "lr", "pg_clipfrac_lower")]
    + [f"critic/{a}/{b}" for a in ("score", "rewards", "advantages", "returns") for b in ("mean", "max", "min")]
    + [f"response_length/{b}" for b in ("mean", "max", "min", "clip_ratio")] + [f"prompt_length/{b}" for b in ("mean", "max", "min", "clip_ratio")]
    + [f"timing_s/{k}" for k in ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "testing", "save_checkpoint", "step")]
    + [f"timing_per_token_ms/{k}" for k in ("gen", "adv", "update_actor", "ref")]
    + [f"perf/{k}" for k in ("total_num_tokens", "time_per_step", "throughput", "max_memory_allocated_gb", "max_memory_reserved_gb", "cpu_memory_used_gb")]
    + [f"global_seqlen/{k}" for k in ("min", "max", "mean", "minmax_diff", "balanced_min", "balanced_max")]
    + [f"val-core/openai/gsm8k/acc/mean@{k}" for k in (1, 8)] + [f"val-aux/openai/gsm8k/reward/{b}@8" for b in ("mean", "std", "best", "worst")]
    + [f"num_turns/{b}" for b in ("mean", "max", "min")] + ["training/global_step", "training/epoch"]
)


def verl_step(step: int, i: int) -> str:
    p = f"{ESC}[36m(TaskRunner pid=222265){ESC}[0m "
    out = []
    for k in range(1024):
        if k % 97 == 0:
            out.append(f"{ESC}[36m(AsyncvLLMServer pid={3100 + k % 8}){ESC}[0m INFO 08-21 {14 + step % 10:02d}:{k % 60:02d}:{i % 60:02d} [loggers.py:123] "
                       f"Engine 000: Avg prompt throughput: {1000 + k}.0 tokens/s, Avg generation throughput: 4473.3 tokens/s, Running: {k % 128} reqs, "
                       "Waiting: 0 reqs, GPU KV cache usage: 22.8%, Prefix cache hit rate: 40.0%\n")
        out.append(f'{ESC}[36m(AsyncvLLMServer pid={3100 + k % 8}){ESC}[0m INFO:     127.0.0.1:{40000 + (i + k) % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    if step % 7 == 0:
        out.append(f"{ESC}[36m(RewardManagerWorker pid=5120){ESC}[0m ERROR:2025-08-21 14:{step % 60:02d}:11,532:Error during comparison\n"
                   f"{ESC}[36m(RewardManagerWorker pid=5120){ESC}[0m Traceback (most recent call last):\n"
                   f'{ESC}[36m(RewardManagerWorker pid=5120){ESC}[0m   File "/usr/local/lib/python3.10/dist-packages/math_verify/grader.py", line 880, in verify\n'
                   f"{ESC}[36m(RewardManagerWorker pid=5120){ESC}[0m     return sympy_expr_eq(\n"
                   f"{ESC}[36m(RewardManagerWorker pid=5120){ESC}[0m TimeoutError: Operation timed out!\n")
    values = " - ".join(f"{k}:{step if k.endswith('global_step') else 60.02 if k == 'timing_s/step' else 0 if k == 'training/epoch' else (step * 13 + j) % 997 / 1000}"
                        for j, k in enumerate(VERL_KEYS))
    out.append(f"{p}step:{step} - {values}\n")
    out.append(f"{p}Training Progress:  {step * 100 // 30000:2d}%|▏         | {step}/30000 [{step // 60:02d}:00:00<88:00:00, 60.02s/it]\n")
    return "".join(out)


def generate_verl(root: str, size: int) -> str:
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, "verl_grpo.log")
    head = ("+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo trainer.total_training_steps=30000 trainer.save_freq=100 "
            "trainer.default_local_dir=checkpoints/gsm8k/qwen-grpo\n"
            f"{ESC}[36m(TaskRunner pid=222265){ESC}[0m Total training steps: 30000\n")
    return _write(path, head, verl_step, size)


# ---- TRL: a week-old GRPOTrainer console with vLLM colocated and log_completions on ------------
# Each logging step: the training bar's frame, vLLM's reset line from each of 4 ranks, the
# Trainer's dict (~25 keys: tests/corpus/holdout/trl-grpo-vllm-colocate-zero3-noise), and
# the rich table of prompts and completions `log_completions` prints (~160 rows of box drawing, one a completion):
# ~26 KB a step, 40k steps a GB (a week at 15 s).
def trl_step(step: int, i: int) -> str:
    bar = f"\r  {step * 100 // 40000:3d}%|          | {step}/40000 [{step // 3600:02d}:{step // 60 % 60:02d}:00<200:00:00, 17.02s/it]"
    clock = f"{9 + step // 3600 % 10:02d}:{step // 60 % 60:02d}:{i % 60:02d}"
    # The frame, then vLLM's line glued behind it (tqdm ends a frame with no newline).
    out = [bar] + [f"INFO 07-14 {clock} [block_pool.py:321] Successfully reset prefix cache\n" for _ in range(4)]
    d = (f"{{'loss': {(step % 97 - 48) / 1000:.4f}, 'grad_norm': 0.{step % 9999:04d}2609069492609912, 'learning_rate': 3.205128205128205e-08, "
         f"'num_tokens': {248282 * step}.0, 'completions/mean_length': 612.5, 'completions/min_length': 88.0, 'completions/max_length': 2048.0, "
         "'completions/clipped_ratio': 0.031, 'completions/mean_terminated_length': 580.1, 'completions/min_terminated_length': 88.0, "
         "'completions/max_terminated_length': 2040.0, 'rewards/accuracy_reward/mean': 0.25, 'rewards/accuracy_reward/std': 0.48, "
         f"'rewards/format_reward/mean': 0.9, 'rewards/format_reward/std': 0.3, 'reward': 0.5{step % 97:02d}, 'reward_std': 0.41, "
         "'frac_reward_zero_std': 0.125, 'kl': 0.0011, 'entropy': 0.47, 'clip_ratio/low_mean': 0.0, 'clip_ratio/low_min': 0.0, "
         f"'clip_ratio/high_mean': 0.0, 'clip_ratio/high_max': 0.0, 'clip_ratio/region_mean': 0.0, 'epoch': {step / 40000:.4f}}}")
    # The Trainer's dict through tqdm.write: the frame, spaces over it, the dict.
    out.append(bar + " " * 60 + d + "\n")
    out.append("┏" + "━" * 40 + "┳" + "━" * 60 + "┳━━━━━━━━━━┳━━━━━━━━━┓\n")
    out.append("┃ Prompt                                 ┃ Completion                                                 ┃ accuracy ┃ format  ┃\n")
    out.append("┡" + "━" * 40 + "╇" + "━" * 60 + "╇━━━━━━━━━━╇━━━━━━━━━┩\n")
    for r in range(160):
        out.append(f"│ Solve for x: {r + step % 50:>3}x + {r * 3:>3} = {r * 7 + 11:<14}│ <think>Subtract {r * 3:>3} from both sides, then divide by {r + 1:<3}{'.':<10}│ "
                   f"{r % 2:>8.2f} │ {1:>7.2f} │\n")
    out.append("└" + "─" * 40 + "┴" + "─" * 60 + "┴──────────┴─────────┘\n")
    return "".join(out)


def generate_trl(root: str, size: int) -> str:
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, "grpo.log")
    head = ("2025-07-14 09:02:27 - INFO - __main__ - *** Train ***\n"
            "Loading checkpoint shards: 100%|██████████| 2/2 [00:02<00:00,  1.18s/it]\n")
    return _write(path, head, trl_step, size)
