"""Backfill speed and memory: runtop over big realistic logs, beside `grep -c`, in one run.

    python benchmarks/backfill.py [--size-mb 1024] [--framework all|KIND] [--load 2] [--dir DIR] [--keep]

Writes, for each log kind, a run whose one big log is SIZE MB (`benchmarks/backfill_logs.py`):
- prime-rl: orchestrator.log of colour-coded lines in the mix a long run writes (batch
  progress, a step line every 40 lines, warnings, a traceback now and then): 197k steps a
  GB, the stress case (68 days at 30 s a step);
- prime-rl-week: the same lines with a step every 250: the 32k steps a week-old run at
  19 s a step (faster than any run in docs/incidents.md) has when its log reaches 1 GB;
- prime-rl-noisy: an orchestrator's real noise between two steps (~170 tqdm redraws on one
  line, ~250 ANSI-coloured INFO lines, half of them not progress): 24k steps a GB;
- quiet: a step every 2000 (the noise floor: progress lines the bulk pass drops in C);
- skyrl: a SkyRL driver log (Ray-prefixed loguru lines, agent transcript dumps, metric
  dicts, glued tqdm frames), step blocks in the shapes of tests/corpus/skyrl-*, 40
  transcript lines a step (98k steps a GB, the stress case);
- skyrl-week: 240 transcript lines a step (20k steps a GB: a week at 30 s a step);
- vllm: a prime-rl run whose inference.log is vLLM's (an access line per request, a stat
  line every 10 s, a warning now and then);
- verl-week: a verl driver log (~100 metrics a step line, the async vLLM servers' access and
  stat lines under their Ray prefix, math-verify's timeouts): 9k steps a GB;
- trl-week: a TRL GRPOTrainer console (bar frames with vLLM's lines glued behind, the logged
  dict, the rich table of completions `log_completions` prints): 40k steps a GB.
Then, in one run, on the same file: `grep -c` of the step (or stat) lines (the baseline),
runtop's full backfill (`runtop check --full`), the ratio, peak RSS, and the time to
the first answer (`runtop status --json`: each long log's last 8 MB, said), alone and again
beside `--load` busy loops (`yes > /dev/null`, started and ended here by their PIDs).
The children run with Python's bytecode cache on (in a temp dir), as an installed runtop
has it: a sandbox's PYTHONDONTWRITEBYTECODE would add ~0.1 s of compiling to every figure.
The scan stage's backend is the one runtop picks (`RUNTOP_SCAN=hyperscan|grep|re|off` names one:
run once per backend to compare them on the same logs); it is printed with the figures.
Goals: full backfill <= 5x grep -c on every week-old log, <= 12x on the dense ones; peak RSS
<= 120 MB on every log; first status <= 1 s at a load of 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after site-packages: the installed runtop first

from benchmarks.backfill_logs import (  # noqa: E402 - re-exported: other benchmarks and tests write the same logs
    generate,
    generate_noisy,
    generate_quiet,
    generate_skyrl,
    generate_skyrl_week,
    generate_trl,
    generate_verl,
    generate_vllm,
    generate_week,
    kind_of,
    line,
)

__all__ = ["generate", "kind_of", "line"]


def run_child(cmd: list[str], ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 gives this child's own rusage (peak RSS), unlike RUSAGE_CHILDREN's running max
    out_chunks = []
    while True:
        chunk = proc.stdout.read(1 << 16)
        if not chunk:
            break
        out_chunks.append(chunk)
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in ok:  # grep -c exits 1 on no match; check 0-4 by verdict
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss / 1024, b"".join(out_chunks).decode(errors="replace")


KINDS = {
    # kind: (generator, grep pattern, where the last step is in the status JSON, week-old or dense)
    "prime-rl": (generate, "SUCCESS", "rollout_step", "dense"),
    "prime-rl-week": (generate_week, "SUCCESS", "rollout_step", "week"),
    "prime-rl-noisy": (generate_noisy, "SUCCESS", "rollout_step", "week"),
    "quiet": (generate_quiet, "SUCCESS", "rollout_step", "week"),
    "skyrl": (generate_skyrl, "Finished: 'step'", "trainer_step", "dense"),
    "skyrl-week": (generate_skyrl_week, "Finished: 'step'", "trainer_step", "week"),
    "vllm": (generate_vllm, "Avg prompt throughput", None, "week"),
    "verl-week": (generate_verl, " step:", "trainer_step", "week"),
    "trl-week": (generate_trl, "{'loss'", "trainer_step", "week"),
}
# The goals, by kind of log: full backfill / grep -c.
GOAL = {"week": 5.0, "dense": 12.0}
GOAL_RSS_MB = 120.0
GOAL_FIRST_S = 1.0


def grep_pass(root: str, path: str) -> float | None:
    """runtop's own bulk pass over `path` (the grep backend of the scan stage: `BulkGrep`'s drop
    grep and the rescue grep beside it, or for an orchestrator `GatedGrep`'s pipe, their kept
    lines taken chunk by chunk), timed alone: with the start-up, the floor of this
    design however fast the Python after it. None where runtop makes no bulk pass: the plug-in
    names no noise for this log, or grep keeps most of a chunk and the tailer reads on in Python."""
    from runtop.engine.reader import MAX_LINE
    from runtop.engine.snapshot import CHUNK
    from runtop.frameworks import get
    from runtop.frameworks.discovery import discover
    from runtop.sources.bulk_grep import WORTH_IT, last_line_end
    from runtop.sources.scan import open_scan

    layout = discover(root)
    tracked = next(t for t in layout.logs if os.path.samefile(t.path, path))
    noise = get(layout.framework).bulk_noise(tracked)
    if noise is None:
        return None
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        end = last_line_end(fd, 0, st.st_size)
        bulk = open_scan("grep", path, (st.st_dev, st.st_ino), 0, end, noise, MAX_LINE["log"])
        pos = 0
        try:
            while pos < end:
                start, pos = pos, min(pos + CHUNK, end)
                taken = bulk.take(pos)
                if taken is None:
                    raise SystemExit(f"grep failed on {path}")
                if sum(len(line) + 1 for _, line in taken[0]) > (pos - start) * WORTH_IT:
                    return None  # as FileTailer._bulk_read: the rest is read in Python
        finally:
            bulk.close()
    finally:
        os.close(fd)
    return time.perf_counter() - t0


class Burners:
    """`n` busy loops (`yes > /dev/null`) for the time of a `with`: the load a first status is held
    to (a load of 2 on two cores). Started and ended by their own PIDs."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Burners:
        self.procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(self.n)]
        time.sleep(0.5)  # the scheduler sees them busy before anything is timed
        return self

    def __exit__(self, *_exc: object) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def first_status(root: str) -> tuple[float, str]:
    """The best of two `runtop status --json`: the bounded first answer (each long log's last 8 MB)."""
    runs = [run_child([sys.executable, "-m", "runtop", "status", "--json", root]) for _ in range(2)]
    best = min(runs, key=lambda r: r[0])
    return best[0], best[2]


