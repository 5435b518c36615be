"""Any log, any framework: what runtop says of output no plug-in of its own wrote, and of the
deaths and ends a plug-in's parser passes over. Each story is a real file written to disk and
read through `runtop check` / `status --json`, as a user would."""

from __future__ import annotations

import json
import os
import time

import pytest

from runtop.cli import main as cli


def write(tmp_path, name: str, text: str, age_s: float = 0) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    when = time.time() - age_s
    os.utime(path, (when, when))
    return str(path)


def check(capsys, path: str, *more: str) -> tuple[int, str]:
    code = cli.main(["check", path, *more])
    return code, capsys.readouterr().out.splitlines()[0]


def status(capsys, path: str, *more: str) -> dict:
    assert cli.main(["status", "--json", path, *more]) == 0
    return json.loads(capsys.readouterr().out)


TRACEBACK = """Traceback (most recent call last):
  File "/home/u/rl/train.py", line 212, in <module>
    main()
  File "/home/u/rl/train.py", line 180, in main
    loss = policy.step(batch)
"""

# Deaths in the words genuine output uses, with no framework's sign anywhere (docs/reading.md).
DEATHS = [
    ("CUDAOutOfMemory", "cumem", TRACEBACK + "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"),
    ("CUDAIllegalMemoryAccess", "illegal memory access",
     TRACEBACK + "RuntimeError: CUDA error: an illegal memory access was encountered\n\nThe above exception was the direct cause of the following exception:\n\n"
     + TRACEBACK + "RuntimeError: Error in model execution: CUDA error: an illegal memory access was encountered\n"),
    ("DistBackendError", "NCCL error",
     TRACEBACK + "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error, NCCL version 2.21.5\n"
     "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 2 'out of memory'\n"),
    ("NCCLTimeout", "Watchdog",
     "[rank1]:[E1206 13:01:11.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=19964, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.\n"),
    ("SIGKILL (out of memory?)", "memory pressure",
     "(raylet) [2025-04-02 11:12:07,552 E 2871 2871] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: a3f0, IP: 10.0.0.7)\n"),
    ("SIGKILL (out of memory?)", "oom_kill", "slurmstepd: error: Detected 1 oom_kill event in StepId=4412871.batch. Some of the step tasks have been OOM Killed.\n"),
    ("SIGKILL (out of memory?)", "Out Of Memory", "srun: error: gpu-a07: task 0: Out Of Memory\n"),
    ("SLURM time limit", "TIME LIMIT", "slurmstepd: error: *** JOB 4412871 ON gpu-a07 CANCELLED AT 2025-03-02T10:00:01 DUE TO TIME LIMIT ***\n"),
    ("SIGABRT", "Aborted", "Fatal Python error: Aborted\n\nThread 0x00007f1f (most recent call first):\n  File \"/usr/lib/python3.10/threading.py\", line 320 in wait\n"),
    ("ValueError", "Expected parameter logits", "ValueError: Expected parameter logits (Tensor of shape (280, 13)) to satisfy the constraint, but found invalid values:\ntensor([[nan, nan]])\n"),
    ("RayNodeDied", "node has died", "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\tclass_name: Worker\nThe actor died because its node has died. Node Id: 5c3f9a\n"),
]


@pytest.mark.parametrize("kind, words, tail", DEATHS, ids=[f"{k}-{w}" for k, w, _ in DEATHS])
def test_a_crash_tail_with_no_framework_is_down_naming_its_cause_and_says_it_was_read_generically(tmp_path, capsys, kind, words, tail):
    head = "starting training\nstep 1/100 loss=0.52 reward=0.10\nstep 2/100 loss=0.50 reward=0.12\n"
    path = write(tmp_path, "run/train.log", head + tail, age_s=600)
    code, first = check(capsys, path)
    assert code == 2 and first.startswith("Down:"), first
    assert kind in first and words.lower() in first.lower(), first
    assert first.endswith("(framework not recognised: read generically)"), first
    doc = status(capsys, path)
    assert doc["framework"] == "generic" and kind in doc["health"]["cause"]
    assert doc["detection"].startswith("framework not recognised")


