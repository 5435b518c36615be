"""The next step runtop advises is one that would work (docs/design.md, "Advice that would work"):
checked against what killed the run, with what to change first, and `R` offered only where a
resume could succeed. On simulated runs and corpus cases, with real (sparse) core dumps and the
machine's real disk probe, except where a disk must be full: that fact is given as the probe
would report it."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtop.actions.vetted import Context, plan
from runtop.engine.snapshot import read_and_judge
from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from runtop.outputs.notify import Notifier
from runtop.rules.advice import advise
from runtop.rules.health import Verdict
from runtop.sources.disk import DiskSnapshot, DiskUsage
from runtop.state.run import RunState
from tests.corpus_judge import _age
from tests.paths import TESTS

CORPUS = TESTS / "corpus"
SKYRL_LAUNCH = "python -m skyrl_agent.integrations.skyrl_train.main trainer.strategy=megatron"
PRIME_LAUNCH = "uv run rl @ configs/rl.toml --run.name reverse-text"
TITLED = "import setproctitle, sys, time; setproctitle.setproctitle(sys.argv[1]); time.sleep(120)"


def runtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=120)


def no_tmux() -> str:
    """A tmux socket no server listens on: a plan goes as far as its text, and nothing is typed."""
    return f"runtop-advice-{uuid.uuid4().hex[:8]}"


def judged_corpus(name: str, tmp_path: Path):
    """A corpus case copied to scratch with fresh files, read and judged as `runtop status` does."""
    import tomllib

    case = next(p for p in (CORPUS / name, CORPUS / "holdout" / name) if p.is_dir())
    exp = tomllib.loads((case / "expected.toml").read_text())
    run = tmp_path / name
    shutil.copytree(case / "run", run, symlinks=True)
    _age(run, 0.0)
    ckpt = str(run / exp["ckpt_dir"]) if "ckpt_dir" in exp else None
    return read_and_judge(str(run / exp.get("path", ".")), processes=False, ckpt_dir=ckpt)


# ---- a full disk ----------------------------------------------------------------------------
def test_the_disk_is_full_of_core_dumps_runtop_says_free_them_first_and_r_is_not_offered(skyrl_run):
    """docs/incidents.md#sigbus-save-core-dumps: a 9 GB core dump filled the disk and the save died
    of ENOSPC. Resuming onto that disk fails again: runtop names the dump, its size and folder, and
    the failed save, says to resume from the last complete checkpoint after that, and refuses `R`
    until the dump is gone."""
    root = skyrl_run("disk-full", max_steps=6)
    (core,) = glob.glob(os.path.join(root, "ray", "*", "runtime_resources", "working_dir_files", "core.67012"))
    state, verdict = read_and_judge(root, processes=False)
    advice = advise(state, verdict)
    assert verdict.verdict == "Down" and advice is not None
    assert advice.text.startswith("free space first")
    assert f"9.0 GB of core dumps (core.67012 9.0 GB in {os.path.dirname(core)})" in advice.text
    assert f"in {os.path.join(root, 'ckpts')}: the failed save global_step_4 (" in advice.text
    assert advice.text.endswith("; then resume from step 2 (last complete; step 4 is incomplete)")
    assert advice.action is None and advice.pane == "disk", "no key for a resume that would die of the same full disk: the disk pane instead"
    assert advice.refused is not None and advice.refused.endswith("free space first")

    # Every face says the same next step: the check-in, the JSON, the notification.
    md = runtop("status", root)
    assert f"**Next step**: {advice.text}\n" in md.stdout
    doc = json.loads(runtop("status", "--json", root).stdout)
    assert doc["next"] == {"text": advice.text, "action": None, "pane": "disk", "resume_refused": advice.refused}
    (message,) = Notifier("my-run").observe(verdict, state, time.time())
    assert f"next: {advice.text}" in message.body.splitlines()

    # `runtop send resume` refuses in one line, with the CLI's refusal code, and types nothing.
    sent = runtop("send", "resume", root, "--yes", "--launch-cmd", SKYRL_LAUNCH, "--tmux-socket", no_tmux())
    assert sent.returncode == 2 and sent.stderr.splitlines() == [f"runtop: resume is disabled: {advice.refused}"]

    # The dump deleted: the disk has room again, and `R` is offered.
    os.remove(core)
    if shutil.disk_usage(root).free < (7 << 30):
        pytest.skip("this machine's disk has less room than one simulated checkpoint (6 GB apparent)")
    state, verdict = read_and_judge(root, processes=False)
    after = advise(state, verdict)
    assert after is not None and after.action == "resume" and after.refused is None
    assert after.text.startswith("the disks have room again (") and after.text.endswith("then resume from step 2 (last complete; step 4 is incomplete)")
    p = plan("resume", Context.for_run(state, launch_cmd=SKYRL_LAUNCH, socket=no_tmux()))
    assert "trainer.resume_path=" in p.text and "global_step_2" in p.text  # the disk no longer stops it; only the missing tmux does
    assert p.disabled is not None and "disk" not in p.disabled


def with_checkpoint_sizes(root: str, size: int) -> None:
    """Give each simulated checkpoint a real (sparse) shard of `size` bytes: an honest size on disk."""
    for step_dir in glob.glob(os.path.join(root, "checkpoints", "step_*", "trainer")):
        with open(os.path.join(step_dir, "__0_0.distcp"), "wb") as f:
            f.truncate(size)


def test_a_disk_with_less_room_than_one_checkpoint_refuses_r_and_names_the_checkpoints_beyond_retention(simulated):
    """The trainer died of a GPU OOM on a disk with 2 GB left, and each checkpoint is 4 GB: the next
    save would die of ENOSPC. runtop says free space first (a checkpoint the run's own keep_last=2
    should have deleted), then the setting to lower, then the resume; a resume plan refuses with
    the same line."""
    root = simulated("trainer-oom", max_steps=12, fail_step=7)
    with_checkpoint_sizes(root, 4 << 30)
    state, verdict = read_and_judge(root, processes=False, disks=False)
    state.disk = DiskSnapshot([DiskUsage(("root", "output dir"), "/", 369 << 30, 367 << 30, 2 << 30, None, None)])
    advice = advise(state, verdict)
    assert advice is not None and advice.text == (
        f"free space first (the root, output dir (/) has 2.0 GB free of 369.0 GB): in {os.path.join(root, 'checkpoints')}: "
        "step_2 beyond keep_last=2 (4.0 GB); then lower trainer.model.seq_len (the trainer ran out of GPU memory); "
        "then resume from step 6 (last complete)"
    )
    assert advice.action is None
    assert advice.refused == "the root, output dir (/) has 2.0 GB free of 369.0 GB, less than the next save needs (4.0 GB): free space first"
    p = plan("resume", Context.for_run(state, launch_cmd=PRIME_LAUNCH, socket=no_tmux()))
    assert p.disabled == advice.refused and p.text == ""


# ---- a cause that recurs unless a setting changes ---------------------------------------------
def test_the_trainer_ran_out_of_gpu_memory_runtop_names_the_setting_and_the_resume_says_it_first(simulated):
    """A CUDA OOM comes back with the same config. runtop names prime-rl's setting to lower before
    the resume; `R` stays offered (the change may be in a config file runtop cannot see), and the
    confirmation says the same config dies the same way."""
    root = simulated("trainer-oom", max_steps=9)
    state, verdict = read_and_judge(root, processes=False)
    advice = advise(state, verdict)
    assert advice is not None
    assert advice.text == "lower trainer.model.seq_len (the trainer ran out of GPU memory); then resume from step 2 (last complete)"
    assert advice.action == "resume" and advice.refused is None
    p = plan("resume", Context.for_run(state, launch_cmd=PRIME_LAUNCH, socket=no_tmux()))
    assert p.text == f"{PRIME_LAUNCH} --resume.step 2"
    assert p.notes[0] == "first: lower trainer.model.seq_len (the trainer ran out of GPU memory) (the same command and config die the same way)"


@pytest.mark.parametrize(("case", "setting"), [
    ("primerl-v07-json-logging-trainer-oom", "lower trainer.model.seq_len (the trainer ran out of GPU memory)"),
    ("verl-vllm-cumem-wake-up-oom", "lower actor_rollout_ref.rollout.gpu_memory_utilization (vLLM ran out of GPU memory waking up"),
    ("nemo-rl-grpo-step-blocks-oom", "lower policy.train_micro_batch_size or policy.logprob_batch_size (the trainer ran out"),
    ("trl-rank-oom-tmp-checkpoint", "lower per_device_train_batch_size or max_completion_length (the trainer ran out"),
    ("openrlhf-actor-oom-latest-tag", "lower --micro_train_batch_size (--train.micro_batch_size on newer releases) (the trainer"),
    ("skyrl-training-failed-at-step-oom", "lower trainer.micro_train_batch_size_per_gpu or trainer.micro_forward_batch_size_per_gpu"),
    ("generic-cuda-oom-hydra-script", "lower the micro-batch size or the sequence length (the trainer ran out of GPU memory)"),
])
def test_an_oom_names_the_setting_to_lower_in_each_frameworks_own_words(case, setting, tmp_path):
    """Each framework spells its memory settings its own way (their configs and docs); vLLM's own
    out of memory, waking from sleep, is vLLM's setting, not the trainer's."""
    state, verdict = judged_corpus(case, tmp_path)
    advice = advise(state, verdict)
    assert verdict.verdict == "Down" and advice is not None and advice.text.startswith(setting), advice


def test_sigbus_in_a_save_says_dev_shm_then_the_last_complete_checkpoint(tmp_path):
    """The SIGBUS in a Megatron save of docs/incidents.md#sigbus-save-core-dumps: /dev/shm is too
    small for the save. runtop says so (with /dev/shm's size as the probe sees it), then resume from
    the last COMPLETE checkpoint, never the failed save beside it."""
    root = str(tmp_path / "skyrl")
    SkyrlSimulator(root, scenario="sigbus-checkpoint", autoretry=False, max_steps=6).run()
    state, verdict = read_and_judge(root, processes=False)
    advice = advise(state, verdict)
    assert advice is not None and advice.action == "resume"
    assert advice.text.startswith("give the container a larger /dev/shm: docker run --shm-size (SIGBUS: the save filled it")
    if os.path.isdir("/dev/shm"):
        assert "; /dev/shm is " in advice.text and " free now)" in advice.text
    assert advice.text.endswith("; then resume from step 2 (last complete; step 4 is incomplete)")


def test_nccl_shared_memory_out_of_space_is_dev_shm_not_a_full_disk(tmp_path):
    """NCCL's `No space left on device` creating /dev/shm/nccl-*: the container's /dev/shm, not a
    disk to clean up."""
    state, verdict = judged_corpus("nemo-rl-policy-worker-init-nccl-shm-repeated-across-cluster", tmp_path)
    advice = advise(state, verdict)
    assert advice is not None and advice.text.startswith("give the container a larger /dev/shm: docker run --shm-size (NCCL could not")
    assert "core dumps" not in advice.text


@pytest.mark.parametrize(("case", "fix"), [
    # The OpenAI-compatible server's wording (the simulator's below is vLLM's `(4000 > 4096 - 1297)`).
    ("primerl-main-vllm-rejects-every-request-context-length",
     "set orchestrator.sampling.max_completion_tokens (max_tokens before 2026-05) to at most 7518, or raise max_model_len "
     "(vLLM refuses requests past its context of 8192 tokens; the longest prompt is 674)"),
])
def test_vllm_refusing_max_tokens_names_the_setting_and_the_number_that_fits(case, fix, tmp_path):
    """Every rollout refused (`maximum context length is 8192 tokens. However, you requested 8480
    tokens (288 in the messages, 8192 in the completion)`): the setting and the largest value every
    refused request would have fit, from the refusals themselves."""
    state, verdict = judged_corpus(case, tmp_path)
    advice = advise(state, verdict)
    assert advice is not None and advice.text.startswith(fix), advice


def test_rollouts_hung_on_max_tokens_in_the_simulator(simulated):
    root = simulated("rollouts-hung", max_steps=9)
    state, verdict = read_and_judge(root, processes=False)
    advice = advise(state, verdict)
    assert advice is not None and advice.text.startswith(
        "set orchestrator.sampling.max_completion_tokens (max_tokens before 2026-05) to at most 2799, or raise max_model_len "
        "(vLLM refuses requests past its context of 4096 tokens; the longest prompt is 1297)"
    ), advice


# ---- hangs, dead engines, vanished runs ------------------------------------------------------
def aged(root: str, seconds: float) -> None:
    when = time.time() - seconds
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (when, when))


def test_a_run_that_vanished_says_what_to_check_then_resume(tmp_path):
    """Every process gone and no death in the logs (a reclaimed pod, the OOM killer): runtop says
    where to look (the host, the job or pod) and offers the resume."""
    root = str(tmp_path / "outputs" / "run")
    Simulator(root, scenario="healthy", max_steps=20, stop_after=6).run()
    aged(root, 20 * 60)
    state, verdict = read_and_judge(root)  # the real process scan: nothing of this run lives
    advice = advise(state, verdict)
    assert verdict.verdict == "Down" and advice is not None
    assert advice.text.startswith("check the host and the job or pod first: dmesg for the OOM killer")
    assert advice.text.endswith("; then resume from step 6 (last complete)") and advice.action == "resume"


@contextlib.contextmanager
def judged_with_its_processes_alive(root: Path) -> Iterator[tuple[RunState, Verdict]]:
    """The run's three titled processes alive in its directory (real children), judged once the
    process scan sees all three (a child that has not yet set its title is no role yet)."""
    procs = [subprocess.Popen([sys.executable, "-c", TITLED, t], cwd=root) for t in ("PRIME-RL::Trainer", "PRIME-RL::Orchestrator", "PRIME-RL::Inference")]
    try:
        deadline = time.monotonic() + 30  # three interpreters starting on a loaded box
        while True:
            state, verdict = read_and_judge(str(root))
            if {"trainer", "orchestrator", "inference"} <= set(state.processes or {}) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        yield state, verdict
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_hung_run_says_save_the_stacks_then_stop_and_resume_and_r_is_not_offered(tmp_path):
    """Silent 20 minutes with its processes alive (an NCCL hang): save their stacks (F), then stop
    and resume: restart (T). `R` alone would type into a live launcher: refused while they run."""
    root = tmp_path / "outputs" / "run"
    Simulator(str(root), scenario="healthy", max_steps=20, stop_after=6).run()
    aged(str(root), 20 * 60)
    with judged_with_its_processes_alive(root) as (state, verdict):
        advice = advise(state, verdict)
        assert verdict.verdict == "Down" and advice is not None
        assert advice.text.startswith("save the stacks first (F) to see where it hangs (silent 2")
        assert advice.text.endswith("; then stop, then resume from step 6 (last complete)") and advice.action == "restart"
        assert advice.refused == "the run is still running (inference, orchestrator, trainer): stop it first (X), or restart (T)"


@pytest.mark.parametrize(("case", "words"), [
    ("primerl-main-nccl-watchdog", "find the rank that hung or died first: every rank's last lines, NCCL_DEBUG=INFO (a collective timed out)"
     "; then resume from step 4 (last complete)"),
    ("primerl-main-vllm-requests-failed-engine-dead", "read the inference log above its last error for why vLLM's engine died"
     "; then resume from step 2 (last complete)"),
])
def test_nccl_timeouts_and_dead_engines_say_what_to_check_then_resume(case, words, tmp_path):
    state, verdict = judged_corpus(case, tmp_path)
    advice = advise(state, verdict)
    assert advice is not None and advice.text == words and advice.action == "resume"


# ---- the screen ------------------------------------------------------------------------------
async def test_the_band_and_the_alerts_say_free_the_core_dumps_first_and_r_is_gone_from_the_keys(skyrl_run):
    """The TUI on the disk-full run, with its real disk probe: the band's next step is the
    advice, with no key; the footer has no `R`; pressing it says why; the alerts screen has it whole."""
    from runtop.tui.alerts_screen import AlertsScreen
    from tests.screen_text import screen_text
    from tests.tui_helpers import make_app, settle

    root = skyrl_run("disk-full", max_steps=6)
    app = make_app(root, fixed=False, processes=False, interval=0.3)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.monitor.view()
        advice = advise(view.state, view.verdict)
        assert advice is not None and advice.action is None and advice.text.startswith("free space first: 9.0 GB of core dumps")
        text = screen_text(app)
        assert "next (5): free space first: 9.0 GB of core dumps (core.67012 9.0 GB in" in text
        footer = text.splitlines()[-1]
        assert "R Resume" not in footer and "X Stop" in footer
        assert app.check_action("act", ("resume",)) is False
        await pilot.press("R")
        await pilot.pause(0.3)
        assert any(t.startswith("resume is not offered: the run died of a full disk") for t in app.toasts), app.toasts
        await pilot.press("a")
        await pilot.pause(0.3)
        assert isinstance(app.screen, AlertsScreen)
        whole = " ".join(screen_text(app).split())
        assert "then resume from step 2 (last complete; step 4 is incomplete)" in whole
        assert "resume not offered: the run died of a full disk and its core dumps (9.0 GB) are still there" in whole


def test_a_run_silent_past_its_own_pace_with_its_processes_alive_says_watch_it_and_save_the_stacks(tmp_path):
    """Four minutes without a step where steps take ~35 s, its processes alive: Degraded, not yet
    proven hung; the next step is to look (F saves the stacks), not to restart."""
    root = tmp_path / "outputs" / "run"
    Simulator(str(root), scenario="healthy", max_steps=20, stop_after=9).run()
    aged(str(root), 4 * 60)
    with judged_with_its_processes_alive(root) as (state, verdict):
        advice = advise(state, verdict)
        assert verdict.verdict == "Degraded", verdict.reasons
        assert advice is not None and advice.text.startswith("watch it: no step past its own pace; F saves the stacks"), advice
        assert advice.action is None