def measure(kind: str, base: str, size_mb: int, load: int) -> tuple[str, float, float, float, float, float, float, float | None, str]:
    """One log kind. The children write to files and nothing big is parsed here between them:
    a forked child's peak RSS starts at this process's (Linux counts the parent's pages the
    vfork shares), so a parent holding a 200k-step JSON would inflate every figure after it."""
    _make, pattern, step_key, _age = KINDS[kind]
    root = os.path.join(base, f"bench-{kind}")
    # Written by a child: this process stays small (see above), whatever the writing costs.
    path = subprocess.run([sys.executable, os.path.abspath(__file__), "--generate", kind, root, str(size_mb << 20)],
                          check=True, capture_output=True, text=True).stdout.strip()
    mb = os.path.getsize(path) / (1 << 20)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache for both sides
    g_s, _g_rss, g_out = run_child(["grep", "-c", pattern, path])
    # Timed in a child: importing runtop here would grow this process, and every child's peak RSS with it.
    p_out = subprocess.run([sys.executable, os.path.abspath(__file__), "--grep-pass", root, path], check=True, capture_output=True, text=True).stdout
    p_s = None if p_out.strip() == "-" else float(p_out)
    # The full backfill: `check --full` reads every byte and judges (no 200k-step JSON to print).
    r_s, r_rss, _ = run_child([sys.executable, "-m", "runtop", "check", "--full", root], ok=(0, 1, 2, 4))
    f_s, f_out = first_status(root)
    with Burners(load):
        l_s, _ = first_status(root)
    first = json.loads(f_out)
    seen = f"step {first['progress'][step_key]}" if step_key else f"vLLM running {(first.get('vllm') or {}).get('running')}"
    shutil.rmtree(root, ignore_errors=True)
    return kind, mb, g_s, r_s, r_rss, f_s, l_s, p_s, f"grep {g_out.strip()}, first status: {first['health']['verdict']}, {seen}"