def test_the_worker_that_aborted_is_the_cause_not_the_driver_whose_call_it_broke(tmp_path, capsys):
    """Ray prints the driver's traceback and the worker's abort in arrival order; the abort explains it."""
    text = ("(WorkerDict pid=4811, ip=10.0.0.3) *** SIGABRT received at time=1712345678 on cpu 17 ***\n"
            "(WorkerDict pid=4811, ip=10.0.0.3) Fatal Python error: Aborted\n"
            + TRACEBACK + "RuntimeError: worker failed: ray::WorkerDict.update_actor() (pid=4811, ip=10.0.0.3)\n")
    code, first = check(capsys, write(tmp_path, "run/train.log", "step 1/9 loss=1.0\n" + text, age_s=600))
    assert code == 2 and "SIGABRT" in first and "pid 4811" in first, first


def test_torchruns_summary_defers_to_the_ranks_exception_and_a_caret_is_never_the_message(tmp_path, capsys):
    text = ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"/w/train.py\", line 88, in <module>\n"
            "[rank0]:     loss = out.logits.mean()\n[rank0]:            ^^^^^^^^^^^^^^^^^\n"
            "[rank0]: AttributeError: 'NoneType' object has no attribute 'logits'\n"
            "E0301 10:00:01.000000 123 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python\n"
            "Traceback (most recent call last):\n  File \"/usr/bin/torchrun\", line 8, in <module>\n    sys.exit(main())\n"
            "    ^^^^^^\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "============================================================\ntrain.py FAILED\n")
    code, first = check(capsys, write(tmp_path, "run/train.log", text, age_s=600))
    assert "AttributeError" in first and "'NoneType' object has no attribute 'logits'" in first and "^^^" not in first, first
    assert "reported as ChildFailedError" in first


@pytest.mark.parametrize("end", ["Training finished!", "Training completed. Do not forget to share your model on huggingface.co/models =)",
                                 "Job 'raysubmit_7HbQ' succeeded", "{'train_runtime': 812.5, 'train_loss': 0.12, 'epoch': 1.0}"])
@pytest.mark.parametrize("age_h", [0, 3, 72])
def test_a_run_that_says_it_ended_is_finished_at_any_age(tmp_path, capsys, end, age_h):
    path = write(tmp_path, "run/train.log", "step 1/2 loss=0.5\nstep 2/2 loss=0.4\n" + end + "\n", age_s=age_h * 3600)
    code, first = check(capsys, path)
    assert code == 0 and first.startswith("Finished:") and "finished at step 2" in first, first


@pytest.mark.parametrize("line", ["Finished: 'generate', time cost: 5941.60s", "Training epoch 1 finished", "Evaluation finished",
                                  "Checkpoint saving finished", "Run finished with error"])
def test_words_near_an_end_are_not_one(tmp_path, capsys, line):
    code, first = check(capsys, write(tmp_path, "run/train.log", f"step 1/9 loss=0.5\n{line}\n", age_s=0))
    assert not first.startswith("Finished"), first


def test_a_bar_alone_gives_the_step_the_total_and_an_eta(tmp_path, capsys):
    bar = "".join(f"\r{int(n / 1562 * 100):3d}%|▏         | {n}/1562 [18:48<164:33:29, 379.99s/it]" for n in range(1, 4))
    doc = status(capsys, write(tmp_path, "run/train.log", "Loading checkpoint shards: 100%|██████████| 2/2 [00:02<00:00,  1.10s/it]\n" + bar + "\n"))
    assert (doc["progress"]["trainer_step"], doc["progress"]["max_steps"]) == (3, 1562)
    assert doc["progress"]["eta_s"] == pytest.approx(1559 * 379.99, rel=1e-3)


def test_a_last_epochs_bar_at_n_of_n_is_the_end_of_a_run_of_epochs(tmp_path, capsys):
    text = ("num_epochs: 2\n"
            "Epoch 0: 100%|██████████| 18/18 [03:00<00:00,  9.93s/it]\n"
            "{\n    \"epoch\": 1,\n    \"step\": 36,\n    \"total_loss\": 0.403,\n    \"gradnorm\": 1.1\n}\n"
            "Epoch 1: 100%|██████████| 18/18 [02:40<00:00,  8.91s/it]\n")
    path = write(tmp_path, "run/train.log", text, age_s=3 * 3600)
    code, first = check(capsys, path)
    assert code == 0 and first.startswith("Finished:"), first
    row = {r["step"]: r for r in status(capsys, path)["steps"]}[36]
    assert row["loss"] == 0.403 and row["grad_norm"] == 1.1


