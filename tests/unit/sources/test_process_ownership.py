"""Which processes are a run's, on real process trees launched as each framework's README says
(docs/reading.md, "Which processes are the run's"): the sampler claims the run's processes in
their roles, and never the person beside it (a shell in the run dir, `tail -f` and `less` on its
log), nor another run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runtop.frameworks import get, process_roles
from runtop.sources.processes import ProcessSampler, ProcessSnapshot
from tests.launch_shapes import Shapes, pids_running, pids_titled, settle
from tests.live.test_processes import sample_until as sample_until_in

pytestmark = pytest.mark.skipif(shutil.which("less") is None or shutil.which("tee") is None,
                                reason="needs less and tee (the bystanders and the pipeline)")


@pytest.fixture
def shapes(tmp_path):
    s = Shapes(tmp_path)
    try:
        yield s
    finally:
        s.stop()


def bystanders(shapes: Shapes, cwd: Path, log: Path) -> set[int]:
    """A person beside the run: a shell at a prompt in its dir, `tail -f` and `less` on its log."""
    shell = shapes.start(["bash", "--norc", "-i"], cwd, tty=True)
    tail = shapes.start(["tail", "-f", str(log)], cwd)
    less = shapes.start(["less", str(log)], cwd, tty=True)
    return {shell.pid, tail.pid, less.pid}


def sample_until(sampler: ProcessSampler, pred, timeout: float = 20.0) -> ProcessSnapshot:
    """Sample until `pred(snapshot)` holds (a launch starts its children one after another)."""
    return sample_until_in(sampler, pred, timeout)


def up(root_pid: int, *titles: str) -> dict[str, set[int]]:
    """The pids under `root_pid` of each title, once every one has taken it."""
    found: dict[str, set[int]] = {}

    def all_up() -> bool:
        found.update({t: pids_titled(root_pid, t) for t in titles})
        return all(found.values())

    assert settle(all_up), f"the stand-ins never took their titles: {found}"
    return found


def roles_become(sampler: ProcessSampler, want: dict[str, set[int]]) -> ProcessSnapshot:
    """The snapshot once the run's roles are exactly `want` (the test fails with what they were)."""
    snap = sample_until(sampler, lambda s: {r: set(p) for r, p in s.roles().items()} == want)
    assert {r: set(p) for r, p in snap.roles().items()} == want, [(p.pid, p.role, p.title[:60]) for p in snap.procs]
    return snap


def claimed(snap: ProcessSnapshot) -> set[int]:
    return {p.pid for p in snap.procs}


def none_claimed(snap: ProcessSnapshot, pids: set[int]) -> None:
    """Each of `pids` is alive (a bystander that quit proves nothing) and not the run's."""
    for pid in pids:
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE, f"{pid} is gone"
    assert not pids & claimed(snap), [(p.pid, p.title[:60]) for p in snap.procs if p.pid in pids]


def test_prime_rl_uv_run_rl_from_the_checkout(shapes, tmp_path):
    """`uv run rl @ examples/reverse_text/rl.toml` in the prime-rl checkout: the launcher keeps
    the checkout as its cwd and sends each child's stdout into `outputs/my-run/logs/`."""
    checkout = tmp_path / "prime-rl"
    run = checkout / "outputs" / "my-run"
    (checkout / "examples" / "reverse_text").mkdir(parents=True)
    (run / "logs").mkdir(parents=True)
    logs = [run / "logs" / f"{r}.log" for r in ("orchestrator", "trainer", "inference")]
    for log in logs:
        log.write_text("")
    (checkout / "examples" / "reverse_text" / "rl.toml").write_text(f'output_dir = "{run}"\n')
    launch = shapes.start(["uv", "run", "rl", "@", "examples/reverse_text/rl.toml"], checkout, tty=True)
    away = bystanders(shapes, run, logs[0])
    sampler = ProcessSampler(str(run), [str(p) for p in logs], process_roles(get("prime-rl")))
    t = up(launch.pid, "PRIME-RL::Launcher", "PRIME-RL::Inference", "PRIME-RL::Orchestrator", "PRIME-RL::Trainer")
    # torchrun, and the `uv run env … torchrun …` that starts it, are the trainer's too.
    snap = roles_become(sampler, {"launcher": t["PRIME-RL::Launcher"], "inference": t["PRIME-RL::Inference"],
                                  "orchestrator": t["PRIME-RL::Orchestrator"],
                                  "trainer": t["PRIME-RL::Trainer"] | pids_running(launch.pid, "torchrun")})
    # The `uv run …` that hands each component its log file is the run's, in no role of its own.
    assert pids_running(launch.pid, "uv run orchestrator") <= claimed(snap)
    # The launcher's own `tail -F` of the trainer's log is a viewer, like the person's.
    follow = pids_running(launch.pid, "tail -F")
    assert follow
    none_claimed(snap, follow | away)
    assert not snap.missing


