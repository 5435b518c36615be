"""Where prime-rl keeps its files, in each of its layout generations (docs/formats.md): attempts,
role logs, rank and env-server logs, rollouts, configs, checkpoints, and the signs that say a
directory is a prime-rl run."""

from __future__ import annotations

import glob
import os
import re

from runtop.frameworks.evidence import sign
from runtop.frameworks.layout import (
    RunLayout,
    Tracked,
    _isdir,
    _isfile,
    _step_of,
)
from runtop.sources.regular import exists_as_other, open_text

NAME = "prime-rl"  # the plug-in's name (PrimeRL.name), what a layout says it is
_ATTEMPT_RE = re.compile(r"attempt_(\d{1,12})\Z", re.ASCII)
ROLE_OF_LOG = {"orchestrator.log": "orchestrator", "trainer.log": "trainer", "inference.log": "inference"}
# How many recent steps' rollout files are read: they can be GBs each (docs/formats.md).
ROLLOUT_STEPS = 3
RUN_NAME_RE = re.compile(r"^[\w.][\w.\-]*$", re.ASCII)  # never a flag: `--resume` is no run name
OLD_LAYOUTS = ("v0.5-v0.6", "v0.7-v0.8", "v0.5-v0.8")


def _attempt_dirs(logs: str) -> list[tuple[int, str]]:
    out = []
    try:
        names = os.listdir(logs)
    except OSError:
        return []
    for name in names:
        m = _ATTEMPT_RE.match(name)
        if m and os.path.isdir(os.path.join(logs, name)):
            out.append((int(m.group(1)), os.path.join(logs, name)))
    return sorted(out)


def _latest_attempt(logs: str) -> tuple[int, str] | None:
    """`logs/latest` → its attempt; a plain file naming the attempt (a copied run) works too."""
    latest = os.path.join(logs, "latest")
    target = None
    if os.path.islink(latest):
        target = os.path.realpath(latest)
    elif os.path.isfile(latest):
        try:
            with open_text(latest) as f:
                name = f.read(256).strip()
        except OSError:
            name = ""
        if _ATTEMPT_RE.match(os.path.basename(name)):
            target = os.path.join(logs, os.path.basename(name))
    if target and os.path.isdir(target):
        m = _ATTEMPT_RE.match(os.path.basename(target))
        if m:
            return int(m.group(1)), target
    attempts = _attempt_dirs(logs)
    return attempts[-1] if attempts else None


def _looks_like_primerl_run(path: str) -> bool:
    logs = os.path.join(path, "logs")
    return (
        _isdir(logs)
        and (
            bool(_attempt_dirs(logs))
            or os.path.lexists(os.path.join(logs, "latest"))
            or any(_isfile(logs, n) for n in ROLE_OF_LOG)
        )
    ) or _isfile(path, "metrics.jsonl") or _isdir(path, "monitors", "file") or _v06_partial(path)


def _v06_partial(path: str) -> bool:
    """A v0.6 run dir copied or synced without its role logs: only `run_default/rollouts/…`
    and env-server logs (refused as "nothing runtop recognises" before)."""
    return bool(glob.glob(os.path.join(path, "run_default", "rollouts", "step_*", "train_rollouts.jsonl"))) or bool(
        glob.glob(os.path.join(path, "logs", "envs", "*", "*", "env_server.log"))
    )


def _newest_mtime(path: str) -> float:
    best = 0.0
    for pattern in ("logs/*.log", "logs/*/*.log", "metrics.jsonl", "monitors/file/*.jsonl"):
        for f in glob.glob(os.path.join(path, pattern)):
            try:
                best = max(best, os.path.getmtime(f))
            except OSError:
                continue
    return best


def _env_logs(base: str) -> list[Tracked]:
    out = []
    for split in ("train", "eval"):
        # v0.7+ and main: envs/{split}/<env>.log; v0.5–v0.6: envs/{split}/<env>/env_server.log, env_worker_<i>.log
        for f in sorted(glob.glob(os.path.join(base, "envs", split, "*.log"))):
            out.append(Tracked(f, "env", "log"))
        for f in sorted(glob.glob(os.path.join(base, "envs", split, "*", "*.log"))):
            out.append(Tracked(f, "env", "log"))
    return out


