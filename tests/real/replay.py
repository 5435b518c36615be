"""Replay the recorded real TRL run (tests/corpus/trl-real-cpu-grpo-reward-raises-at-step-5)
into a directory, at the pace it ran, for runtop to follow live: no torch, no TRL needed.

    python tests/real/replay.py /tmp/grpo-replay &     # then, while it writes:
    runtop /tmp/grpo-replay

The console is written as TRL wrote it, one logged step at a time (each dict after its bar
frame), and each `checkpoint-N` appears whole after the step that saved it, as TRL saves after
logging; the run ends on the reward function's ConnectionError and tqdm's last frame.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

CASE = Path(__file__).resolve().parent.parent / "corpus" / "trl-real-cpu-grpo-reward-raises-at-step-5" / "run"


def segments(text: str) -> list[str]:
    """The console cut after each logged step's dict (the next step's bar frame and warnings
    go with the next piece)."""
    out, cur = [], []
    for line in text.splitlines(keepends=True):
        cur.append(line)
        if "{'loss': " in line:
            out.append("".join(cur))
            cur = []
    return [*out, "".join(cur)]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the directory to write the run into (must not exist)")
    ap.add_argument("--step-seconds", type=float, default=2.0, help="seconds between two logged steps (default 2)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if out.exists():
        print(f"replay: {out} exists: give a new directory", file=sys.stderr)
        return 2
    out.mkdir(parents=True)
    shutil.copytree(CASE / "tiny-llama", out / "tiny-llama")
    shutil.copy2(CASE / "README.md", out / "README.md")
    with open(out / "train.log", "w", encoding="utf-8") as log:
        for step, piece in enumerate(segments((CASE / "train.log").read_text(encoding="utf-8")), 1):
            log.write(piece)
            log.flush()
            saved = CASE / f"checkpoint-{step}"
            if saved.is_dir():
                # Written aside and moved in whole: runtop never sees a half-copied save it would call interrupted.
                shutil.copytree(saved, out / f".checkpoint-{step}")
                os.rename(out / f".checkpoint-{step}", out / f"checkpoint-{step}")
            time.sleep(a.step_seconds)
    print(f"replay: {out} written (the run died of its reward function in step 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