def test_steps_of_every_shape_carry_their_numbers(tmp_path, capsys):
    text = ("[2026-03-02 10:26:08,331][__main__][INFO] - step 7/600 loss=0.0241 reward=0.2504 kl=0.0033 resp_len=237.9 step_time=62.9s\n"
            "{\"step\": 8, \"loss\": 0.02, \"reward\": 0.3}\n"
            "{'step': 9, 'loss': '0.019', 'reward': '0.31'}\n"
            "========================= Step 10/600 =========================\n"
            "  • Loss: 0.0188\n  • Avg Reward: 0.3300\n  • Total step time: 61.00s\n")
    doc = status(capsys, write(tmp_path, "run/train.log", text), "--framework", "generic")  # NeMo-RL's block alone would name it
    rows = {r["step"]: r for r in doc["steps"]}
    assert rows[7]["reward"] == 0.2504 and rows[7]["seq_len"] == 237.9 and rows[7]["step_time_s"] == 62.9
    assert rows[8]["loss"] == 0.02 and rows[9]["reward"] == 0.31
    assert rows[10]["loss"] == 0.0188 and rows[10]["reward"] == 0.33 and rows[10]["step_time_s"] == 61.0
    assert (doc["progress"]["trainer_step"], doc["progress"]["max_steps"]) == (10, 600)


def test_a_line_about_saving_at_a_step_is_no_progress(tmp_path, capsys):
    doc = status(capsys, write(tmp_path, "run/train.log", "step 3/10 loss=0.1\nSaving checkpoint at step 100\nResuming from step 50\n"))
    assert doc["progress"]["trainer_step"] == 3


def test_the_generic_reader_under_a_plug_in_reads_the_death_its_parser_passes_over(tmp_path, capsys):
    """A verl log whose job SLURM cancels: verl never prints that; slurmstepd does, into the same file."""
    text = ("(TaskRunner pid=51520) step:5 - actor/entropy:0.41 - critic/score/mean:0.62 - timing_s/step:88.1\n"
            "(TaskRunner pid=51520) step:6 - actor/entropy:0.40 - critic/score/mean:0.63 - timing_s/step:88.0\n"
            "slurmstepd: error: *** JOB 77123 ON gpu-a07 CANCELLED AT 2025-03-02T10:00:01 DUE TO TIME LIMIT ***\n")
    path = write(tmp_path, "run/verl.log", text, age_s=600)
    code, first = check(capsys, path)
    assert code == 2 and "SLURM time limit" in first and "resume from the last complete checkpoint" in first, first
    assert status(capsys, path)["framework"] == "verl"


def test_a_plug_ins_judgement_wins_a_failed_request_stays_one(tmp_path, capsys):
    """vLLM prints a traceback for one bad request; under the vLLM parser it is no death."""
    from runtop.frameworks.generic.under import Under
    from runtop.parsers.events import Notice
    from runtop.parsers.logs import parse_records
    from runtop.parsers.records import RecordAssembler

    lines = ["(APIServer pid=7) ERROR 09-15 19:05:31 [serving_chat.py:220] Error in preprocessing prompt inputs",
             "(APIServer pid=7) ERROR 09-15 19:05:31 [serving_chat.py:220] Traceback (most recent call last):",
             "(APIServer pid=7) ERROR 09-15 19:05:31 [serving_chat.py:220]   File \"/v/serving_chat.py\", line 200, in create",
             "(APIServer pid=7) ERROR 09-15 19:05:31 [serving_chat.py:220] ValueError: This model's maximum context length is 4096 tokens"]
    asm = RecordAssembler()
    evs = Under(parse_records)(asm.feed(lines) + asm.flush(), "inference")
    assert [e.fatal for e in evs if isinstance(e, Notice)] == [False]


def test_a_slurm_job_log_beside_a_framework_run_says_how_the_job_ended(tmp_path, capsys):
    dicts = "".join(f"{{'loss': 0.01, 'grad_norm': 0.4, 'learning_rate': 1e-06, 'reward': 0.{n}, 'reward_std': 0.3, 'frac_reward_zero_std': 0.2}}\n" for n in range(1, 4))
    write(tmp_path, "run/grpo.log", dicts, age_s=600)
    write(tmp_path, "run/slurm-77123.out", "starting\nslurmstepd: error: *** JOB 77123 ON gpu-a07 CANCELLED AT 2025-03-02T10:00:01 DUE TO TIME LIMIT ***\n", age_s=600)
    code, first = check(capsys, str(tmp_path / "run"))
    assert code == 2 and "SLURM time limit" in first, first
    doc = status(capsys, str(tmp_path / "run"))
    assert doc["framework"] == "trl" and doc["progress"]["trainer_step"] == 3