def _role_logs(base: str) -> list[Tracked]:
    """Each role's log; on a multi-node run every node's (`trainer/node_2.log`,
    `inference/node_0_rank1.log`: docs/formats.md), where `trainer.log` is only node 0's link."""
    out: list[Tracked] = []
    for name, role in ROLE_OF_LOG.items():
        nodes = sorted(glob.glob(os.path.join(base, role, "node_*.log")), key=_node_order)
        if nodes:
            out.extend(Tracked(f, role, "log") for f in nodes)
        elif _isfile(base, name) or exists_as_other(os.path.join(base, name)):
            # A FIFO, a directory or a device there is followed too: the tailer says it is
            # unreadable, where skipping it hid the role's death (docs/reading.md).
            out.append(Tracked(os.path.join(base, name), role, "log"))
    out.extend(_rank_logs(base))
    return out


MAX_RANK_LOGS = 32


def _rank_logs(base: str) -> list[Tracked]:
    """torchrun's own per-rank files (`trainer/torchrun/<rdzv>/attempt_0/<rank>/{stdout,stderr}.log`):
    a rank that dies alone writes its traceback only there, while trainer.log (rank 0) ends in
    torchrun's summary. Every rank's stderr, and stdout of the ranks other than 0 (whose stdout
    trainer.log already is), of the newest torchrun attempt."""
    attempts = glob.glob(os.path.join(base, "trainer", "torchrun", "*", "attempt_*"))
    if not attempts:
        return []
    newest = max(attempts, key=_newest_mtime)
    out: list[Tracked] = []
    for rank_dir in sorted(glob.glob(os.path.join(newest, "*")), key=_node_order):
        rank = os.path.basename(rank_dir)
        for name in ("stderr.log",) if rank == "0" else ("stderr.log", "stdout.log"):
            if _isfile(rank_dir, name):
                out.append(Tracked(os.path.join(rank_dir, name), "trainer", "log"))
    return out[:MAX_RANK_LOGS]


