"""A live prime-rl run (main layout) written into a directory at an accelerated pace.

It writes what prime-rl main writes (docs/formats.md): `logs/attempt_1/*.log` with ANSI
codes and torchrun prefixes behind a `logs/latest` symlink, `metrics.jsonl`,
rollout `traces.jsonl`, checkpoints that appear over time (`.metadata.tmp` first,
renamed when the save completes), and the failures of docs/incidents.md:

- healthy: runs to `max_steps` and finishes.
- trainer-oom: the trainer dies of CUDA OOM (docs/formats.md, prime-rl); the other logs stop.
- inference-death: vLLM's engine dies; the orchestrator retries, the trainer waits.
- stalled: every process goes silent (a reclaimed pod).
- partial-checkpoint: a save leaves shards without `.metadata`, then the trainer dies.
- disk-filling: checkpoints grow, a core dump appears, then `No space left on device`.
- rollouts-hung: vLLM rejects every request (`max_tokens` too large); batches stay at 0/N.
- entropy-collapse: from `fail_step` on, entropy loses a fifth of itself every step (the slide in
  docs/incidents.md#sigbus-save-core-dumps, faster).

Tests drive it synchronously (`run()`); `runtop demo` runs it in a thread (`start()`).
The script is deterministic for a given seed.
"""

from __future__ import annotations

import functools
import json
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

from runtop.frameworks.primerl.sim_failures import PrimeFailures
from runtop.frameworks.primerl.sim_text import (
    ENV,
    RUN_NAME,
    START,
    clock,
    duration_text,
    loguru,
)
from runtop.simulator.player import Action, ScriptPlayer

