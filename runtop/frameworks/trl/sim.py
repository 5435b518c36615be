"""A TRL GRPOTrainer run, simulated in the shapes of genuine consoles (see `parse.py`): the
bar redrawn, one logged dict per step, `checkpoint-N` saves, the Trainer's summary at the
end. Scenarios: `healthy`; `cuda-oom` (a plain traceback ending in torch.OutOfMemoryError,
with a `tmp-checkpoint-N` left half-written by the save it interrupted); `nan-loss` (from
`fail_step` on, the logged loss and grad norm are `nan`, printed bare as the Trainer prints them,
and the run steps on, its end not written yet)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

from runtop.simulator.player import Action, PacedRun

SCENARIOS = ("healthy", "cuda-oom", "nan-loss")
RUN_NAME = "qwen2.5-0.5b-grpo"


class TrlSimulator(PacedRun):
    TITLES = (("accelerate launch train_grpo.py", "trainer"),)

    SCENARIOS = SCENARIOS
    RUN_NAME = RUN_NAME
    MAX_STEPS = 12
    CKPT_INTERVAL = 4

    def fail_at(self, max_steps: int) -> int:
        return max(5, max_steps // 2 + 1)

    def saving_dir(self, rel: str) -> str:
        head, name = os.path.split(rel)
        return os.path.join(head, f"tmp-{name}") if name.startswith("checkpoint-") else rel  # renamed when whole

    def log(self, text: str) -> None:
        self._append("grpo.log", text)

    def script(self) -> Iterator[Action]:
        t = 0.0
        yield t, lambda: self.log("Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.61s/it]\n")
        reward = 0.31
        for step in range(1, self.max_steps + 1):
            t += 12 + self.rng.random() * 3
            if self.scenario == "cuda-oom" and step == self.fail_step:
                yield from self.fails([(t, self._oom(step))])
                return
            reward = min(0.95, reward + self.rng.uniform(-0.01, 0.04))
            if self.scenario == "nan-loss" and step == self.fail_step:
                yield from self.fails([(t, self._step(step, reward))])
            else:
                yield t, self._step(step, reward)
            if step % self.ckpt_interval == 0:
                yield t + 1, self._save(step)
        if self.scenario == "nan-loss":
            return  # still stepping on NaN when looked at: its end not written yet
        yield t + 2, lambda: self.log(f"{{'train_runtime': {t:.1f}, 'train_samples_per_second': 0.9, 'train_steps_per_second': 0.08, "
                                      f"'train_loss': 0.0123, 'epoch': 1.0}}\n")

    def _bar(self, step: int) -> str:
        pct = int(100 * step / self.max_steps)
        return f"\r {pct:3d}%|{'█' * (pct // 10):<10}| {step}/{self.max_steps} [{step // 5:02d}:{step * 12 % 60:02d}<00:{(self.max_steps - step) * 12 // 60:02d}, 12.31s/it]"

    def _step(self, step: int, reward: float) -> Callable[[], None]:
        def act() -> None:
            d = {"loss": round(self.rng.uniform(-0.05, 0.05), 4), "grad_norm": round(self.rng.uniform(0.1, 2.0), 4), "learning_rate": 1e-06,
                 "num_tokens": 23456.0 * step, "completions/mean_length": round(300 + self.rng.uniform(-40, 40), 3),
                 "completions/clipped_ratio": 0.02, "rewards/accuracy_reward/mean": round(reward, 4), "reward": round(reward, 4),
                 "reward_std": 0.32, "frac_reward_zero_std": 0.25, "kl": 0.0009, "entropy": round(0.52 - step / 200, 4),
                 "clip_ratio/region_mean": 0.0, "epoch": round(step / self.max_steps, 2)}
            if self.scenario == "nan-loss" and step >= self.fail_step:
                d.update(loss=float("nan"), grad_norm=float("nan"))
            self.log(self._bar(step) + "\n" + " " * 50 + "\n" + repr(d) + "\n")
        return act

    def _save(self, step: int) -> Callable[[], None]:
        def act() -> None:
            base = os.path.join(self.root, f"checkpoint-{step}")
            os.makedirs(base, exist_ok=True)
            with open(os.path.join(base, "model.safetensors"), "wb") as f:
                f.truncate(1 << 20)
            with open(os.path.join(base, "trainer_state.json"), "w") as f:
                json.dump({"global_step": step, "max_steps": self.max_steps, "log_history": []}, f)
        return act

    def _oom(self, step: int) -> Callable[[], None]:
        def act() -> None:
            tmp = os.path.join(self.root, f"tmp-checkpoint-{step}")
            os.makedirs(tmp, exist_ok=True)
            with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
                f.truncate(1 << 19)
            self.log(self._bar(step - 1) + "\n" + "\n".join((  # the bar counts the steps done
                "Traceback (most recent call last):",
                '  File "/home/user/train_grpo.py", line 88, in <module>',
                "    trainer.train()",
                '  File "/home/user/.venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1402, in _generate_and_score_completions',
                "    logits = self._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep)",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.05 GiB is free.",
            )) + "\n")
            self.ended()
        return act


Simulator = TrlSimulator  # what the plug-in base asks for