def _node_order(path: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", os.path.basename(path)))


def _rollout_files(root: str, pattern_dirs: list[str]) -> list[Tracked]:
    found: list[Tracked] = []
    for base in pattern_dirs:
        for pat in ("step_*/train/all/traces.jsonl", "step_*/train_rollouts.jsonl"):
            for f in glob.glob(os.path.join(root, base, pat)):
                found.append(Tracked(f, "orchestrator", "rollouts", _step_of(f)))
    stream = os.path.join(root, "monitors", "file", "traces", "stream.jsonl")
    found.sort(key=lambda t: t.step or 0)
    recent = found[-ROLLOUT_STEPS:]
    if os.path.isfile(stream):
        recent.append(Tracked(stream, "orchestrator", "rollouts", None))
    return recent


def _configs(root: str) -> list[Tracked]:
    out = []
    for base in ("configs/latest", "configs", "."):
        for ext in ("json", "toml"):
            for f in sorted(glob.glob(os.path.join(root, base, f"*.{ext}"))):
                if os.path.isfile(f):
                    out.append(Tracked(f, "config", "config"))
    if not any(os.path.dirname(t.path).endswith("latest") for t in out):
        attempts = sorted(
            glob.glob(os.path.join(root, "configs", "attempt_*")),
            key=lambda p: int(m.group(1)) if (m := _ATTEMPT_RE.search(p)) else 0,
        )
        if attempts:
            out = [Tracked(f, "config", "config") for f in sorted(glob.glob(os.path.join(attempts[-1], "*.*")))] + out
    return out


def _primerl_layout(root: str) -> RunLayout:
    logs = os.path.join(root, "logs")
    newer = _isdir(root, "monitors", "file") or bool(glob.glob(os.path.join(root, "configs", "attempt_*")))
    latest = _latest_attempt(logs) if _isdir(logs) else None
    if latest is not None:
        layout = "newer (monitors/file)" if newer else "main"
        number, adir = latest
        lay = RunLayout(root, NAME, layout, attempt=number, attempt_dir=adir)
        lay.logs = _role_logs(adir) + _env_logs(adir)
        lay.earlier_attempts = [os.path.basename(d) for n, d in _attempt_dirs(logs) if n != number]
    else:
        has_v06 = bool(glob.glob(os.path.join(root, "run_default", "rollouts", "step_*", "train_rollouts.jsonl"))) or bool(
            glob.glob(os.path.join(logs, "envs", "*", "*", "env_server.log"))
        )
        has_v07 = (
            bool(glob.glob(os.path.join(root, "run_default", "rollouts", "step_*", "*", "*", "traces.jsonl")))
            or bool(glob.glob(os.path.join(logs, "envs", "*", "*.log")))
            or _isfile(root, "run_default", "metrics.jsonl")
        )
        if newer:
            layout = "newer (monitors/file)"
        elif has_v06 and not has_v07:
            layout = "v0.5-v0.6"
        elif has_v07:
            layout = "v0.7-v0.8"
        else:
            layout = "v0.5-v0.8"
        lay = RunLayout(root, NAME, layout)
        lay.logs = _role_logs(logs) + _env_logs(logs)
        if layout == "v0.5-v0.8":
            lay.notes.append("layout generation v0.5-v0.6 or v0.7-v0.8: no rollouts or env logs yet to tell them apart")
    for rel in ("monitors/file/metrics.jsonl", "metrics.jsonl", "run_default/metrics.jsonl"):
        if _isfile(root, rel):
            lay.metrics.append(Tracked(os.path.join(root, rel), "metrics", "metrics"))
            break
    lay.rollouts = _rollout_files(root, ["rollouts", "run_default/rollouts"])
    lay.configs = _configs(root)
    lay.checkpoint_roots = _checkpoint_roots(root)
    if not any(t.role != "env" for t in lay.logs) and (lay.rollouts or lay.logs) and not lay.metrics:
        have = " and ".join(w for w, ok in (("rollout files", lay.rollouts), ("env-server logs", lay.logs)) if ok)
        lay.notes.append(
            f"partial {lay.layout} run dir: {have} only, no trainer/orchestrator/inference logs "
            "(copied without logs/, or the run has not started them): rollouts and env health only"
        )
    elif not lay.logs and not lay.metrics:
        lay.notes.append("no logs or metrics.jsonl yet: the run may still be starting")
    return lay


# Its processes and modules, its step lines (plain or with a bracketed level), its batch line,
# its launch and end lines, its env servers. A timestamp with a level is everybody's (vLLM's,
# DeepSpeed's, loguru's): it is no sign, and `(APIServer pid=…)` is vLLM's, not prime-rl's.
EVIDENCE = (
    sign(r"PRIME-RL::|prime_rl[./]|prime-rl/|\bprime-rl\b|uv run (?:rl|trainer|orchestrator|inference|sft)\b", 3, "prime-rl's processes and modules"),
    sign(r"Step \d+ \|\s*\S+ \| (?:Reward|Loss) ", 3, "`Step N | … | Reward/Loss …`"),
    sign(r"\| Trainable \d+/\d+|\| Max Off-Policy \d|\| Mismatch KL ", 3, "its step-line fields"),
    sign(r"Train batch \d+/\d+ \(", 3, "`Train batch a/b (…)`"),
    sign(r"Starting orchestrator|Orchestrator finished|RL trainer finished|SFT trainer finished|Starting training loop \(max_steps=", 3, "its loop lines"),
    sign(r"rollout (?:start|done): id=|EnvServerPool", 3, "its env servers"),
    sign(r"inflight (?:episodes|rollouts)|Orchestrator paused|Updating policy in-flight", 2, "its back-pressure lines"),
    sign(r"^\[trainer\d+\]:", 2, "`[trainer0]:`", re.M),
    sign(r"^\d{2}:\d{2}:\d{2}\s+SUCCESS |^\[SUCCESS\] ", 1, "loguru's SUCCESS", re.M),
)


def _checkpoint_roots(root: str) -> list[tuple[str, str | None]]:
    """The trainer's checkpoints, and the orchestrator's where it keeps its own."""
    orch_root = os.path.join(root, "run_default", "checkpoints")
    return [(os.path.join(root, "checkpoints"), orch_root if _isdir(orch_root) else None)]


def _metrics_file(path: str) -> RunLayout | None:
    name = os.path.basename(path)
    if name == "metrics.jsonl" or name.endswith("metrics.jsonl"):
        lay = RunLayout(os.path.dirname(os.path.abspath(path)), NAME, "single-file", single_file=True)
        lay.metrics = [Tracked(path, "metrics", "metrics")]
        return lay
    return None


def _file_layout(path: str, text: str) -> RunLayout:
    name = os.path.basename(path)
    role = ROLE_OF_LOG.get(name)
    if role is None:
        if "[trainer" in text or "Loss " in text:
            role = "trainer"
        elif "(APIServer pid=" in text or "vLLM" in text:
            role = "inference"
        elif "rollout done:" in text:
            role = "env"
        else:
            role = "orchestrator"
    lay = RunLayout(os.path.dirname(os.path.abspath(path)), NAME, "single-file", single_file=True)
    lay.logs = [Tracked(os.path.abspath(path), role, "log")]
    lay.notes.append(f"single log file read as the {role}'s log")
    return lay