def test_skyrl_bash_run_script_redirected_into_logs(shapes, tmp_path):
    """`bash examples/gsm8k/run_gsm8k.sh &> logs/x.log` in the SkyRL checkout: bash → uv → the
    driver (`-m skyrl_train.entrypoints.main_base`) → the raylet it starts → `ray::` actors."""
    checkout = tmp_path / "SkyRL" / "skyrl-train"
    (checkout / "examples" / "gsm8k").mkdir(parents=True)
    (checkout / "logs").mkdir()
    (checkout / "examples" / "gsm8k" / "run_gsm8k.sh").write_text(
        "set -x\nuv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base \\\n"
        "  trainer.epochs=20 trainer.ckpt_path=\"$HOME/ckpts/gsm8k_1.5B_ckpt\" generator.backend=vllm\n")
    log = checkout / "logs" / "x.log"
    with open(log, "w") as out:
        launch = shapes.start(["bash", "examples/gsm8k/run_gsm8k.sh"], checkout, stdout=out)
    away = bystanders(shapes, checkout, log) | bystanders(shapes, checkout / "logs", log)
    # The run dir is the log's (what SkyRL's layout finds); its processes work a level above.
    sampler = ProcessSampler(str(checkout / "logs"), [str(log)], process_roles(get("skyrl")))
    t = up(launch.pid, "ray::skyrl_entrypoint", "ray::FSDPPolicyWorkerBase", "ray::AsyncVLLMInferenceEngine")
    driver = pids_running(launch.pid, "skyrl_train.entrypoints.main_base")  # uv and the Python it runs
    assert len(driver) == 2
    snap = roles_become(sampler, {"trainer": t["ray::skyrl_entrypoint"] | t["ray::FSDPPolicyWorkerBase"],
                                  "inference": t["ray::AsyncVLLMInferenceEngine"], "launcher": driver})
    assert launch.pid in claimed(snap)  # the script itself, in no role
    none_claimed(snap, away)


def test_verl_python_piped_into_tee(shapes, tmp_path):
    """`python3 -m verl.trainer.main_ppo … 2>&1 | tee verl_demo.log` in the verl checkout: tee
    names the log, the driver only feeds tee's stdin; another script in the checkout is not the run."""
    checkout = tmp_path / "verl"
    checkout.mkdir()
    log = checkout / "verl_demo.log"
    log.write_text("")
    launch = shapes.start(["bash", "-c", "PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo "
                           "data.train_files=$HOME/data/gsm8k/train.parquet trainer.logger=console "
                           "trainer.n_gpus_per_node=1 trainer.total_epochs=15 2>&1 | tee verl_demo.log"], checkout, tty=True)
    away = bystanders(shapes, checkout, log)
    neighbour = shapes.start([sys.executable, "-c", "import time; time.sleep(120)", "scripts/plot_verl_rewards.py"], checkout)
    sampler = ProcessSampler(str(checkout), [str(log)], process_roles(get("verl")))
    t = up(launch.pid, "ray::TaskRunner", "ray::WorkerDict", "ray::vLLMHttpServer")
    driver = pids_running(launch.pid, "verl.trainer.main_ppo") - {launch.pid}
    tee = pids_running(launch.pid, "tee verl_demo.log") - {launch.pid}
    assert len(driver) == 1 and len(tee) == 1
    # The driver is verl's trainer role, beside its TaskRunner and workers.
    snap = roles_become(sampler, {"trainer": driver | t["ray::TaskRunner"] | t["ray::WorkerDict"],
                                  "inference": t["ray::vLLMHttpServer"]})
    assert tee <= claimed(snap)
    # The shell that ran the pipeline is the person's; a script beside the run is not the run.
    none_claimed(snap, away | {launch.pid, neighbour.pid})


