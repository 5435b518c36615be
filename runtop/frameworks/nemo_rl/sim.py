"""A NeMo-RL GRPO run, simulated as its loop prints (see `parse.py`): the config's
`checkpoint_dir`, one step block per step with vLLM workers' lines between, `step_N` saves
(`tmp_step_N` renamed). Scenarios: `healthy`; `cuda-oom` (a policy worker dies of CUDA OOM
during training; its `tmp_step_N` is left behind)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

from runtop.simulator.player import Action, PacedRun

SCENARIOS = ("healthy", "cuda-oom")
RUN_NAME = "grpo-qwen2.5-1.5b-math"
POLICY, VLLM = "(DTensorPolicyWorker pid=21517)", "(VllmGenerationWorker pid=21733)"
CKPT = "results/grpo"


class NemoRlSimulator(PacedRun):
    TITLES = (("ray::DTensorPolicyWorker", "trainer"), ("ray::VllmGenerationWorker", "inference"))

    SCENARIOS = SCENARIOS
    RUN_NAME = RUN_NAME
    MAX_STEPS = 8
    CKPT_INTERVAL = 4

    def fail_at(self, max_steps: int) -> int:
        return max(3, max_steps // 2 + 2)

    def log(self, *lines: str) -> None:
        self._append(f"{RUN_NAME}.log", "".join(f"{ln}\n" for ln in lines))

    def script(self) -> Iterator[Action]:
        t = 0.0
        yield t, lambda: self.log("uv run examples/run_grpo_math.py --config examples/configs/grpo_math_1B.yaml",
                                  f"Loaded configuration: {{'checkpointing': {{'enabled': True, 'checkpoint_dir': '{CKPT}', 'save_period': {self.ckpt_interval}}}}}")
        reward = 0.34
        for step in range(1, self.max_steps + 1):
            t += 60 + self.rng.random() * 20
            reward = min(0.95, reward + self.rng.uniform(-0.01, 0.04))
            if self.scenario == "cuda-oom" and step == self.fail_step:
                yield t, self._oom(step)
                return
            yield t, self._step(step, reward)
            if step % self.ckpt_interval == 0:
                yield t + 1, self._save(step)

    def _step(self, step: int, reward: float) -> Callable[[], None]:
        def act() -> None:
            gen = 40 + self.rng.random() * 10
            train = 14 + self.rng.random() * 4
            total = gen + train + 3
            self.log("", f"{'=' * 25} Step {step}/{self.max_steps} {'=' * 25}", "▶ Preparing batch...", "▶ Generating responses for batch of size 64...",
                     f"{VLLM} INFO 08-21 14:{step:02d}:07 [loggers.py:118] Engine 000: Avg prompt throughput: 812.3 tokens/s, "
                     "Avg generation throughput: 2304.1 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 31.0%",
                     "▶ Training policy...", "", "📊 Training Results:", f"  • Loss: {self.rng.uniform(-0.02, 0.03):.4f}",
                     f"  • Generation KL Error: {self.rng.uniform(0.0005, 0.002):.4f}", f"  • Avg Reward: {reward:.4f}",
                     f"  • Mean Generation Length: {400 + self.rng.uniform(-30, 30):.4f}", "", "⏱️  Timing:",
                     f"  • Total step time: {total:.2f}s", f"  • generation: {gen:.2f}s ({100 * gen / total:.1f}%)",
                     f"  • policy_training: {train:.2f}s ({100 * train / total:.1f}%)", f"  • data_processing: 3.00s ({300 / total:.1f}%)")
        return act

    def saving(self, t: float, step: int) -> None:
        """What the GRPO loop prints as its save begins (then `tmp_step_N` is written)."""
        self.log(f"Saving checkpoint for step {step}...")

    def evaluating(self, t: float, k: int, of: int, step: int) -> None:
        """`validate()`: its start, vLLM's stats while it generates, its results at the end."""
        if k == 1:
            self.log(f"▶ Starting validation at step {step}...")
        if k < of:
            self.log(f"{VLLM} INFO 08-21 14:{step % 60:02d}:{k * 10:02d} [loggers.py:118] Engine 000: Avg prompt throughput: 640.2 tokens/s, "
                     "Avg generation throughput: 2011.7 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 28.0%")
        else:
            self.log("", "📊 Validation Results:")

    def saving_dir(self, rel: str) -> str:
        head, name = os.path.split(rel)
        return os.path.join(head, f"tmp_{name}") if name.startswith("step_") else rel  # renamed when whole

    def _save(self, step: int) -> Callable[[], None]:
        def act() -> None:
            base = os.path.join(self.root, CKPT, f"step_{step}")
            os.makedirs(os.path.join(base, "policy", "weights"), exist_ok=True)
            with open(os.path.join(base, "policy", "weights", "model.safetensors"), "wb") as f:
                f.truncate(1 << 20)
            with open(os.path.join(base, "training_info.json"), "w") as f:
                json.dump({"step": step}, f)
        return act

    def _oom(self, step: int) -> Callable[[], None]:
        def act() -> None:
            tmp = os.path.join(self.root, CKPT, f"tmp_step_{step - 1}", "policy")
            os.makedirs(tmp, exist_ok=True)
            self.log("", f"{'=' * 25} Step {step}/{self.max_steps} {'=' * 25}", "▶ Preparing batch...", "▶ Training policy...",
                     f"{POLICY} Traceback (most recent call last):",
                     f'{POLICY}   File "/opt/nemo-rl/nemo_rl/models/policy/dtensor_policy_worker.py", line 612, in train',
                     f"{POLICY}     loss.backward()",
                     f"{POLICY} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.10 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.87 GiB is free.",
                     "Traceback (most recent call last):",
                     '  File "/opt/nemo-rl/examples/run_grpo_math.py", line 281, in <module>',
                     "    main()",
                     "ray.exceptions.RayTaskError(OutOfMemoryError): ray::DTensorPolicyWorker.train() (pid=21517, ip=10.0.0.3)")
            self.ended()
        return act


Simulator = NemoRlSimulator  # what the plug-in base asks for
