"""An OpenRLHF run, simulated in the shapes of OpenRLHF/OpenRLHF#350 (the Ray prefix alone on
its line, vLLM's `Processed prompts` bars, the `Episode [1/1]` bar, `[repeated Nx across
cluster]`, Ray's job verdict) and docs/formats.md's `✨ Global step N: {…}`. Scenarios: `healthy`;
`actor-oom` (the actor dies of CUDA OOM: its traceback, then Ray's ActorDiedError)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from runtop.simulator.player import Action, PacedRun

SCENARIOS = ("healthy", "actor-oom")
RUN_NAME = "qwen2.5-7b-ppo-ray"
ACTOR, LLM = "(ActorModelRayActor pid=675352)", "(LLMRayActor pid=676132)"
CKPT = "ckpt/checkpoints_ppo_ray"


class OpenRlhfSimulator(PacedRun):
    TITLES = (("ray::ActorModelRayActor", "trainer"), ("ray::LLMRayActor", "inference"))

    SCENARIOS = SCENARIOS
    RUN_NAME = RUN_NAME
    MAX_STEPS = 8
    CKPT_INTERVAL = 4

    def log(self, *lines: str) -> None:
        self._append(f"{RUN_NAME}.log", "".join(f"{ln}\n" for ln in lines))

    def script(self) -> Iterator[Action]:
        t = 0.0
        yield t, lambda: self.log(f"python3 -m openrlhf.cli.train_ppo_ray --ckpt.path {CKPT} --save_steps {self.ckpt_interval} --num_episodes 1")
        reward = 0.21
        for step in range(1, self.max_steps + 1):
            t += 19 + self.rng.random() * 2
            if self.scenario == "actor-oom" and step == self.fail_step:
                yield t, self._oom
                return
            reward = min(0.95, reward + self.rng.uniform(-0.01, 0.04))
            yield t, self._step(step, t, reward)
            if step % self.ckpt_interval == 0:
                yield t + 1, self._save(step)
        yield t + 2, lambda: self.log("", "------------------------------------------",
                                      "Job 'raysubmit_qwqDhBAMGu6Qi119' succeeded", "------------------------------------------")

    def _step(self, step: int, t: float, reward: float) -> Callable[[], None]:
        def act() -> None:
            pct = int(100 * step / self.max_steps)
            self.log(LLM, "Processed prompts:   0%|          | 0/16 [00:00<?, ?it/s]",
                     LLM, "Processed prompts: 100%|██████████| 16/16 [00:12<00:00,  1.25it/s]",
                     ACTOR, f"Episode [1/1]: {pct:3d}%|{'█' * (pct // 10):<10}| {step}/{self.max_steps} [{int(t) // 60:02d}:{int(t) % 60:02d}<00:19, 19.50s/it]",
                     f"{ACTOR} ✨ Global step {step}: {{'rollout/reward_mean': {reward:.4f}, 'rollout/response_length_mean': {830 + self.rng.uniform(-50, 50):.1f}, "
                     f"'rollout/truncated_rate': 0.03, 'policy_loss': {self.rng.uniform(-0.05, 0.05):.4f}, 'kl': 0.0012, 'actor_lr': 5e-07, "
                     f"'timing/generate': 12.1, 'timing/step_total': 19.5}}")
        return act

    def _save(self, step: int) -> Callable[[], None]:
        def act() -> None:
            base = os.path.join(self.root, CKPT, "_actor", f"global_step{step}")
            os.makedirs(base, exist_ok=True)
            with open(os.path.join(base, "mp_rank_00_model_states.pt"), "wb") as f:
                f.truncate(1 << 20)
            with open(os.path.join(self.root, CKPT, "_actor", "latest"), "w") as f:
                f.write(f"global_step{step}")
        return act

    def _oom(self) -> None:
        self.log(
            f"{ACTOR} Traceback (most recent call last):",
            f'{ACTOR}   File "/openrlhf/openrlhf/trainer/ray/ppo_actor.py", line 211, in fit',
            f"{ACTOR}     status = self.ppo_train(global_steps)",
            f"{ACTOR} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.20 GiB. GPU 2 has a total capacity of 79.19 GiB of which 2.33 GiB is free.",
            "Traceback (most recent call last):",
            '  File "/openrlhf/openrlhf/cli/train_ppo_ray.py", line 462, in <module>',
            "    train(args)",
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: ActorModelRayActor",
            "\tpid: 675352",
        )
        self.ended()


Simulator = OpenRlhfSimulator  # what the plug-in base asks for