def test_trl_accelerate_launch_naming_its_output_dir(shapes, tmp_path):
    """`accelerate launch train_grpo.py --output_dir Qwen2-0.5B-GRPO`: the output dir named on
    the command line ties accelerate and its script to the run."""
    work = tmp_path / "trl-work"
    run = work / "Qwen2-0.5B-GRPO"
    run.mkdir(parents=True)
    log = run / "console.log"
    log.write_text("")
    shapes.module("train_grpo.py", "import fakerl; print('{\\'loss\\': 0.0}', flush=True); fakerl.wait()", root=work)
    launch = shapes.start(["accelerate", "launch", "train_grpo.py", "--output_dir", "Qwen2-0.5B-GRPO"], work, tty=True)
    away = bystanders(shapes, run, log)
    sampler = ProcessSampler(str(run), [str(log)], process_roles(get("trl")))
    assert settle(lambda: len(pids_running(launch.pid, "train_grpo.py")) == 2)
    script = pids_running(launch.pid, "train_grpo.py") - {launch.pid}  # the script, accelerate's child
    snap = roles_become(sampler, {"trainer": {launch.pid} | script})
    none_claimed(snap, away)


def test_trl_python_train_redirected_into_the_run_dir(shapes, tmp_path):
    """`python train.py > runs/exp/train.log 2>&1`: nothing in its argv says TRL or names the run
    dir; its stdout does, and the Python writing the run's log is its driver (the trainer)."""
    work = tmp_path / "trl-work"
    run = work / "runs" / "exp"
    run.mkdir(parents=True)
    shapes.module("train.py", "import fakerl; fakerl.wait()", root=work)
    log = run / "train.log"
    with open(log, "w") as out:
        launch = shapes.start(["python3", "train.py"], work, stdout=out)
    away = bystanders(shapes, run, log)
    sampler = ProcessSampler(str(run), [str(log)], process_roles(get("trl")))
    snap = roles_become(sampler, {"trainer": {launch.pid}})
    none_claimed(snap, away)


def test_openrlhf_driver_on_a_cluster_started_apart(shapes, tmp_path):
    """`ray start --head`, then `python3 -m openrlhf.cli.train_ppo_ray … --save_path …`: the actors
    hang under the raylet `ray start` left, not under the driver. They are the run's while its
    driver lives; another run's actors (under its own `ray.init()` cluster) never are."""
    checkout = tmp_path / "OpenRLHF"
    run = checkout / "checkpoint" / "llama3-8b-rlhf"
    other = checkout / "checkpoint" / "other-rlhf"
    run.mkdir(parents=True)
    other.mkdir(parents=True)
    log = run / "train.log"
    log.write_text("")
    raylet = shapes.ray_start(checkout)
    argv = ["python3", "-m", "openrlhf.cli.train_ppo_ray", "--pretrain", "OpenRLHF/Llama-3-8b-sft-mixture",
            "--actor_num_gpus_per_node", "8", "--vllm_num_engines", "4", "--save_path"]
    driver = shapes.start([*argv, "./checkpoint/llama3-8b-rlhf"], checkout, env={"FAKE_RAY_QUEUE": str(shapes.queue)}, tty=True)
    theirs = shapes.start([*argv, "./checkpoint/other-rlhf"], checkout, env={"FAKE_RAY_QUEUE": ""}, tty=True)
    away = bystanders(shapes, run, log)
    sampler = ProcessSampler(str(run), [str(log)], process_roles(get("openrlhf")))
    t = up(raylet, "ray::ActorModelRayActor", "ray::LLMRayActor")
    actor, llm = t["ray::ActorModelRayActor"], t["ray::LLMRayActor"]
    theirs_up = up(theirs.pid, "ray::ActorModelRayActor", "ray::LLMRayActor")
    snap = roles_become(sampler, {"trainer": {driver.pid} | actor, "inference": llm})
    their_actors = set().union(*theirs_up.values())
    none_claimed(snap, their_actors | {theirs.pid} | away)
    driver.kill()
    driver.wait()
    # The driver is gone: the cluster's workers outlive it and are no longer this run's.
    snap = sample_until(sampler, lambda s: not (actor | llm) & claimed(s))
    assert not (actor | llm) & claimed(snap) and "trainer" not in snap.roles()