def test_steps_with_no_learning_signal_are_a_warning(tmp_path, capsys):
    lines = "".join(f"(TaskRunner pid=9) step:{n} - critic/score/mean:-1.000 - critic/score/max:-1.000 - critic/score/min:-1.000"
                    f" - critic/advantages/mean:0.000 - critic/advantages/max:0.000 - critic/advantages/min:0.000"
                    f" - response_length/clip_ratio:1.000 - timing_s/step:60.0\n" for n in range(1, 5))
    code, first = check(capsys, write(tmp_path, "run/verl.log", lines))
    assert code == 1 and first.startswith("Degraded:") and "no learning signal for 3 steps (2-4): every advantage is 0" in first, first
    assert "every response truncated" in first
    healthy = lines.replace("critic/advantages/max:0.000", "critic/advantages/max:0.700").replace("critic/score/max:-1.000", "critic/score/max:1.000")
    assert check(capsys, write(tmp_path, "run2/verl.log", healthy))[0] == 0


def test_a_rejected_max_tokens_names_the_value_that_fits(tmp_path, capsys):
    from runtop.rules.registry import max_tokens_that_fit

    refusals = ["'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 tokens and your request has 1297 input tokens (4000 > 4096 - 1297).",
                "'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 tokens and your request has 1502 input tokens (4000 > 4096 - 1502)."]
    assert max_tokens_that_fit(refusals) == (2594, 4096, 1502)
    assert max_tokens_that_fit(["no arithmetic here"]) is None


def test_prime_rls_sft_trainer_that_finished_stays_finished_when_old(tmp_path, capsys):
    """`SFT trainer finished!` is prime-rl's SFT trainer's last word (read Healthy, then Down at 3 h, before)."""
    lines = "".join(f"10:0{n}:00 SUCCESS Step {n} |   31.0s | Loss 0.{9 - n} | Entropy 0.41 | Grad. Norm 0.21 | LR 3.00e-06 | Throughput 14872 tokens/s | MFU 9.8% | Peak Mem. 31.6 GiB\n" for n in range(1, 4))
    path = write(tmp_path, "run/logs/trainer.log", "10:00:00    INFO Starting training loop (max_steps=3)\n" + lines + "10:04:00 SUCCESS SFT trainer finished!\n", age_s=3 * 3600)
    code, first = check(capsys, path)
    assert code == 0 and first.startswith("Finished:") and "finished at step 3" in first, first


@pytest.mark.parametrize("name", ["prime-rl", "skyrl", "verl", "trl", "openrlhf", "nemo-rl"])
def test_every_frameworks_finished_run_stays_finished_three_days_on(tmp_path, capsys, name):
    """Finished is final: an old finished run is not `Down — no log write for 3 days`."""
    from runtop.frameworks import get

    root = tmp_path / name
    get(name).simulator(str(root), "healthy").run()
    when = time.time() - 3 * 86400
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (when, when), follow_symlinks=False)
    target = str(root)
    code, first = check(capsys, target)
    assert code == 0 and first.startswith("Finished:"), first


@pytest.mark.parametrize("name", ["prime-rl", "skyrl", "verl", "trl", "openrlhf", "nemo-rl"])
def test_the_generic_reader_alone_reads_every_frameworks_finished_demo_as_finished(tmp_path, capsys, name):
    """What a plug-in adds is precision: with none (`--framework generic`), the run's end and its
    last step are still read, and nothing in a healthy run reads as a death."""
    from runtop.frameworks import get

    root = tmp_path / name
    sim = get(name).simulator(str(root), "healthy")
    sim.run()
    code, first = check(capsys, str(root), "--framework", "generic")
    assert code == 0 and first.startswith("Finished:") and "finished at step" in first, first
    assert first.endswith("(read as generic: given with --framework)"), first


def test_a_message_is_looked_at_for_an_end_by_every_word_of_one():
    """`worth_a_look` asks for an end's words one `in` after another: the same words as
    END_WORDS, none left out (an end said in a word it lost would never reach the generic reader)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from runtop.frameworks.generic import under

    pieces = st.sampled_from([*under.END_WORDS, *(w[:-1] for w in under.END_WORDS), *(w[1:] for w in under.END_WORDS), " ", "x", "'"])

    @settings(max_examples=500, deadline=None)
    @given(st.lists(pieces, max_size=6).map("".join))
    def holds(msg: str) -> None:
        assert under._end_word(msg) == any(w in msg for w in under.END_WORDS)

    holds()
    for word in under.END_WORDS:
        assert under._end_word(f"training {word} now")