def startup_floor(base: str) -> float:
    """The best of three `runtop check` on a run of one line: what any figure above pays first."""
    logs = os.path.join(base, "floor", "logs")
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, "orchestrator.log"), "w", encoding="utf-8") as f:
        f.write(line(0, 1, 0))
    return min(run_child([sys.executable, "-m", "runtop", "check", os.path.dirname(logs)], ok=(0, 1, 2, 3, 4))[0] for _ in range(3))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":
        print(KINDS[sys.argv[2]][0](sys.argv[3], int(sys.argv[4])))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--grep-pass":
        p_s = grep_pass(sys.argv[2], sys.argv[3])
        print("-" if p_s is None else f"{p_s:.4f}")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--framework", choices=("all", *KINDS), default="all", help="one log kind (default: every one)")
    ap.add_argument("--load", type=int, default=2, help="busy loops beside the second first status (default 2: a load of 2)")
    ap.add_argument("--dir", default=None, help="where to write the runs (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the base dir")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="runtop-bench-")
    # Every child inherits this: bytecode cached as an installed runtop has it, outside the tree.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(base, "pycache")
    try:
        floor = startup_floor(base)  # first: its first run writes the cache the others use
        kinds = list(KINDS) if args.framework == "all" else [args.framework]
        load_before = os.getloadavg()[0]
        rows = [measure(k, base, args.size_mb, args.load) for k in kinds]
        print(f"{'log':15}{'MB':>6}{'grep -c s':>10}{'runtop full s':>14}{'ratio':>8}{'goal':>6}{'peak RSS MB':>12}{'first s':>9}"
              f"{f'at +{args.load}':>8}{'grep pass s':>12}{'floor':>7}  check")
        for kind, mb, g_s, r_s, r_rss, f_s, l_s, p_s, note in rows:
            floor_x = f"{(floor + p_s) / g_s:6.1f}x" if p_s is not None else f"{'-':>7}"
            p_text = f"{p_s:12.2f}" if p_s is not None else f"{'-':>12}"
            goal = GOAL[KINDS[kind][3]]
            met = "" if r_s / g_s <= goal and r_rss <= GOAL_RSS_MB and l_s <= GOAL_FIRST_S else "  (goal not met)"
            print(f"{kind:15}{mb:6.0f}{g_s:10.2f}{r_s:14.2f}{r_s / g_s:7.1f}x{goal:5.0f}x{r_rss:12.1f}{f_s:9.2f}{l_s:8.2f}{p_text}{floor_x}  {note}{met}")
        from runtop.parsers.skim import PROGRESS_NOISE, TRANSCRIPT_NOISE
        from runtop.sources.scan import backend

        print(f"scan backend: {backend(PROGRESS_NOISE)} for markers, {backend(TRANSCRIPT_NOISE)} for shapes (RUNTOP_SCAN={os.environ.get('RUNTOP_SCAN', '')!r})")
        print(f"start-up floor: runtop check on a one-line run {floor:.2f} s (the interpreter and imports, in every figure above)")
        print(f"load: {load_before:.2f} (1 min) before the first log; 'at +{args.load}': the first status again beside {args.load} busy loops")
        print("grep pass: runtop's own grep children over the log, alone; floor: (start-up + grep pass) / grep -c, the ratio no\n"
              "  Python after them can beat; '-': no grep pass (the plug-in names no noise, or Python scans the log in-process)")
        print(f"goals: full backfill <= {GOAL['week']:.0f}x grep -c on week-old logs, <= {GOAL['dense']:.0f}x on dense ones; "
              f"<= {GOAL_RSS_MB:.0f} MB RSS; first status <= {GOAL_FIRST_S:.0f} s at a load of 2")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