def test_nemo_rl_uv_run_python_with_overrides(shapes, tmp_path):
    """`uv run python examples/run_grpo_math.py --config … logger.log_dir=logs/exp1
    checkpointing.checkpoint_dir=results/exp1` in the NeMo-RL checkout: the override names the run dir."""
    checkout = tmp_path / "RL"
    run = checkout / "logs" / "exp1"
    run.mkdir(parents=True)
    log = run / "driver.log"
    log.write_text("")
    shapes.module("examples/run_grpo_math.py", """
        import fakerl
        fakerl.local_cluster("ray::DTensorPolicyWorker", "ray::VllmGenerationWorker")
        fakerl.wait()
    """, root=checkout)
    launch = shapes.start(["uv", "run", "python", "examples/run_grpo_math.py", "--config", "examples/configs/grpo_math_1B.yaml",
                           "logger.log_dir=logs/exp1", "checkpointing.checkpoint_dir=results/exp1"], checkout, tty=True)
    away = bystanders(shapes, run, log)
    sampler = ProcessSampler(str(run), [str(log)], process_roles(get("nemo-rl")))
    t = up(launch.pid, "ray::DTensorPolicyWorker", "ray::VllmGenerationWorker", "raylet")
    drivers = pids_running(launch.pid, "run_grpo_math.py")  # uv and the Python it runs
    assert launch.pid in drivers and len(drivers) == 2
    snap = roles_become(sampler, {"trainer": drivers | t["ray::DTensorPolicyWorker"], "inference": t["ray::VllmGenerationWorker"]})
    assert t["raylet"] <= claimed(snap)  # in no role, but the run's
    none_claimed(snap, away)


def test_a_live_skyrl_demo_lists_its_processes_in_status(tmp_path):
    """`runtop demo --framework skyrl`: its entrypoint and engine run in the demo dir, a level
    above the log runtop reads; `status --json` lists them, not "no process of this run"."""
    runtop = os.path.join(os.path.dirname(sys.executable), "runtop")
    root = tmp_path / "sky"
    demo = subprocess.Popen([runtop, "demo", "--framework", "skyrl", "--headless", "--dir", str(root), "--steps", "300"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        titled = {}

        def started() -> bool:
            titled.update({t: pids_titled(demo.pid, t) for t in ("ray::skyrl_entrypoint", "ray::AsyncVLLMInferenceEngine")})
            return all(titled.values()) and (root / "logs").is_dir()

        assert settle(started, 30), "the demo never started its processes"
        said: dict[str, list[int]] = {}

        def listed() -> bool:
            out = subprocess.run([runtop, "status", "--json", str(root)], capture_output=True, text=True, timeout=60)
            said.update(json.loads(out.stdout)["processes"] or {})
            return bool(said)

        settle(listed, 30)
        assert set(said["trainer"]) == titled["ray::skyrl_entrypoint"]
        assert set(said["inference"]) == titled["ray::AsyncVLLMInferenceEngine"]
    finally:
        for p in [*psutil.Process(demo.pid).children(recursive=True), psutil.Process(demo.pid)]:
            try:
                p.kill()
            except psutil.Error:
                continue
        demo.wait()
        time.sleep(0)


@pytest.mark.parametrize(("argv", "interactive"), [
    (("bash",), True), (("-bash",), True), (("bash", "--noprofile", "--rcfile", "/home/u/.bashrc", "-i"), True),
    (("bash", "-o", "vi"), True), (("zsh", "-l"), True),
    (("bash", "run.sh"), False), (("bash", "-c", "uv run rl @ rl.toml"), False), (("bash", "-lc", "python train.py"), False),
    (("python3", "train.py"), False),
])
def test_a_persons_shell_is_told_from_a_launch(argv, interactive):
    """The Launcher pane's own shell (even started with an rc file) is a bystander: were it
    the run's, the run would never look gone while the pane lives."""
    from runtop.sources.ownership import interactive_shell

    assert interactive_shell(argv, argv[0]) is interactive
