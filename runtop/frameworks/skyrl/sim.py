"""A live SkyRL run (skyrl-agent on skyrl-train, Megatron, Ray) written at an accelerated pace.

It writes what the SkyRL incidents saw (docs/incidents.md#sigbus-save-core-dumps and
#shm-fix-relaunch; docs/formats.md, SkyRL): one driver log `logs/<run>.log` behind an
autoretry wrapper, with ANSI-coloured Ray prefixes, a shell trace of the launch command,
loguru records, the agent's bare reward prints, format-rule warnings, slow tool calls with
their code, timeouts, context overflows, the model's own tracebacks, tqdm frames glued to
the next record by `\\r`, the status dict and the `Step N:` dump; an `infra-*.log` with
vLLM stats; and a checkpoint dir whose saves are complete or broken. Scenarios:

- healthy: every save completes; the run reaches `max_steps`.
- sigbus-checkpoint: SIGBUS in a Megatron save leaves `policy/common.pt` alone; the
  wrapper relaunches (Attempt #2), which resumes from the last complete checkpoint.
- disk-full: a core dump fills the disk; the next save writes only `common.pt` and
  dies with `No space left on device`.
- format-rising: from `fail_step` on, more trajectories fail the format rules each step
  (Rule 2, "think never closes", climbing as in docs/incidents.md#sigbus-save-core-dumps).

Deterministic for a given seed; driven like the prime-rl simulator (`runtop.simulator.player`).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Generator, Iterator

from runtop.frameworks.skyrl.sim_failures import SkyrlFailures
from runtop.frameworks.skyrl.sim_text import CYAN, ENGINE, ENTRY, PROMPTS, RESET, RULE_TEXT, RUN_NAME, SAMPLES, START, TOOLS, stamp
from runtop.simulator.player import Action, ScriptPlayer

SCENARIOS = ("healthy", "sigbus-checkpoint", "disk-full", "format-rising")
class SkyrlSimulator(SkyrlFailures, ScriptPlayer):
    START = START
    # A step takes about nine simulated minutes and the faults land at step 4's save (~36
    # minutes in): the demo joins the run 25 minutes in, so at 20× each scenario's fault is
    # about half a minute away (player.ScriptPlayer.LEAD_IN_S).
    LEAD_IN_S = 1500.0
    TITLES = (("ray::skyrl_entrypoint", "trainer"), ("ray::AsyncVLLMInferenceEngine", "inference"))
    said_save: int | None = None  # the save whose timer was started (the detection replay starts it as it begins)

    def __init__(
        self,
        root: str | None = None,
        *,
        scenario: str = "healthy",
        speed: float = 20.0,
        max_steps: int = 8,
        fail_step: int = 4,
        ckpt_interval: int = 2,
        seed: int = 0,
        autoretry: bool = True,
        wrapper_first: bool = False,
        stop_after: int | None = None,
        upstream: bool = False,
    ) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
        super().__init__(root, RUN_NAME, speed)
        self.scenario = scenario
        self.autoretry = autoretry  # False: no wrapper; the run stays dead after a crash
        # Ray prints by arrival: the driver's ActorDiedError can come before the worker's own
        # SIGBUS dump (docs/formats.md, "What genuine output adds"; SkyRL#266, ChatLearn#194).
        self.wrapper_first = wrapper_first
        self.stop_after = stop_after  # a run still going: steps up to here, never the end
        # Upstream SkyRL prints no `global_step: N` and names its status keys anew
        # (`loss_metrics/clip_ratio`, `grad_norm`, `trainer/global_step`); the Biomni fork does.
        self.upstream = upstream
        self.max_steps = max_steps
        self.fail_step = fail_step
        self.ckpt_interval = ckpt_interval
        self.rng = random.Random(seed)
        self.log = f"logs/{RUN_NAME}.log"
        self.infra = "logs/infra-260219_090841.log"
        self.ckpt_dir = os.path.join(self.root, "ckpts")

    # ---- writing ------------------------------------------------------------
    def raw(self, text: str) -> None:
        self._append(self.log, text)

    def line(self, t: float, level: str, msg: str, where: str = "skyrl_train.trainer:train:342", proc: str = ENTRY) -> None:
        ms = int((t % 1) * 1000)
        self.raw(f"{CYAN}({proc}){RESET} {stamp(t)}.{ms:03d} | {level:<8} | {where} - {msg}\n")

    def prints(self, *lines: str, proc: str = ENTRY) -> None:
        self.raw("".join(f"{CYAN}({proc}){RESET} {ln}\n" for ln in lines))

    def wrapper(self, t: float, msg: str) -> None:
        if self.autoretry:
            self.raw(f"[{stamp(t)}] {msg}\n")

    # ---- the run ------------------------------------------------------------
    def script(self) -> Iterator[Action]:
        t = float(START)
        yield t, self._launch(t, attempt=1)
        step, attempt = 1, 1
        reward, entropy = 5.2, 7.45
        last = min(self.max_steps, self.stop_after or self.max_steps)
        while step <= last:
            t, reward, entropy = yield from self._step(t, step, attempt, reward, entropy)
            if step % self.ckpt_interval == 0:
                failing = step == self.fail_step and attempt == 1 and self.scenario != "healthy"
                if failing and self.scenario == "sigbus-checkpoint":
                    yield from self.fails(self._sigbus_save(t, step))
                    if not self.autoretry:
                        return
                    t += 120
                    attempt = 2
                    yield t, self._launch(t, attempt=2)
                    step = self._last_complete() + 1
                    continue
                if failing and self.scenario == "disk-full":
                    yield from self.fails(self._enospc_save(t, step))
                    return
                yield from self._save(t, step)
                t += 60
            if self.scenario == "disk-full" and step == self.fail_step - 1:
                yield from self.fails([(t, self._core_dump)])
            step += 1
        if last < self.max_steps:
            return
        yield t + 5, lambda: self.line(t + 5, "INFO", "Training finished")
        yield t + 6, lambda: self.wrapper(t + 6, "Training exited with code 0 after %ds" % (t + 6 - START))

    def _last_complete(self) -> int:
        return (self.fail_step // self.ckpt_interval - 1) * self.ckpt_interval

    def _launch(self, t: float, attempt: int) -> Callable[[], None]:
        def act() -> None:
            os.makedirs(self.ckpt_dir, exist_ok=True)
            self.launched()
            self.wrapper(t, f"Attempt #{attempt} (Total restarts: {attempt - 1})")
            self.raw("+ export WANDB_API_KEY=sk-sim-0000000000000000\n")
            self.raw(
                "+ python -m skyrl_agent.integrations.skyrl_train.main "
                f"trainer.run_name={RUN_NAME} trainer.ckpt_path={self.ckpt_dir} trainer.ckpt_interval={self.ckpt_interval} "
                f"trainer.max_ckpts_to_keep=-1 trainer.train_batch_size={PROMPTS} generator.n_samples_per_prompt={SAMPLES} "
                "trainer.resume_mode=latest trainer.strategy=megatron\n"
            )
            self.raw(f"{stamp(t + 1, ' ')},202\tINFO worker.py:1747 -- Connecting to existing Ray cluster at address: 10.0.0.1:6379...\n")
            self.line(t + 2, "INFO", f"Infrastructure logs will be written to: {os.path.join(self.root, self.infra)}", where="skyrl_train.utils:setup_logging:40")
            self.line(t + 3, "INFO", f"Total steps: {self.max_steps}", where="skyrl_train.trainer:train:290")
            if attempt == 1:
                self.line(t + 4, "INFO", "No checkpoint found, starting training from scratch", where="skyrl_train.trainer:load_checkpoints:611")
            else:
                last = self._last_complete()
                self.line(t + 4, "INFO", f"Loading checkpoint from: {self.ckpt_dir}/global_step_{last}", where="skyrl_train.trainer:load_checkpoints:620")
                self.line(t + 5, "INFO", f"Resuming from global_step: {last}", where="skyrl_train.trainer:load_checkpoints:640")
            self.raw(f"\rTraining Batches Processed:   0%|          | 0/{self.max_steps} [00:00<?, ?it/s]")

        return act

    def _step(self, t: float, step: int, attempt: int, reward: float, entropy: float) -> Generator[Action, None, tuple[float, float, float]]:
        rng = self.rng
        t0 = t
        def started() -> None:
            self.line(t0, "INFO", "Started: 'step'")
            self.line(t0, "INFO", "Started: 'generate'")

        yield t, started
        n = PROMPTS * SAMPLES
        gen = 240.0 + rng.random() * 60
        for i in range(n):
            ti = t0 + (i + 1) * gen / (n + 1)
            yield ti, self._trajectory(ti, step, i)
        t = t0 + gen
        reward = max(0.0, min(7.0, reward + rng.uniform(-0.15, 0.2)))
        # A healthy run's entropy wanders; it does not slide step after step.
        entropy = max(0.5, entropy + rng.uniform(-0.25, 0.2))
        resp = 15000 + rng.uniform(-900, 1800)
        gn, loss, clip = rng.uniform(0.18, 0.34), rng.uniform(-0.01, 0.01), rng.choice([0.2125, 0.2625, 0.3125])
        fwd, train, sync = 40 + rng.random() * 20, 120 + rng.random() * 60, 42 + rng.random() * 2
        step_time = gen + fwd + train + sync + 2

        def rollouts_done() -> None:
            if not self.upstream:
                self.prints(f"global_step: {step}")
            self.line(t, "INFO", f"Finished: 'generate', time cost: {gen:.2f}s")
            self.prints(f"reward/avg_pass_at_{SAMPLES}: 1.0, reward/avg_raw_reward: {reward:.4f}")
            self.line(t + fwd, "INFO", f"Finished: 'fwd_logprobs_values_reward', time cost: {fwd:.2f}s")
            self.prints(f"avg_final_rewards: {reward:.4f}, avg_response_length: {resp:.1f}")
            self.line(t + fwd, "INFO", "Started: 'policy_train'")

        yield t, rollouts_done
        mb = 20
        for k in (5, 10, 15, 20):
            tk = t + fwd + train * k / mb

            def frame(k: int = k, tk: float = tk) -> None:
                pg, ent = rng.uniform(-0.5, 0.5), entropy + rng.uniform(-1, 1)
                bar = "█" * (k // 2) + " " * (10 - k // 2)
                # tqdm frames end in `\r`, not a newline: the next record is glued to the last one.
                self.raw(f"\rPolicy Train epoch [1/1]: {k * 100 // mb:3d}%|{bar}| {k}/{mb} [00:{int(tk - t - fwd):02d}<00:00,  2.22s/it, pg={pg:.3g}, glen=37744.0, policy_lr=1e-6, ent={ent:.3g}, grad_norm={gn:.2g}]")

            yield tk, frame
        t_end = t + fwd + train + sync + 2

        def step_done() -> None:
            self.line(t + fwd + train, "INFO", f"Finished: 'policy_train', time cost: {train:.2f}s")
            self.line(t + fwd + train + sync, "INFO", f"Finished: 'sync_weights', time cost: {sync:.2f}s")
            self.line(t_end, "INFO", f"Finished: 'step', time cost: {step_time:.2f}s")
            status = (
                f"{{'loss_metrics/clip_ratio': {clip!r}, 'policy_loss': {loss!r}, 'policy_entropy': {entropy!r}, "
                f"'grad_norm': {gn!r}, 'policy_lr': 1e-06, 'trainer/global_step': {step}}}"
                if self.upstream else
                f"{{'policy_loss': {loss!r}, 'policy_lr': 9.999999974752427e-07, 'ppo_clip_ratio': {clip!r}, "
                f"'policy_entropy': {entropy!r}, 'raw_grad_norm': {gn!r}, 'policy_update_steps': 1}}"
            )
            self.prints(
                status,
                f"Step {step}: ",
                f"{{'loss/avg_final_rewards': '{reward:.4f}', 'policy/policy_entropy': '{entropy:.4f}', "
                f"'policy/policy_loss': '{loss:.4f}', 'timing/generate': '{gen:.4f}', 'timing/step': '{step_time:.4f}'}}",
            )
            elapsed = int(t_end - START)
            self.raw(f"\rTraining Batches Processed: {step * 100 // self.max_steps:3d}%|          | {step}/{self.max_steps} [{elapsed // 60}:{elapsed % 60:02d}<?, {step_time:.2f}s/it]")
            self._append(
                self.infra,
                f"({ENGINE}) INFO 02-19 {stamp(t_end).split()[1]} [loggers.py:123] Engine 000: Avg prompt throughput: 912.0 tokens/s, "
                f"Avg generation throughput: 2210.5 tokens/s, Running: {rng.randint(0, 8)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(2, 9):.1f}%, Prefix cache hit rate: 61.0%\n",
            )

        yield t_end, step_done
        return t_end + 1, reward, entropy

    def _trajectory(self, t: float, step: int, i: int) -> Callable[[], None]:
        rng = self.rng
        inst = 1000 + step * 100 + i
        fail = 0.12
        if self.scenario == "format-rising" and step >= self.fail_step:
            fail = min(0.9, 0.12 + 0.2 * (step - self.fail_step + 1))
        ft = 0.0 if rng.random() < fail else 1.0
        gt = 1.0 if rng.random() < 0.75 else 0.0
        rubric = round(rng.uniform(2.45, 5.0), 2)
        kind = rng.random()

        def act() -> None:
            if kind < 0.25:
                tool = TOOLS[i % len(TOOLS)]
                secs = 180 + rng.uniform(5, 400)
                code = [f"for gene in {['BRCA1', 'TP53', 'EGFR']!r}:", f"    res = {tool}(gene)  # one call per gene", "    print(res[:200])"]
                out = ["Output:", "IN QUERY ENSEMBL", "ENDPOINT: None", "Step 3: the gene list looks complete"]
                if kind < 0.05:
                    out += [
                        "Traceback (most recent call last):",
                        '  File "<string>", line 2, in <module>',
                        "TypeError: query_opentarget_genetics() got an unexpected keyword argument 'max_results'",
                    ]
                self.line(t - 2, "WARNING", f"Code execution took {secs:.2f} seconds. Code:", where="skyrl_agent.tools.biomni:execute:212")
                self.prints(*code, *out)
            elif kind < 0.28:
                self.line(t - 2, "WARNING", "Timeout error during execute on attempt 1/1: . Code being executed:", where="skyrl_agent.tools.biomni:execute:230")
                self.prints("gget.info(ensembl_ids)")
            elif kind < 0.30:
                self.line(t - 1, "WARNING", f"Instance {inst}: Context (32768 tokens) exceeded max_prompt_len (31232). Stopping agent.", where="skyrl_agent.agents.react:run:301")
            if ft == 0.0:
                rule = rng.choice([2, 3, 3, 7])
                self.line(t - 1, "WARNING", f"{RULE_TEXT[rule]}: <think>The answer is BRCA1 …", where="skyrl_agent.agents.biomni:check_format:88")
            total = gt + rubric + ft
            self.prints(
                f"ft_reward: {ft}",
                f"gt_reward: {gt}",
                f"rubric_reward: {rubric}",
                f"total_reward: {total} (gt={gt} + rubric={rubric} + ft={ft})",
            )
            self.line(t, "INFO", f"Rubric evaluation complete for instance {inst}: total={total}, gt={gt}, rubric={rubric}, ft={ft}", where="skyrl_agent.rewards.rubric:evaluate:77")

        return act

    # ---- checkpoints ----------------------------------------------------------
    def _policy_files(self, base: str, complete: bool) -> None:
        policy = os.path.join(base, "policy")
        os.makedirs(policy, exist_ok=True)
        with open(os.path.join(policy, "common.pt"), "wb") as f:
            f.truncate(421 * 1024)
        with open(os.path.join(policy, "metadata.json"), "w", encoding="utf-8") as f:
            f.write('{"sharded_backend": "torch_dist"}')
        if complete:
            for r in range(2):
                with open(os.path.join(policy, f"__{r}_0.distcp"), "wb") as f:
                    f.truncate(3 << 30)  # sparse: an honest size without using the disk
            with open(os.path.join(policy, ".metadata"), "wb") as f:
                f.write(b"\0" * 2048)

    def saving(self, t: float, step: int) -> None:
        self.said_save = step
        self.line(t, "INFO", "Started: 'save_checkpoints'")

    def evaluating(self, t: float, k: int, of: int, step: int) -> None:
        """The trainer's eval timer around `evaluate()`, whose tqdm bar counts the eval batches."""
        if k == 1:
            self.line(t, "INFO", "Started: 'eval'")
        self.raw(f"\rEvaluation Progress: {100 * k // of:3d}%|{'█' * (10 * k // of):<10}| {k}/{of} [{k:02d}:00<{of - k:02d}:00, 60.00s/it]")
        if k == of:
            self.line(t, "INFO", f"Finished: 'eval', time cost: {60.0 * of:.2f}s")

    def _save(self, t: float, step: int) -> Iterator[Action]:
        base = os.path.join(self.ckpt_dir, f"global_step_{step}")

        def act() -> None:
            if self.said_save != step:
                self.saving(t, step)
            self._policy_files(base, complete=True)
            for name, size in (("data.pt", 8 << 20), ("trainer_state.pt", 4096)):
                with open(os.path.join(base, name), "wb") as f:
                    f.truncate(size)
            self.line(t + 50, "INFO", f"Saved trainer state to {base}/trainer_state.pt", where="skyrl_train.trainer:save_checkpoints:580")
            tmp = os.path.join(self.ckpt_dir, ".latest_ckpt_global_step.txt.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(str(step))
            os.replace(tmp, os.path.join(self.ckpt_dir, "latest_ckpt_global_step.txt"))
            self.line(t + 51, "INFO", f"Successfully saved checkpoint for global_step_{step} to: {base}", where="skyrl_train.trainer:save_checkpoints:590")
            self.line(t + 52, "INFO", "Finished: 'save_checkpoints', time cost: 52.10s")

        yield t, act