SCENARIOS = (
    "healthy",
    "trainer-oom",
    "inference-death",
    "stalled",
    "partial-checkpoint",
    "disk-filling",
    "rollouts-hung",
    "entropy-collapse",
    "rollouts-failing",
    "node-nccl-timeout",
)
class Simulator(PrimeFailures, ScriptPlayer):
    START = START
    TITLES = (
        ("PRIME-RL::Launcher", "launcher"),
        ("PRIME-RL::Inference", "inference"),
        ("PRIME-RL::Orchestrator", "orchestrator"),
        ("PRIME-RL::Trainer", "trainer"),
    )
    # Silence with every process alive; a dead engine while the trainer waits forever.
    HANGS = frozenset({"stalled", "inference-death", "rollouts-hung", "rollouts-failing", "node-nccl-timeout"})
    said_save: int | None = None  # the save whose start was logged (the detection replay logs it as it begins)

    def __init__(
        self,
        root: str | None = None,
        *,
        scenario: str = "healthy",
        speed: float = 20.0,
        max_steps: int = 20,
        fail_step: int | None = None,
        ckpt_interval: int = 2,
        seed: int = 0,
        stop_after: int | None = None,
        nodes: int = 1,
    ) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
        super().__init__(root, RUN_NAME, speed)
        self.scenario = scenario
        self.max_steps = max_steps
        # A run still going: the last step written, never the end (`Orchestrator finished.`).
        self.stop_after = stop_after
        # A stall comes early: the demo shows it called within a minute at its default pace.
        default_fail = 3 if scenario == "stalled" else max(3, max_steps // 3)
        self.fail_step = fail_step if fail_step is not None else default_fail
        self.ckpt_interval = ckpt_interval
        self.rng = random.Random(seed)
        self.logs = os.path.join(self.root, "logs", "attempt_1")
        self.step = 0
        # Multi-node (docs/formats.md): one trainer log per node, `trainer.log` a link to node 0's.
        self.nodes = max(nodes, 3 if scenario == "node-nccl-timeout" else 1)

    # ---- writing helpers ------------------------------------------------
    def orch(self, t: float, level: str, msg: str) -> None:
        self._append("logs/attempt_1/orchestrator.log", loguru(t, level, msg))

    def trainer(self, t: float, level: str, msg: str, extra: str = "", node: int = 0) -> None:
        lines = (loguru(t, level, msg) + extra).splitlines(keepends=True)
        self._append(self._trainer_log(node), "".join(f"[trainer0]:{line}" for line in lines))

    def _trainer_log(self, node: int) -> str:
        if self.nodes == 1:
            return "logs/attempt_1/trainer.log"
        link = os.path.join(self.logs, "trainer.log")
        if not os.path.lexists(link):
            os.makedirs(os.path.join(self.logs, "trainer"), exist_ok=True)
            os.symlink(os.path.join("trainer", "node_0.log"), link)
        return f"logs/attempt_1/trainer/node_{node}.log"

    def vllm(self, t: float, level: str, msg: str, proc: str = "APIServer pid=2209876", loc: str = "loggers.py:257") -> None:
        # vLLM repeats its whole prefix on every line of a multi-line message (a traceback).
        mmdd = "08-21"
        self._append(
            "logs/attempt_1/inference.log",
            "".join(f"\x1b[1;36m({proc})\x1b[0;0m {level} {mmdd} {clock(t)} [{loc}] {line}\n" for line in msg.split("\n")),
        )

    def env(self, t: float, msg: str) -> None:
        self._append(f"logs/attempt_1/envs/train/{ENV}.log", loguru(t, "INFO", msg))

    def metrics(self, row: dict[str, Any]) -> None:
        self._append("metrics.jsonl", json.dumps(row) + "\n")

    # ---- the run ----------------------------------------------------------
    def _setup(self) -> None:
        os.makedirs(self.logs, exist_ok=True)
        os.makedirs(os.path.join(self.root, "configs"), exist_ok=True)
        latest = os.path.join(self.root, "logs", "latest")
        if not os.path.lexists(latest):
            os.symlink("attempt_1", latest)
        with open(os.path.join(self.root, "configs", "rl.toml"), "w", encoding="utf-8") as f:
            f.write(
                f'max_steps = {self.max_steps}\n\n[run]\nname = "{RUN_NAME}"\n\n'
                f'[model]\nname = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"\n\n'
                f"[ckpt]\ninterval = {self.ckpt_interval}\nkeep_last = 2\n"
            )

    def script(self) -> Iterator[Action]:
        """The run as (simulated second, action), in time order."""
        rng = self.rng
        t = float(START)
        yield t, self._setup
        yield t + 1, lambda: self.orch(START + 1, "INFO", "Starting orchestrator (algorithm: grpo)")
        yield t + 2, lambda: self.trainer(START + 2, "INFO", f"Starting RL trainer in World(world_size=1, rank=0) in outputs/{RUN_NAME}")
        yield t + 3, lambda: self.vllm(START + 3, "INFO", "Starting vLLM API server 0 on http://0.0.0.0:8100")
        if self.scenario == "rollouts-hung":
            yield t + 4, lambda: self.vllm(START + 4, "WARNING", "Found ulimit of 32000 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n")
        yield t + 5, lambda: self.orch(START + 5, "INFO", f"Starting orchestrator loop (max_steps={self.max_steps})")
        yield t + 5, lambda: self.trainer(START + 5, "INFO", f"Starting training loop (max_steps={self.max_steps})")
        for node in range(1, self.nodes):
            yield t + 5, functools.partial(self.trainer, START + 5, "INFO", f"Starting training loop (max_steps={self.max_steps})", node=node)
        t += 6
        if self.scenario == "rollouts-hung":
            yield from self.fails(self._hung(t))
            return
        if self.scenario == "rollouts-failing":
            yield from self.fails(self._failing(t))
            return
        reward, entropy = 0.54, 0.41
        last = min(self.max_steps, self.stop_after or self.max_steps)
        for step in range(1, last + 1):
            step_time = 30.0 + rng.random() * 8
            # rollouts stream in while the batch fills
            for k in range(4):
                tk = t + (k + 1) * step_time / 5
                done = 32 * (k + 1)
                yield tk, self._batch_line(tk, done)
                yield tk, self._env_rollout(tk, step, k)
            if self.scenario == "inference-death" and step == self.fail_step:
                yield from self.fails(self._inference_death(t + step_time / 2))
                return
            if self.scenario == "stalled" and step == self.fail_step:
                return  # silence: nothing is written any more
            t += step_time
            reward = min(0.95, reward + rng.uniform(-0.01, 0.03))
            entropy = max(0.05, entropy - rng.uniform(0.002, 0.01))
            if self.scenario == "entropy-collapse" and step >= self.fail_step:
                entropy *= 0.8
            yield t, self._orch_step(t, step, step_time, reward)
            yield t + 0.5, self._vllm_stats(t + 0.5)
            if self.scenario == "node-nccl-timeout" and step == self.fail_step:
                yield from self.fails(self._node_nccl_timeout(t + 20, node=2))
                return
            if self.scenario == "trainer-oom" and step == self.fail_step:
                yield from self.fails(self._trainer_oom(t + 20))
                return
            ttime = step_time + rng.uniform(-2, 2)
            yield t + 1, self._trainer_step(t + 1, step, ttime, entropy)
            if step % self.ckpt_interval == 0:
                if self.scenario in ("partial-checkpoint", "disk-filling") and step >= self.fail_step:
                    yield from self.fails(self._failed_save(t + 2, step))
                    return
                yield t + 2, self._checkpoint(t + 2, step)
            if self.scenario == "disk-filling" and step == self.fail_step - 1:
                yield from self.fails([(t + 3, self._core_dump)])
        if last < self.max_steps:
            return
        yield t + 4, lambda: self.orch(t + 4, "INFO", f"Orchestrator step loop done in {duration_text(t + 4 - START)}")
        yield t + 5, lambda: self.orch(t + 5, "SUCCESS", "Orchestrator finished.")
        yield t + 6, lambda: self.trainer(t + 6, "SUCCESS", "RL trainer finished!")

    def _batch_line(self, t: float, done: int) -> Callable[[], None]:
        return lambda: self.orch(t, "INFO", f"Train batch {done}/128 ({done / 128:.1%}) (+16 buffered); {128 - done // 2} inflight episodes (train={128 - done // 2}, eval=0)")

    def _env_rollout(self, t: float, step: int, k: int) -> Callable[[], None]:
        rid = f"{step:04d}{k:028x}"
        reward = self.rng.choice([0.412, 0.667, 0.75, 0.811, 0.917, 1.0])

        def act() -> None:
            self.env(t - 3, f"rollout start: id={rid} task={step * 10 + k} harness=null runtime=subprocess")
            self.env(t, f"rollout done: id={rid} task={step * 10 + k} reward={reward:.3f} turns=1 stop=single_turn")

        return act

    def _orch_step(self, t: float, step: int, step_time: float, reward: float) -> Callable[[], None]:
        def act() -> None:
            self.step = step
            self.orch(t, "SUCCESS", f"Step {step} | {step_time:6.1f}s | Reward {reward:.4f} | Trainable 120/128 (93.8%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 1 | Error 0.0% | Cancelled 0.0% | Truncation 0.0%")
            self.metrics({
                "step": step,
                "time": 1787320918.2 + t - START,
                "train/agg/effective/agent/reward/mean": round(reward, 4),
                "train/agg/all/agent/reward/mean": round(reward - 0.004, 4),
                "train/agg/all/num_total_tokens/mean": 211.4,
                "train/agg/all/agent/is_truncated/mean": 0.0,
                "train/agg/all/has_error/mean": 0.0,
                "train/agg/all/num_turns/mean": 1.0,
                "time/step": round(step_time, 1),
                "time/wait_for_policy": 0.0,
                "off_policy/max": 1.0,
                "progress/rollouts": 128,
            })
            self._rollout_file(step, reward)

        return act

    def _rollout_file(self, step: int, reward: float) -> None:
        lines = []
        for i in range(8):
            ok = not (i == 7 and step % 3 == 0)
            score = max(0.0, min(1.0, reward + self.rng.uniform(-0.2, 0.2)))
            episode = {
                "id": f"{step:04d}{i:028x}",
                "env": {"id": ENV, "name": ENV},
                "run": {"type": "train", "work": {"type": "train", "step": step}},
                "ok": ok,
                "errors": [] if ok else [{"type": "ProviderError", "message": "Request timed out.", "status_code": 504}],
                "traces": [{
                    "rewards": {"lcs": {"score": round(score, 4), "weight": 1.0}} if ok else {},
                    "stop_condition": "single_turn" if ok else None,
                    "nodes": [{"sampled": False}, {"sampled": False}] + ([{"sampled": True}] if ok else []),
                    "timing": {"start": 1787320888.0, "scoring": {"end": 1787320890.9}},
                }],
            }
            lines.append(json.dumps(episode))
        for sub in ("all", "effective"):
            keep = lines if sub == "all" else [line for line in lines if '"ok": true' in line]
            self._append(f"rollouts/step_{step}/train/{sub}/traces.jsonl", "\n".join(keep) + "\n")

    def _trainer_step(self, t: float, step: int, step_time: float, entropy: float) -> Callable[[], None]:
        rng = self.rng
        loss, gn, kl = rng.uniform(-0.004, 0.005), rng.uniform(0.16, 0.26), rng.uniform(0.0008, 0.0017)
        thr = rng.randint(14800, 15300)

        def act() -> None:
            mins, secs = divmod(int(step_time), 60)
            shown = f"{mins}m {secs}s" if mins else f"{step_time:.1f}s"
            for node in range(self.nodes):  # each node's trainer logs its step in its own file
                self.trainer(t, "SUCCESS", f"Step {step} | {shown:>7} | Loss {loss:.4f} | Entropy {entropy:.4f} | Mismatch KL {kl:.4f} | Grad. Norm {gn:.4f} | LR 3.00e-06 | Throughput {thr} tokens/s | MFU 9.9% | Peak Mem. 32.0 GiB", node=node)
            base = {"step": step, "time": 1787320918.2 + t - START}
            self.metrics({**base, "perf/throughput": thr, "perf/mfu": 9.9, "perf/peak_memory": 32.0})
            self.metrics({**base, "optim/lr": 3e-06, "optim/grad_norm": round(gn, 4)})
            self.metrics({**base, "loss/mean": round(loss, 4), "entropy/all/mean": round(entropy, 4), "mismatch_kl/all/mean": round(kl, 5)})
            self.metrics({**base, "time/step": round(step_time, 1), "time/wait_for_batch": 0.3, "time/forward_backward": 17.6, "time/broadcast_weights": 1.9, "time/save_ckpt": 0.0})

        return act

    def _vllm_stats(self, t: float) -> Callable[[], None]:
        running, kv = self.rng.randint(100, 134), self.rng.uniform(20, 26)
        return lambda: self.vllm(t, "INFO", f"Engine 000: Avg prompt throughput: 1678.0 tokens/s, Avg generation throughput: 4473.3 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 40.0%")

    def saving(self, t: float, step: int, paused: bool = True) -> None:
        """A save begins; the orchestrator, a step ahead, waits for a save that lasts (back-pressure: normal)."""
        self.said_save = step
        self.orch(t, "INFO", f"Saving checkpoint at step {step}")
        self.trainer(t, "INFO", f"Saving checkpoint at step {step}")
        if paused:
            self.orch(t + 1, "INFO", f"Orchestrator paused: waiting for trainer process to complete checkpoint {step} (>1 step(s) ahead)")

    def _checkpoint(self, t: float, step: int, size: int = 4096) -> Callable[[], None]:
        def act() -> None:
            if self.said_save != step:
                self.saving(t, step, paused=False)
            base = os.path.join(self.root, "checkpoints", f"step_{step}")
            os.makedirs(os.path.join(base, "trainer"), exist_ok=True)
            os.makedirs(os.path.join(base, "orchestrator"), exist_ok=True)
            with open(os.path.join(base, "trainer", "__0_0.distcp"), "wb") as f:
                f.truncate(size)  # sparse: an honest size without using the disk
            tmp = os.path.join(base, "trainer", ".metadata.tmp")
            with open(tmp, "wb") as f:
                f.write(b"\0" * 512)
            os.replace(tmp, os.path.join(base, "trainer", ".metadata"))
            with open(os.path.join(base, "orchestrator", "progress.pt"), "wb") as f:
                f.write(b"\0" * 1024)

        return act
