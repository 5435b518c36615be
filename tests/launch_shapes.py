"""Real process trees in the shapes each framework's README launches them.

The programs are stand-ins named like the real entry points (`uv`, `accelerate`, `ray`, `rl`,
`torchrun`, `python3 -m verl.trainer.main_ppo`, …): each does what the real one does to the
process table (which children it starts, with which argv, cwd, stdout and title) and then
waits. What runtop sees is the shape: argv, cwd, where stdout goes, the parent chain, titles.

Every stand-in ends when its parent goes (a killed launch leaves nothing behind), except a
raylet started by `ray start`, which outlives it as the real one does (until `LIFE_S`).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import psutil

LIFE_S = 120

# The helpers every stand-in imports (`fakerl`): take a title, wait, start a raylet.
FAKERL = f'''
import os, subprocess, sys, time

def title(t):
    import setproctitle
    setproctitle.setproctitle(t)

def wait(orphan_ok=False):
    """Until the parent goes (the launch was torn down), or LIFE_S."""
    parent, end = os.getppid(), time.time() + {LIFE_S}
    while time.time() < end and (orphan_ok or os.getppid() == parent):
        time.sleep(0.2)

def titled(t):
    return subprocess.Popen([sys.executable, "-c", f"import fakerl; fakerl.title({{t!r}}); fakerl.wait()"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def local_cluster(*titles):
    """`ray.init()` with no cluster running: the driver starts a raylet as its own child, and
    the raylet starts the workers (each titled `ray::<Actor>` once it runs one)."""
    return subprocess.Popen([sys.executable, "-m", "fakerl", "raylet", *titles],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def raylet(queue, titles):
    title("raylet")
    kids = [titled(t) for t in titles]
    done, end = set(), time.time() + {LIFE_S}
    while queue and time.time() < end:  # a cluster started apart: drivers ask it for actors (files in `queue`)
        for name in sorted(os.listdir(queue)):
            if name not in done:
                done.add(name)
                kids.append(titled(open(os.path.join(queue, name)).read()))
        time.sleep(0.1)
    wait()

if __name__ == "__main__" and sys.argv[1] == "raylet":
    queue = os.environ.get("FAKE_RAY_QUEUE", "") if os.environ.get("FAKE_RAY_STANDALONE") else ""
    raylet(queue, sys.argv[2:])
'''

# Programs on PATH, by name.
PROGRAMS = {
    # `uv run [flags] PROG ARGS…`: uv starts PROG as its child and waits for it.
    "uv": '''
        import subprocess, sys
        words = sys.argv[2:]
        while words and words[0].startswith("-"):
            flag = words.pop(0)
            if flag == "-m":  # `uv run -m MODULE`: the project's Python runs it
                words = ["python", "-m", *words]
                break
            if flag in ("--extra", "--with", "--project", "--directory"):
                words.pop(0)
        sys.exit(subprocess.call(words))
    ''',
    # `ray start --head`: starts the cluster's raylet apart and returns (the raylet outlives it).
    "ray": '''
        import os, subprocess, sys
        assert sys.argv[1:3] == ["start", "--head"], sys.argv
        env = dict(os.environ, FAKE_RAY_STANDALONE="1")
        p = subprocess.Popen([sys.executable, "-m", "fakerl", "raylet"], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open(os.environ["FAKE_RAY_PIDFILE"], "w").write(str(p.pid))
    ''',
    # `accelerate launch SCRIPT ARGS…` on one node: the script runs as accelerate's child.
    "accelerate": '''
        import subprocess, sys
        assert sys.argv[1] == "launch"
        sys.exit(subprocess.call([sys.executable, *sys.argv[2:]]))
    ''',
    # `torchrun … -m MODULE ARGS…`: one rank, as torchrun's child.
    "torchrun": '''
        import subprocess, sys
        words = sys.argv[1:]
        mod = words.index("-m")
        sys.exit(subprocess.call([sys.executable, *words[mod:]]))
    ''',
    # prime-rl's `rl` (the `uv run rl @ rl.toml` entry point): takes the Launcher title, starts
    # each component through `uv run` with its stdout in `<output_dir>/logs/<name>.stdout`, then
    # follows the trainer's with `tail -F`, as prime_rl/rl.py does.
    "rl": '''
        import os, subprocess, sys, tomllib, fakerl
        fakerl.title("PRIME-RL::Launcher")
        cfg = tomllib.load(open(sys.argv[sys.argv.index("@") + 1], "rb"))
        logs = os.path.join(cfg["output_dir"], "logs")
        os.makedirs(logs, exist_ok=True)
        kids = []
        for name, cmd in (
            ("inference", ["uv", "run", "inference", "@", "/tmp/tmp_inference.toml"]),
            ("orchestrator", ["uv", "run", "orchestrator", "@", "/tmp/tmp_orchestrator.toml"]),
            ("trainer", ["uv", "run", "env", "PYTHONUNBUFFERED=1", "torchrun", "--nproc-per-node=1",
                         "--local-ranks-filter=0", "-m", "prime_rl.trainer.rl.train", "@", "/tmp/tmp_trainer.toml"]),
        ):
            with open(os.path.join(logs, name + ".stdout"), "w") as out:
                kids.append(subprocess.Popen(cmd, stdout=out, stderr=out))
        kids.append(subprocess.Popen(["tail", "-F", os.path.join(logs, "trainer.stdout")], stdout=subprocess.DEVNULL))
        fakerl.wait()
    ''',
    "inference": 'import fakerl; fakerl.title("PRIME-RL::Inference"); fakerl.wait()',
    "orchestrator": 'import fakerl; fakerl.title("PRIME-RL::Orchestrator"); fakerl.wait()',
}

# Modules and scripts the launches run (`python3 -m …`, `python examples/…`).
MODULES = {
    "prime_rl/trainer/rl/train.py": 'import fakerl; fakerl.title("PRIME-RL::Trainer"); fakerl.wait()',
    "skyrl_train/entrypoints/main_base.py": '''
        import fakerl
        print("Starting SkyRL entrypoint", flush=True)
        fakerl.local_cluster("ray::skyrl_entrypoint", "ray::FSDPPolicyWorkerBase", "ray::AsyncVLLMInferenceEngine")
        fakerl.wait()
    ''',
    "verl/trainer/main_ppo.py": '''
        import fakerl
        print("(TaskRunner pid=1) step:0 - val-core/openai/gsm8k/reward/mean@1:0.49", flush=True)
        fakerl.local_cluster("ray::TaskRunner", "ray::WorkerDict", "ray::vLLMHttpServer")
        fakerl.wait()
    ''',
    "openrlhf/cli/train_ppo_ray.py": '''
        import os, fakerl
        queue = os.environ.get("FAKE_RAY_QUEUE")
        actors = ["ray::ActorModelRayActor", "ray::LLMRayActor"]
        if queue:  # `ray.init()` finds the cluster `ray start` left running and asks it for actors
            for i, t in enumerate(actors):
                open(os.path.join(queue, f"{os.getpid()}-{i}"), "w").write(t)
        else:
            fakerl.local_cluster(*actors)
        fakerl.wait()
    ''',
}


def _body(code: str) -> str:
    return textwrap.dedent(code).strip() + "\n"


class Shapes:
    """A machine's worth of stand-ins under `tmp`: PATH and PYTHONPATH for them, the processes
    started, and their teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.bin = tmp / "bin"
        self.lib = tmp / "lib"
        self.bin.mkdir()
        self.lib.mkdir()
        (self.lib / "fakerl.py").write_text(FAKERL)
        for name, code in PROGRAMS.items():
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n" + _body(code))
            path.chmod(0o755)
        for rel, code in MODULES.items():
            self.module(rel, code)
        self.queue = tmp / "ray-queue"
        self.queue.mkdir()
        self.env = dict(
            os.environ,
            PATH=f"{self.bin}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
            PYTHONPATH=str(self.lib),
            FAKE_RAY_PIDFILE=str(tmp / "raylet.pid"),
            TERM="xterm",
        )
        self.started: list[subprocess.Popen[bytes]] = []
        self.loose: list[int] = []  # processes that are no child of ours (a raylet `ray start` left)
        self._ptys: list[int] = []

    def module(self, rel: str, code: str, root: Path | None = None) -> Path:
        path = (root or self.lib) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if root is None:  # a package: `python -m a.b.c` imports each level
            for d in path.relative_to(self.lib).parents:
                if str(d) != ".":
                    (self.lib / d / "__init__.py").touch()
        path.write_text(_body(code))
        return path

    def start(self, argv: list[str], cwd: Path, *, stdout: object = subprocess.DEVNULL, tty: bool = False,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a launch as a person would at a prompt: its own session (a shell's job), its
        output on a terminal (`tty`) or where it is redirected."""
        kw: dict[str, object] = {"stdout": stdout, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}
        if tty:
            master, slave = pty.openpty()
            self._ptys.append(master)
            kw = {"stdin": slave, "stdout": slave, "stderr": slave}
        proc = subprocess.Popen(argv, cwd=cwd, env={**self.env, **(env or {})}, start_new_session=True, **kw)
        if tty:
            os.close(slave)
        self.started.append(proc)
        return proc

    def ray_start(self, cwd: Path) -> int:
        """`ray start --head`: the raylet's pid, once it runs apart from the command."""
        pidfile = self.tmp / "raylet.pid"
        subprocess.run(["ray", "start", "--head"], cwd=cwd, env={**self.env, "FAKE_RAY_QUEUE": str(self.queue)}, check=True, timeout=30)
        pid = int(pidfile.read_text())
        self.loose.append(pid)
        return pid

    def stop(self) -> None:
        roots = [p.pid for p in self.started] + self.loose
        procs = []
        for pid in roots:
            try:
                root = psutil.Process(pid)
                procs += [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
        for p in procs:
            try:
                p.kill()
            except psutil.Error:
                continue
        for p in self.started:
            p.wait()
        psutil.wait_procs(procs, timeout=5)
        for fd in self._ptys:
            os.close(fd)


def tree(root_pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def pids_titled(root_pid: int, prefix: str) -> set[int]:
    """The pids under `root_pid` whose title (or argv) starts with `prefix`."""
    out = set()
    for p in tree(root_pid):
        try:
            if " ".join(p.cmdline()).strip().startswith(prefix):
                out.add(p.pid)
        except psutil.Error:
            continue
    return out


def pids_running(root_pid: int, word: str) -> set[int]:
    """The pids under `root_pid` whose command line holds `word`."""
    out = set()
    for p in tree(root_pid):
        try:
            if word in " ".join(p.cmdline()):
                out.add(p.pid)
        except psutil.Error:
            continue
    return out


def settle(pred: Callable[[], object], timeout: float = 20.0) -> bool:
    """Wait until `pred()` holds (stand-ins take their titles a moment after they start)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


__all__ = ["Shapes", "pids_running", "pids_titled", "settle", "tree"]
