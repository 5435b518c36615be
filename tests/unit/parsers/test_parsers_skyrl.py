"""SkyRL driver-log lines, as docs/incidents.md (its SkyRL incidents) and docs/formats.md show them,
→ events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtop.parsers.checkpoints import judge_skyrl
from runtop.parsers.events import (
    AgentError,
    AgentReward,
    AttemptStart,
    BatchProgress,
    CheckpointDir,
    CheckpointSave,
    ExtraLog,
    FormatFailure,
    LaunchConfig,
    MaxSteps,
    Notice,
    Phase,
    Resumed,
    SlowCall,
    StepMetrics,
    Trajectory,
    VllmStats,
)
from tests.helpers import of_type, skyrl_events_of
from tests.inner import examples

E = "\x1b[36m(skyrl_entrypoint pid=66570)\x1b[0m "


def log(time: str, level: str, msg: str, where: str = "skyrl_train.trainer:train:342") -> str:
    return f"{E}2026-02-19 {time}.123 | {level:<8} | {where} - {msg}\n"


def merged(events: list, step: int) -> dict:
    """All numbers a step got, as the state would merge them (ignoring origin ranks)."""
    out: dict = {}
    for ev in of_type(events, StepMetrics):
        if ev.step == step:
            out.update(ev.values)
            out.update({f"phase:{k}": v for k, v in ev.phases_s.items()})
            out.update({f"extra:{k}": v for k, v in ev.extra.items()})
    return out


STEP_1 = (
    log("09:08:58", "INFO", "Started: 'step'")
    + log("09:08:58", "INFO", "Started: 'generate'")
    + f"{E}global_step: 1\n"
    + log("11:00:58", "INFO", "Finished: 'generate', time cost: 5941.60s")
    + f"{E}reward/avg_pass_at_5: 1.0, reward/avg_raw_reward: 5.2275\n"
    + log("11:01:58", "INFO", "Finished: 'fwd_logprobs_values_reward', time cost: 59.25s")
    + f"{E}avg_final_rewards: 5.2275, avg_response_length: 14969.6\n"
    + "\rPolicy Train epoch [1/1]:  50%|█████     | 40/80 [01:28<01:28,  2.21s/it, pg=-0.1, glen=37000.0, policy_lr=1e-6, ent=8.5, grad_norm=0.3]"
    + "\rPolicy Train epoch [1/1]: 100%|██████████| 80/80 [02:57<00:00,  2.22s/it, pg=-0.402, glen=37744.0, policy_lr=1e-6, ent=9.05, grad_norm=0.34]"
    + log("11:04:58", "INFO", "Finished: 'policy_train', time cost: 177.97s")
    + log("11:05:40", "INFO", "Finished: 'sync_weights', time cost: 42.93s")
    + log("11:05:58", "INFO", "Finished: 'step', time cost: 6232.28s")
    + f"{E}{{'policy_loss': 9.59e-05, 'policy_lr': 9.999999974752427e-07, 'ppo_clip_ratio': 0.3125, 'policy_entropy': 7.453125, 'raw_grad_norm': 0.3402218818664551, 'policy_update_steps': 1}}\n"
    + f"{E}Step 1: \n"
    + f"{E}{{'loss/avg_final_rewards': '5.2275', 'policy/policy_entropy': '7.4531', 'policy/policy_kl': '0.0012', 'timing/generate': '5941.6000', 'timing/offload_policy_model_to_cpu': '5.0100'}}\n"
    + "\rTraining Batches Processed:   0%|          | 1/212 [1:43:52<365:16:51, 6232.28s/it]"
)


def test_a_whole_step_gives_the_check_in_table_row():
    events = skyrl_events_of(STEP_1)
    row = merged(events, 1)
    # The status dict is authoritative and full precision.
    assert row["loss"] == 9.59e-05 and row["clip_ratio"] == 0.3125 and row["grad_norm"] == 0.3402218818664551
    assert row["lr"] == 9.999999974752427e-07
    assert row["reward"] == 5.2275 and row["seq_len"] == 14969.6
    assert row["step_time_s"] == 6232.28
    assert row["phase:generate"] == 5941.60 and row["phase:policy_train"] == 177.97 and row["phase:sync_weights"] == 42.93
    assert row["extra:pass_at_5"] == 1.0
    # The tqdm postfix is the last micro-batch only: kept apart, under its own label.
    assert row["extra:last_microbatch/ent"] == 9.05 and row["extra:last_microbatch/pg"] == -0.402
    assert of_type(events, MaxSteps)[0].value == 212


def test_status_dict_wins_over_the_rounded_step_dump():
    events = skyrl_events_of(STEP_1)
    status = [e for e in of_type(events, StepMetrics) if e.origin == "status"]
    dump = [e for e in of_type(events, StepMetrics) if e.origin == "dump"]
    assert status[0].values["entropy"] == 7.453125
    assert {e.values.get("entropy") for e in dump} >= {7.4531}  # offered, but ranked below the status dict
    # Keys only the dump has are taken from it; a phase the timers gave is not offered again.
    dump_trainer = next(e for e in dump if "kl" in e.values)
    assert dump_trainer.values["kl"] == 0.0012
    dump_phases = {k for e in dump for k in e.phases_s}
    assert dump_phases == {"offload_policy_model_to_cpu"}


def test_rollouts_done_is_not_the_step_done():
    """`global_step: N` means the rollouts are in; only `Finished: 'step'` finishes the step."""
    events = skyrl_events_of(STEP_1.split("\rPolicy")[0])
    roles = {(e.role, e.step) for e in of_type(events, StepMetrics)}
    assert ("generator", 1) in roles  # SkyRL's rollout side is its generator, not an orchestrator
    assert not any(e.role == "trainer" for e in of_type(events, StepMetrics))
    phases = of_type(events, Phase)
    assert phases[0].name == "step" and phases[0].started


def test_newer_skyrl_names():
    events = skyrl_events_of(
        f"{E}global_step: 3\n"
        f"{E}{{'final_loss': 0.01, 'policy_loss': -0.02, 'loss_metrics/clip_ratio': 0.05, 'grad_norm': 0.2, 'policy_entropy': 6.1}}\n"
    )
    row = merged(events, 3)
    assert row["clip_ratio"] == 0.05 and row["grad_norm"] == 0.2 and row["loss"] == -0.02


def test_a_dict_that_is_not_the_status_line_is_ignored():
    events = skyrl_events_of(f"{E}global_step: 3\n{E}{{'temperature': 1.0, 'top_p': 0.95}}\n{E}{{'a': __import__('os')}}\n")
    assert not [e for e in of_type(events, StepMetrics) if e.values]


def test_glued_tqdm_frame_does_not_hide_the_next_record():
    text = "\rTraining Batches Processed:   0%|          | 1/212 [1:43:52<365:16:51, 6232.28s/it]" + log("11:06:00", "INFO", "Started: 'step'")
    events = skyrl_events_of(text)
    assert of_type(events, MaxSteps)[0].value == 212
    assert any(p.name == "step" and p.started for p in of_type(events, Phase))


def test_ray_prefixes_repeats_and_ray_own_format():
    text = (
        "2026-02-19 09:08:41,202\tINFO worker.py:1747 -- Connecting to existing Ray cluster at address: 10.0.0.1:6379...\n"
        "\x1b[33m(MegatronPolicyWorkerBase pid=1234, ip=10.0.0.2)\x1b[0m 2026-02-19 10:00:00.000 | WARNING  | skyrl_agent.agents.biomni:check:88 - Instance 7: Context (32768 tokens) exceeded max_prompt_len (31232). Stopping agent. [repeated 7x across cluster]\n"
    )
    overflow = [n for n in of_type(skyrl_events_of(text), Notice) if n.kind == "context_overflow"]
    assert overflow[0].count == 8  # the line shown plus the 7 Ray folded into it


def test_continuation_lines_carry_only_the_prefix():
    text = (
        log("10:00:00", "ERROR", "Training failed")
        + f"{E}Traceback (most recent call last):\n"
        + f'{E}  File "/workspace/SkyRL/skyrl-train/skyrl_train/entrypoints/main_base.py", line 78, in main\n'
        + f"{E}ray.exceptions.RayTaskError(ActorDiedError): ray::MegatronPolicyWorkerBase.save_checkpoint() (pid=67012)\n"
    )
    errs = [n for n in of_type(skyrl_events_of(text), Notice) if n.level == "ERROR"]
    assert len(errs) == 1
    assert errs[0].kind == "ray.exceptions.RayTaskError(ActorDiedError)" and errs[0].fatal


def test_shell_trace_names_checkpoint_dir_and_batch():
    text = (
        "+ export WANDB_API_KEY=abc\n"
        "+ python -m skyrl_train.entrypoints.main_base trainer.ckpt_path=/mnt/ckpts/run1 trainer.ckpt_interval=2 "
        "trainer.max_ckpts_to_keep=3 trainer.train_batch_size=16 generator.n_samples_per_prompt=5 trainer.run_name=gspo-1 'generator.x=a b'\n"
    )
    cfg = of_type(skyrl_events_of(text), LaunchConfig)[0]
    assert (cfg.ckpt_dir, cfg.ckpt_interval, cfg.keep_last, cfg.batch_rollouts, cfg.run_name) == ("/mnt/ckpts/run1", 2, 3, 80, "gspo-1")


def test_agent_rewards_and_batch_progress():
    text = log("09:08:58", "INFO", "Started: 'generate'")
    for i, (ft, gt) in enumerate([(1.0, 1.0), (0.0, 1.0), (1.0, 0.0)]):
        text += f"{E}ft_reward: {ft}\n{E}gt_reward: {gt}\n{E}rubric_reward: 4.5\n{E}total_reward: {ft + gt + 4.5} (gt={gt} + rubric=4.5 + ft={ft})\n"
        text += log("09:10:00", "INFO", f"Rubric evaluation complete for instance {1234 + i}: total={ft + gt + 4.5}, gt={gt}, rubric=4.5, ft={ft}", "skyrl_agent.rewards:evaluate:77")
    text += f"{E}global_step: 1\n"
    events = skyrl_events_of(text, batch_rollouts=80)
    rewards = of_type(events, AgentReward)
    assert [r.kind for r in rewards[:4]] == ["ft", "gt", "rubric", "total"]
    trajs = of_type(events, Trajectory)
    assert len(trajs) == 3 and trajs[1].rewards == {"total": 5.5, "gt": 1.0, "rubric": 4.5, "ft": 0.0}
    progress = of_type(events, BatchProgress)
    assert (progress[-1].done, progress[-1].total) == (3, 80)
    row = merged(events, 1)
    assert row["extra:ft_pass_rate"] == pytest.approx(2 / 3) and row["extra:gt_pass_rate"] == pytest.approx(2 / 3)


FORMAT_WARNINGS = [
    (1, "Format check failed: message does not start with <think>: Let me"),
    (2, "Format check failed: not exactly one <think> and one </think>: <think>a<think>"),
    (3, "Format check failed: response does not end with </execute> or </solution>: <think>x</think>"),
    (4, "Format check failed: no action tag after </think>: <think>x</think> hmm"),
    (5, "Format check failed: outer is <execute> but doesn't end with </execute>: <execute>x"),
    (5, "Format check failed: outer is <solution> but doesn't end with </solution>: <solution>x"),
    (6, "Format check failed: multiple outer <execute> blocks detected: <execute>a</execute><execute>"),
    (7, "Format check failed: is_last but outer is <execute>, expected <solution>: <execute>"),
    (7, "Format check failed: not is_last but outer is <solution>, expected <execute>: <solution>"),
    (8, "Format check failed: <think> or </think> in after_think: </think><execute><think>"),
    (3, "Rule 3 violated: the text after is <think> or </think> in after_think"),  # an explicit rule number wins
]


@pytest.mark.parametrize("rule,msg", FORMAT_WARNINGS)
def test_each_format_rule(rule, msg):
    events = skyrl_events_of(log("10:00:00", "WARNING", msg, "skyrl_agent.agents.biomni:check_format:88"))
    assert [f.rule for f in of_type(events, FormatFailure)] == [rule]


def test_slow_call_names_the_tools_in_its_code():
    text = (
        log("10:00:00", "WARNING", "Code execution took 612.40 seconds. Code:", "skyrl_agent.tools:execute:212")
        + f"{E}import pandas as pd\n"
        + f"{E}results = []\n"
        + f"{E}for gid in ['ENSG1', 'ENSG2']:  # query_clinvar(x) in a comment is not a call\n"
        + f"{E}    results.append(query_ensembl(gid, \"print(x)\"))\n"
        + f"{E}df = pd.DataFrame(results)\n"
        + f"{E}info = gget.info(ids)\n"
        + f"{E}print(len(results), df.head())\n"
        + f"{E}Output:\n"
        + f"{E}IN QUERY ENSEMBL advanced_web_search(not code)\n"
    )
    call = of_type(skyrl_events_of(text), SlowCall)[0]
    assert call.duration_s == 612.40
    assert call.functions == ("query_ensembl", "gget.info")


def test_output_that_looks_like_a_step_stays_inside_its_code_record():
    text = (
        log("10:00:00", "WARNING", "Code execution took 200.00 seconds. Code:")
        + f"{E}advanced_web_search('x')\n{E}Output:\n{E}Step 3: done\n{E}{{'policy_loss': 1.0}}\n{E}global_step: 9 samples\n"
        + f"{E}ft_reward: 1.0\n"
    )
    events = skyrl_events_of(text)
    assert not of_type(events, StepMetrics)
    assert [r.kind for r in of_type(events, AgentReward)] == ["ft"]


def test_timeouts_and_overflows():
    text = (
        log("10:00:00", "WARNING", "Timeout error during execute on attempt 1/1: . Code being executed:", "skyrl_agent.tools:execute:230")
        + f"{E}gget.info(ids)\n"
        + log("10:00:01", "WARNING", "Instance 42: Context (32768 tokens) exceeded max_prompt_len (31232). Stopping agent.")
        # Inside a message dump: not counted (docs/formats.md: it miscounts).
        + log("10:00:02", "INFO", "messages: [{'role': 'user', 'content': '[runtime-error] Code execution timed out after 1 attempts'}]")
    )
    kinds = [n.kind for n in of_type(skyrl_events_of(text), Notice)]
    assert kinds == ["tool_timeout", "context_overflow"]


@pytest.mark.parametrize(
    "exc",
    [
        "TypeError: query_opentarget_genetics() got an unexpected keyword argument 'max_results'",
        "KeyError: 'Disease'",
        "SyntaxError: unterminated string literal (detected at line 1)",
    ],
)
def test_agent_tracebacks_are_model_behaviour_not_infrastructure(exc):
    text = (
        log("10:00:00", "INFO", "Observation:", "skyrl_agent.agents.react:step:150")
        + f"{E}Traceback (most recent call last):\n"
        + f'{E}  File "<string>", line 3, in <module>\n'
        + f"{E}{exc}\n"
    )
    events = skyrl_events_of(text)
    assert [e.kind for e in of_type(events, AgentError)] == [exc.split(":")[0]]
    assert not [n for n in of_type(events, Notice) if n.level == "ERROR"]


def test_checkpoint_and_resume_lines():
    text = (
        log("12:00:00", "INFO", "Saved trainer state to /mnt/ckpts/run1/global_step_4/trainer_state.pt")
        + log("12:00:01", "INFO", "Successfully saved checkpoint for global_step_4 to: /mnt/ckpts/run1/global_step_4")
        + log("13:00:00", "INFO", "Loading checkpoint from: /mnt/ckpts/run1/global_step_4")
        + log("13:00:01", "INFO", "Resuming from global_step: 4")
    )
    events = skyrl_events_of(text)
    assert of_type(events, CheckpointSave)[0].step == 4
    assert {d.path for d in of_type(events, CheckpointDir)} == {"/mnt/ckpts/run1"}
    assert of_type(events, Resumed)[0].step == 4
    assert of_type(events, AttemptStart)[0].number is None


def test_autoretry_wrapper_attempts_and_exit_codes():
    text = "[2026-02-19 16:44:02] Training exited with code 1 after 27115s\n[2026-02-19 16:44:02] Attempt #2 (Total restarts: 1)\n"
    events = skyrl_events_of(text)
    exit_notice = of_type(events, Notice)[0]
    assert exit_notice.kind == "exit code 1" and exit_notice.fatal and exit_notice.time == "16:44:02"
    assert of_type(events, AttemptStart)[0].number == 2


def test_infra_log_is_named():
    events = skyrl_events_of(log("09:08:50", "INFO", "Infrastructure logs will be written to: /tmp/skyrl-logs/infra-260219_090850.log"))
    assert of_type(events, ExtraLog)[0].path == "/tmp/skyrl-logs/infra-260219_090850.log"


def test_vllm_stat_lines_in_the_infra_log():
    events = skyrl_events_of(
        "(AsyncVLLMInferenceEngine pid=67540) INFO 02-19 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 912.0 tokens/s, "
        "Avg generation throughput: 2210.5 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, Prefix cache hit rate: 61.0%\n"
    )
    assert of_type(events, VllmStats)[0].running == 3


CRASHES = [
    ("SIGBUS", "(MegatronPolicyWorkerBase pid=67012) *** SIGBUS received at time=1771519380 on cpu 42 ***\n(MegatronPolicyWorkerBase pid=67012) Fatal Python error: Bus error\n"),
    ("SIGBUS", log("16:43:00", "INFO", "Started: 'save_checkpoints'") + f"{E}Fatal Python error: Bus error\n"),
    ("WorkerDied", "\x1b[36m(raylet)\x1b[0m A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker.\n"),
    ("NoSpaceLeft", log("20:45:00", "ERROR", "AsyncCallsQueue failed: OSError: [Errno 28] No space left on device")),
    ("OSError", log("20:45:00", "ERROR", "Exception in AsyncCallsQueue(persistent=True)") + f"{E}Traceback (most recent call last):\n{E}  File \"x.py\", line 1, in f\n{E}OSError: [Errno 28] No space left on device\n"),
    ("NCCLTimeout", "(MegatronPolicyWorkerBase pid=1) [rank3]:[E219 10:00:00.000] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n"),
    ("torch.OutOfMemoryError", log("10:00:00", "ERROR", "policy_train failed") + f"{E}Traceback (most recent call last):\n{E}  File \"x.py\", line 1, in f\n{E}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB.\n"),
]


@pytest.mark.parametrize("kind,text", CRASHES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CRASHES)])
def test_crash_signatures(kind, text):
    errs = [n for n in of_type(skyrl_events_of(text), Notice) if n.level in ("ERROR", "CRITICAL")]
    assert errs and errs[0].kind == kind and errs[0].fatal


# ---- checkpoint completeness ------------------------------------------------------
SHARDS = {"policy/__0_0.distcp": 3 << 30, "policy/__1_0.distcp": 3 << 30, "policy/common.pt": 421 << 10, "policy/metadata.json": 120, "policy/.metadata": 2048}


def test_complete_megatron_checkpoint():
    files = {**SHARDS, "data.pt": 8 << 20, "trainer_state.pt": 4096}
    assert judge_skyrl(4, files, latest=4).complete
    assert judge_skyrl(4, files, latest=6).complete


def test_common_pt_alone_is_a_failed_save_even_if_named():
    files = {"policy/common.pt": 421 << 10, "policy/metadata.json": 120, "trainer_state.pt": 4096}
    v = judge_skyrl(4, files, latest=4)
    assert not v.complete and "common.pt" in v.reason and "421 KB" in v.reason


def test_save_not_named_by_the_txt_is_incomplete():
    files = {**SHARDS, "data.pt": 1, "trainer_state.pt": 1}
    assert "says 2" in judge_skyrl(4, files, latest=2).reason
    assert "missing" in judge_skyrl(4, files, latest=None).reason


def test_fsdp_checkpoint():
    files = {"policy/model_world_size_8_rank_0.pt": 1 << 30, "policy/optim_world_size_8_rank_0.pt": 2 << 30, "trainer_state.pt": 1}
    assert judge_skyrl(2, files, latest=2).complete



# The exact form the prefilter had: a number, or a string holding one, right after a colon.
_EXACT_NUMERIC_VALUE = r":\s*[\"'(]?\s*[-+]?(?:[0-9]|\.[0-9]|nan|inf)"


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.sampled_from([":", " ", "\t", "'", '"', "(", "+", "-", "0", ".", ".5", "nan", "Inf", "x"]), max_size=12).map("".join))
def test_the_dict_prefilter_passes_all_the_exact_form_passes(text):
    """The cheaper prefilter (one class between colon and number) is a superset of
    the exact form: it may parse a dict for nothing, never skip one with a number."""
    import re

    from runtop.parsers.skyrl_numbers import NUMERIC_VALUE_RE

    if re.search(_EXACT_NUMERIC_VALUE, text, re.ASCII | re.I):
        assert NUMERIC_VALUE_RE.search(text)

