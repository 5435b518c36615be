"""A genuine TRL GRPO training that runs on a CPU in about a second a step: a 2-layer Llama
with hidden size 32 built from a config, a word-level tokenizer built in code (no model hub),
a reward function, one logged dict a step and a checkpoint every two steps.

Launched as users launch TRL, with its console redirected:

    python tests/real/train_grpo.py --output_dir runs/grpo > runs/grpo/train.log 2>&1
    python tests/real/train_grpo.py --output_dir runs/grpo --resume_from_checkpoint runs/grpo/checkpoint-4

RUNTOP_REAL_REWARD_RAISES_AT=k makes the reward function raise while scoring step k's
completions (a reward server gone, as a user's reward function would die);
RUNTOP_REAL_REWARD_SECONDS=s makes scoring take s seconds a step (a slow reward server; the
run stays alive long enough to be watched, its time spent inside the step as a real one's is). The tests in tests/real/ launch it in a tmux pane with runtop watching.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing comes from a model hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

WORDS = ["yes", "no", "maybe", "red", "green", "blue", "one", "two", "three", "the", "a", "cat", "dog", "sun", "moon", "tree"]
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]


def build_model(path: str) -> None:
    """The tiny policy and its tokenizer, saved where `from_pretrained` reads them (the
    reference model of the KL term is loaded from the same path)."""
    vocab = {w: i for i, w in enumerate(SPECIAL + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    LlamaForCausalLM(cfg).save_pretrained(path)
    fast.save_pretrained(path)


BRIGHT = {"yes", "red", "green", "blue", "one", "two", "three", "sun"}


def say_yes(completions: list[str], trainer_state=None, **_: object) -> list[float]:
    """The share of bright words in each completion: something a tiny model can learn to say."""
    step = trainer_state.global_step + 1 if trainer_state is not None else 0  # the step being scored
    time.sleep(float(os.environ.get("RUNTOP_REAL_REWARD_SECONDS") or 0))
    at = os.environ.get("RUNTOP_REAL_REWARD_RAISES_AT")
    if at and step == int(at):
        raise ConnectionError("reward server unreachable: connection refused")
    return [sum(w in BRIGHT for w in c.split()) / max(1, len(c.split())) for c in completions]


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output_dir", required=True)
    ap.add_argument("--max_steps", type=int, default=6)
    ap.add_argument("--save_steps", type=int, default=2)
    ap.add_argument("--resume_from_checkpoint", default=None)
    ap.add_argument("--model_dir", default=None, help="where the tiny model is built (default: OUTPUT_DIR/tiny-llama)")
    a = ap.parse_args(argv)
    model_dir = a.model_dir or os.path.join(a.output_dir, "tiny-llama")
    if not os.path.isfile(os.path.join(model_dir, "config.json")):
        build_model(model_dir)
    torch.set_num_threads(1)  # a shared CPU: one thread is as fast at this size
    prompts = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(4)) for i in range(64)]
    cfg = GRPOConfig(
        output_dir=a.output_dir, max_steps=a.max_steps, save_steps=a.save_steps, save_strategy="steps", logging_steps=1,
        report_to=[], per_device_train_batch_size=16, num_generations=4, max_completion_length=8, learning_rate=1e-3,
        beta=0.04, use_cpu=True, seed=0, dataloader_num_workers=0, temperature=1.0,
    )
    trainer = GRPOTrainer(model=model_dir, reward_funcs=say_yes, args=cfg, train_dataset=Dataset.from_dict({"prompt": prompts}))
    trainer.train(resume_from_checkpoint=a.resume_from_checkpoint)


if __name__ == "__main__":
    main(sys.argv[1:])
