"""How many corpus cases runtop reads as an expert would: verdict, cause words, framework and
step values (the corpus test's own judge, `tests/corpus_judge.py`), by framework and for the
held-out part, beside a baseline reader measured in the same run.

    python benchmarks/corpus_score.py [--part corpus|held-out] [--verbose]

The baseline is what an hourly `grep` babysitter sees: a case is "Down" when the last 200 lines
of its logs hold `Traceback`, `Error` or `error` (the usual alias), "Finished" when they hold
`finished`/`completed`, else "Healthy" — verdict only, no cause, no framework, no steps, so
it is scored on the verdict alone (a generous baseline).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.corpus_judge import cases, judge, tomllib  # noqa: E402

GREP_DEATH = re.compile(r"Traceback|Error|error")
GREP_END = re.compile(r"finished|completed", re.I)


def grep_verdict(case: Path) -> str:
    exp = tomllib.loads((case / "expected.toml").read_text())
    target = case / "run" / exp.get("path", ".")
    files = [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".txt", ".err")]
    tail: list[str] = []
    for f in files:
        try:
            tail += f.read_text(errors="replace").splitlines()[-200:]
        except OSError:
            continue
    text = "\n".join(tail)
    if GREP_DEATH.search(text):
        return "Down"
    if GREP_END.search(text):
        return "Finished"
    return "Healthy"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("corpus", "held-out"), default=None, help="score one part alone (default: both)")
    ap.add_argument("--verbose", action="store_true", help="print each case's problems")
    args = ap.parse_args()
    parts = [(name, found) for name, found in (("corpus", cases()), ("held-out", cases(holdout=True))) if args.part in (None, name)]
    t0 = time.monotonic()
    total_ok = total = grep_ok = 0
    for part, found in parts:
        by_fw: dict[str, list[bool]] = defaultdict(list)
        part_grep = 0
        for case in found:
            got = judge(case)
            want = tomllib.loads((case / "expected.toml").read_text())["verdict"]
            g = grep_verdict(case) == want
            part_grep += g
            by_fw[got.framework].append(got.ok)
            if args.verbose or not got.ok:
                mark = "ok  " if got.ok else "MISS"
                print(f"  {mark} {part}/{got.case}: {got.first_line[:150]}")
                for p in got.problems:
                    print(f"         - {p}")
        ok = sum(sum(v) for v in by_fw.values())
        n = sum(len(v) for v in by_fw.values())
        total_ok, total, grep_ok = total_ok + ok, total + n, grep_ok + part_grep
        print(f"{part}: {ok}/{n} read right (grep baseline, verdict only: {part_grep}/{n})")
        for fw in sorted(by_fw):
            v = by_fw[fw]
            print(f"  {fw:<10} {sum(v)}/{len(v)}")
    print(f"all: {total_ok}/{total} read right; grep baseline {grep_ok}/{total} verdicts ({time.monotonic() - t0:.1f} s)")
    return 0 if total_ok == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
