"""A verl run, simulated in the shapes genuine driver logs have (see `parse.py` for the
issues they come from): the launch, `step:N - key:value - …` lines under `(TaskRunner pid=N)`,
the Training Progress bar, checkpoints with their tracker. Scenarios: `healthy`; `worker-oom`
(a WorkerDict dies of CUDA OOM: the worker's traceback, then the driver's hydra wrapper and
`RayTaskError(ActorDiedError)`); `async-save` (saves whole, the tracker never written)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

from runtop.simulator.player import Action, PacedRun

SCENARIOS = ("healthy", "worker-oom", "async-save")
RUN_NAME = "qwen3-0.6b-gsm8k-grpo"
DRIVER, WORKER = "(TaskRunner pid=222265)", "(WorkerDict pid=87687)"
CKPT = "checkpoints/gsm8k/qwen3-0.6b-grpo"


class VerlSimulator(PacedRun):
    TITLES = (("ray::TaskRunner", "trainer"), ("ray::WorkerDict", "trainer"))
    said_save: int | None = None  # the save whose start was printed (the detection replay prints it as it begins)

    SCENARIOS = SCENARIOS
    RUN_NAME = RUN_NAME
    MAX_STEPS = 12
    CKPT_INTERVAL = 3

    def fail_at(self, max_steps: int) -> int:
        return max(4, max_steps // 2)

    def log(self, *lines: str) -> None:
        self._append(f"{RUN_NAME}.log", "".join(f"{ln}\n" for ln in lines))

    def row(self, step: int, data: dict[str, float]) -> None:
        """The file logger (`trainer.logger=[console,file]`, `VERL_FILE_LOGGER_PATH` in the run dir)."""
        self._append(f"{RUN_NAME}.jsonl", json.dumps({"step": step, "data": data}) + "\n")

    def script(self) -> Iterator[Action]:
        t = 0.0
        overrides = (f"algorithm.adv_estimator=grpo data.train_batch_size=64 actor_rollout_ref.rollout.n=8 "
                     f"trainer.total_training_steps={self.max_steps} trainer.save_freq={self.ckpt_interval} "
                     f"trainer.default_local_dir={CKPT}" + (" actor_rollout_ref.actor.checkpoint.async_save=True" if self.scenario == "async-save" else ""))
        yield t, lambda: self.log(f"+ python3 -m verl.trainer.main_ppo {overrides}")
        yield t + 2, lambda: self.log(f"{DRIVER} step:0 - val-core/openai/gsm8k/acc/mean@1:0.412 - val-aux/openai/gsm8k/reward/mean@1:0.412")
        reward, entropy = 0.41, 0.52
        t += 5
        for step in range(1, self.max_steps + 1):
            gen = 40 + self.rng.random() * 10
            upd = 14 + self.rng.random() * 3
            total = gen + upd + 8
            if self.scenario == "worker-oom" and step == self.fail_step:
                yield t + gen, self._worker_oom
                return
            t += total
            reward = min(0.95, reward + self.rng.uniform(-0.01, 0.03))
            entropy = max(0.05, entropy - self.rng.uniform(0.002, 0.01))
            yield t, self._step(step, t, reward, entropy, gen, upd, total)
            if step % self.ckpt_interval == 0:
                yield t + 3, self._save(step)
                t += 5
        yield t + 1, lambda: self.log(f"{DRIVER} Training Progress: 100%|██████████| {self.max_steps}/{self.max_steps} [done]",
                                      f"{DRIVER} Final validation metrics: {{'val-core/openai/gsm8k/acc/mean@1': {reward:.3f}}}")

    def _step(self, step: int, t: float, reward: float, entropy: float, gen: float, upd: float, total: float) -> Callable[[], None]:
        def act() -> None:
            self.row(step, {"actor/entropy": round(entropy, 9), "critic/score/mean": round(reward, 9), "timing_s/gen": round(gen, 6),
                            "timing_s/update_actor": round(upd, 6), "timing_s/step": round(total, 6), "perf/throughput": 1534.2})
            pct = int(100 * step / self.max_steps)
            left = int((self.max_steps - step) * total)
            eta = f"{left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
            self.log(
                f"{DRIVER} step:{step} - global_seqlen/mean:458966.5 - actor/entropy:{entropy:.6f} - actor/pg_clipfrac:0.0008 "
                f"- actor/ppo_kl:-8.16e-06 - actor/pg_loss:{self.rng.uniform(-0.01, 0.05):.6f} - actor/kl_loss:0.0013 "
                f"- actor/grad_norm:{self.rng.uniform(0.1, 0.3):.6f} - actor/lr:2e-06 - perf/max_memory_allocated_gb:24.52 "
                f"- training/global_step:{step} - critic/score/mean:{reward:.6f} - critic/rewards/mean:{reward:.6f} "
                f"- response_length/mean:{1200 + self.rng.uniform(-80, 80):.3f} - response_length/clip_ratio:0.004 "
                f"- timing_s/gen:{gen:.3f} - timing_s/update_actor:{upd:.3f} - timing_s/step:{total:.3f} - perf/throughput:1534.2",
                f"Training Progress: {pct:3d}%|{'█' * (pct // 10):<10}| {step}/{self.max_steps} [{int(t) // 60:02d}:{int(t) % 60:02d}<{eta}, {total:.2f}s/it]",
            )
        return act

    def _save(self, step: int) -> Callable[[], None]:
        def act() -> None:
            base = os.path.join(self.root, CKPT, f"global_step_{step}")
            os.makedirs(os.path.join(base, "actor", "huggingface"), exist_ok=True)
            with open(os.path.join(base, "actor", "model_world_size_1_rank_0.pt"), "wb") as f:
                f.truncate(1 << 20)
            with open(os.path.join(base, "actor", "huggingface", "config.json"), "w") as f:
                f.write("{}\n")
            with open(os.path.join(base, "data.pt"), "wb") as f:
                f.write(b"\0" * 1024)
            if self.scenario != "async-save":  # async_save never writes the tracker (docs/formats.md)
                with open(os.path.join(self.root, CKPT, "latest_checkpointed_iteration.txt"), "w") as f:
                    f.write(f"{step}")
            if self.said_save != step:
                self.saving(0.0, step)
        return act

    def saving(self, t: float, step: int) -> None:
        """What `_save_checkpoint` prints before it writes anything."""
        self.said_save = step
        self.log(f"{DRIVER} local_global_step_folder: {os.path.join(CKPT, f'global_step_{step}')}")

    def evaluating(self, t: float, k: int, of: int, step: int) -> None:
        """`_validate`: each validation batch's meta info before it generates; the last one generated."""
        if k < of:
            self.log(f"{DRIVER} test_gen_batch meta info: {{'eos_token_id': 151645, 'pad_token_id': 151643, 'recompute_log_prob': False, "
                     f"'do_sample': False, 'validate': True, 'global_steps': {step}}}")
        else:
            self.log(f"{DRIVER} validation generation end")

    def _worker_oom(self) -> None:
        self.log(
            f"{WORKER} Traceback (most recent call last):",
            f'{WORKER}   File "/opt/verl/verl/workers/fsdp_workers.py", line 719, in update_actor',
            f"{WORKER}     metrics = self.actor.update_policy(data=data)",
            f"{WORKER} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 79.19 GiB of which 3.10 GiB is free.",
            "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.train_batch_size=64', 'trainer.save_freq=3']",
            "Traceback (most recent call last):",
            '  File "/opt/verl/verl/trainer/main_ppo.py", line 42, in main',
            "    run_ppo(config)",
            '  File "/opt/verl/verl/trainer/main_ppo.py", line 96, in run_ppo',
            "    ray.get(runner.run.remote(config))",
            "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=222265, ip=10.0.0.7, actor_id=13ac9a31, repr=<main_ppo.TaskRunner object at 0x7f4e6e394ee0>)",
            '  File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 1210, in fit',
            "    actor_output = self.actor_rollout_wg.update_actor(batch)",
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict",
            "\tpid: 87687",
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.",
            "",
            "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
        )
        self.ended()


Simulator = VerlSimulator  # what the plug-in base asks for
