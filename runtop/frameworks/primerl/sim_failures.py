"""The prime-rl simulator's failures, in the shapes genuine runs print them: a save that
dies of ENOSPC, a core dump, the trainer's CUDA OOM, vLLM's engine dying while the
orchestrator retries, rollouts rejected forever, rollouts failing forever. Mixed into
`Simulator`, whose writers (`orch`, `trainer`, `vllm`, `env`) these use.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from runtop.frameworks.primerl.sim_text import ENV, _traceback
from runtop.simulator.player import Action


class PrimeFailures:
    if TYPE_CHECKING:
        root: str

        def orch(self, t: float, level: str, msg: str) -> None: ...
        def trainer(self, t: float, level: str, msg: str, extra: str = "", node: int = 0) -> None: ...
        def vllm(self, t: float, level: str, msg: str, proc: str = ..., loc: str = ...) -> None: ...
        def env(self, t: float, msg: str) -> None: ...
        def _append(self, rel: str, text: str) -> None: ...
        def ended(self, *roles: str) -> None: ...

    def _failed_save(self, t: float, step: int) -> Iterator[Action]:
        def act() -> None:
            self.orch(t, "INFO", f"Saving checkpoint at step {step}")
            self.trainer(t, "INFO", f"Saving checkpoint at step {step}")
            base = os.path.join(self.root, "checkpoints", f"step_{step}", "trainer")
            os.makedirs(base, exist_ok=True)
            with open(os.path.join(base, "__0_0.distcp"), "wb") as f:
                f.truncate(1 << 20)
            with open(os.path.join(base, ".metadata.tmp"), "wb") as f:
                f.write(b"\0" * 64)
            self.trainer(t + 4, "ERROR", "Fatal error in train", _traceback("OSError", "[Errno 28] No space left on device"))
            self.ended("trainer")

        yield t, act

    def _core_dump(self) -> None:
        path = os.path.join(self.root, "core.2210467")
        with open(path, "wb") as f:
            # 9 GiB apparent, sparse (core dumps filled the disk: docs/incidents.md#sigbus-save-core-dumps)
            f.truncate(9 << 30)

    def _trainer_oom(self, t: float) -> Iterator[Action]:
        msg = "CUDA out of memory. Tried to allocate 4.64 GiB. GPU 0 has a total capacity of 79.19 GiB of which 2.91 GiB is free."
        def die() -> None:
            self.trainer(t, "ERROR", "Fatal error in train", _traceback("torch.OutOfMemoryError", msg))
            self.ended("trainer")

        yield t, die
        yield t + 3, lambda: self._append(
            "logs/attempt_1/trainer.log",
            "E0821 14:05:23.118000 2210431 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 0 (pid: 2210467) of binary: /home/ubuntu/prime-rl/.venv/bin/python3\n",
        )
        yield t + 4, lambda: self.vllm(t + 4, "INFO", "Shutting down FastAPI HTTP server.")

    def _inference_death(self, t: float) -> Iterator[Action]:
        def die() -> None:
            # The shape of genuine v1 output (vllm-project/vllm-omni#322): EngineCore's own
            # traceback names the cause; the API server's EngineDeadError only reports it.
            proc = "EngineCore_DP0 pid=2210102"
            self.vllm(t, "ERROR", "\n".join((
                "EngineCore encountered a fatal error.",
                "Traceback (most recent call last):",
                '  File "/home/ubuntu/prime-rl/.venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
                "    engine_core.run_busy_loop()",
                "RuntimeError: CUDA error: an illegal memory access was encountered",
            )), proc=proc, loc="core.py:710")
            self.vllm(t + 1, "ERROR", "\n".join((
                "AsyncLLM output_handler failed.",
                "Traceback (most recent call last):",
                '  File "/home/ubuntu/prime-rl/.venv/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 439, in output_handler',
                "    outputs = await engine_core.get_output_async()",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
            )), loc="async_llm.py:480")
            for i in range(3):
                self.vllm(t + 1, "INFO", f"Request chatcmpl-{i}a7f3e9c1b2d44 failed (engine dead).", loc="async_llm.py:419")
            self.ended("inference")

        yield t, die
        for k in range(1, 7):
            tk = t + 10 * k
            yield tk, functools.partial(self.orch, tk, "WARNING", f"Inference server was not reached after {10 * k} seconds (Error: All connection attempts failed) on http://localhost:8100")

    def _node_nccl_timeout(self, t: float, node: int) -> Iterator[Action]:
        """One node's rank times out in a collective; only its own log says so (docs/formats.md,
        multi-node), in the words of genuine watchdog output (LlamaFactory#6269)."""
        def die() -> None:
            rank = 8 * node
            clock = f"{int(t) // 3600 % 24:02d}:{int(t) // 60 % 60:02d}:{int(t) % 60:02d}"
            self._append(f"logs/attempt_1/trainer/node_{node}.log", (
                f"[rank{rank}]:[E0821 {clock}.715298740 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=544997376, NumelOut=544997376, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.\n"
                f"[rank{rank}]:[E0821 {clock}.716000000 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with exception: "
                "[Rank {rank}] Watchdog caught collective operation timeout\n".replace("{rank}", str(rank))))

        yield t, die

    def _hung(self, t: float) -> Iterator[Action]:
        for k in range(12):
            tk = t + 10 * k
            yield tk, functools.partial(self.orch, tk, "INFO", "Train batch 0/128 (0.0%) (+0 buffered); 128 inflight episodes (train=128, eval=0)")
            yield tk + 1, functools.partial(self.vllm, tk + 1, "ERROR", "Error in preprocessing prompt inputs: ValueError: 'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 tokens and your request has 1297 input tokens (4000 > 4096 - 1297).")


    def _failing(self, t: float) -> Iterator[Action]:
        """Stuck without an ERROR: every rollout fails with one error type and is retried
        while the batch stays at 0 (docs/formats.md, "What genuine output adds")."""
        for k in range(48):
            tk = t + 20 * k

            def act(tk: float = tk, k: int = k) -> None:
                rid = f"r{k:04d}"
                self.env(tk, f"rollout start: id={rid} task={ENV}-{k % 7} harness=null runtime=docker")
                self.env(tk + 6, f"rollout done: id={rid} task={ENV}-{k % 7} reward=0.0 turns=0 stop=HarnessError")
                self.orch(tk + 6, "WARNING", f"Rollout failed (task={ENV}-{k % 7}, attempt {k // 4 + 1}) — HarnessError: harness 'null' exited 1")
                self.orch(tk + 7, "INFO", "Train batch 0/128 (0.0%) (+0 buffered); 4 inflight episodes (train=4, eval=0)")

            yield tk, act
