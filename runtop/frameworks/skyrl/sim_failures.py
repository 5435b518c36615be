"""The SkyRL simulator's failures, in the shapes of docs/incidents.md#sigbus-save-core-dumps: SIGBUS
in a Megatron save (the worker's dump, Ray's raylet line, the driver's ActorDiedError, the wrapper's
relaunch), a core dump, and a save that dies of `No space left on device`. Mixed into
`SkyrlSimulator`, whose writers (`line`, `prints`, `raw`, `wrapper`) these use.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from runtop.frameworks.skyrl.sim_text import CYAN, DAY, RESET, START, WORKER
from runtop.simulator.player import Action


class SkyrlFailures:
    if TYPE_CHECKING:
        root: str
        ckpt_dir: str
        wrapper_first: bool

        def line(self, t: float, level: str, msg: str, where: str = ..., proc: str = ...) -> None: ...
        def prints(self, *lines: str, proc: str = ...) -> None: ...
        def raw(self, text: str) -> None: ...
        def wrapper(self, t: float, msg: str) -> None: ...
        def ended(self, *roles: str) -> None: ...
        def _policy_files(self, base: str, complete: bool) -> None: ...

    def _sigbus_save(self, t: float, step: int) -> Iterator[Action]:
        base = os.path.join(self.ckpt_dir, f"global_step_{step}")

        def dump() -> None:
            self.prints(
                f"*** SIGBUS received at time={int((DAY - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)).total_seconds() + t)} on cpu 42 ***",
                "PC: @     0x7f3a2b1c4d5e  (unknown)  torch::StorageImpl::share_fd_cpu_",
                "Fatal Python error: Bus error",
                "",
                "Thread 0x00007f3a1c7fe700 (most recent call first):",
                '  File "/usr/lib/python3.12/site-packages/torch/storage.py", line 412 in _share_fd_cpu_',
                '  File "/usr/lib/python3.12/multiprocessing/queues.py", line 244 in _feed',
                proc=WORKER,
            )
            self.raw(f"{CYAN}(raylet){RESET} A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: 12ab Node ID: 34cd Worker IP address: 10.0.0.1 Worker port: 10123 Worker PID: 67012 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.\n")

        def driver() -> None:
            # Ray's shape: the wrapper, the dead actor's class and pid, and its generic list of
            # "potential root causes" (which names SIGKILL and SIGSEGV whatever the cause was).
            self.line(t + 5, "ERROR", "Training failed", where="skyrl_train.entrypoints.main_base:main:80")
            self.prints(
                "Traceback (most recent call last):",
                '  File "/workspace/SkyRL/skyrl-train/skyrl_train/entrypoints/main_base.py", line 78, in main',
                "    ray.get(skyrl_entrypoint.remote(cfg))",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                "ray.exceptions.RayTaskError(ActorDiedError): ray::MegatronPolicyWorkerBase.save_checkpoint() (pid=67012, ip=10.0.0.1)",
                "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
                "\tclass_name: MegatronPolicyWorkerBase",
                "\tactor_id: 9f1c2e0d44b0c8a1e3aa51f301000000",
                "\tpid: 67012",
                "\tip: 10.0.0.1",
                "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
                "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. "
                "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. "
                "(3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.",
            )

        def act() -> None:
            self.line(t, "INFO", "Started: 'save_checkpoints'")
            self._policy_files(base, complete=False)
            for part in ((driver, dump) if self.wrapper_first else (dump, driver)):
                part()
            self.wrapper(t + 8, "Training exited with code 1 after %ds" % (t + 8 - START))
            self.ended()

        yield t, act

    def _core_dump(self) -> None:
        d = os.path.join(self.root, "ray", "session_2026-02-19_09-08-35_055799_142", "runtime_resources", "working_dir_files")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "core.67012"), "wb") as f:
            f.truncate(9 << 30)  # 9 GiB apparent, sparse (docs/incidents.md#sigbus-save-core-dumps)

    def _enospc_save(self, t: float, step: int) -> Iterator[Action]:
        base = os.path.join(self.ckpt_dir, f"global_step_{step}")

        def act() -> None:
            self.line(t, "INFO", "Started: 'save_checkpoints'")
            self._policy_files(base, complete=False)
            self.line(t + 30, "ERROR", "Exception in AsyncCallsQueue(persistent=True)", where="megatron.core.dist_checkpointing:async_utils:220", proc=WORKER)
            self.prints(
                "Traceback (most recent call last):",
                '  File "/usr/lib/python3.12/site-packages/megatron/core/dist_checkpointing/strategies/async_utils.py", line 218, in _run',
                "    torch.save(state, f)",
                "OSError: [Errno 28] No space left on device",
                proc=WORKER,
            )
            self.wrapper(t + 35, "Training exited with code 1 after %ds" % (t + 35 - START))
            self.ended()

        yield t, act
