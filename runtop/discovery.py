"""Find what to read: which framework and layout generation a path holds, and its files.

Accepts a prime-rl run dir of any generation in FORMATS.md, an output dir holding
several runs (the newest is picked, and we say so), or a single log file. Anything
else raises `DiscoveryError` with a one-line message naming what was expected.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

EXPECTED = (
    "expected a prime-rl run directory (logs/attempt_N/, logs/latest or logs/{orchestrator,trainer}.log, "
    "metrics.jsonl), an output directory holding runs, a SkyRL driver log or a directory holding one, "
    "or a single log file"
)
ROLE_OF_LOG = {"orchestrator.log": "orchestrator", "trainer.log": "trainer", "inference.log": "inference"}
_STEP_DIR_RE = re.compile(r"step_(\d{1,12})\Z", re.ASCII)
_ATTEMPT_RE = re.compile(r"attempt_(\d{1,12})\Z", re.ASCII)
# How many recent steps' rollout files are read: they can be GBs each (FORMATS.md).
ROLLOUT_STEPS = 3


class DiscoveryError(Exception):
    """A path runtop cannot read, with a one-line reason."""


@dataclass(frozen=True)
class Tracked:
    path: str
    role: str
    kind: str  # "log", "metrics", "rollouts", "config"
    step: int | None = None
    dialect: str = "prime-rl"  # which parser reads it: "prime-rl" (also vLLM, env servers) or "skyrl"


@dataclass
class RunLayout:
    root: str
    framework: str
    layout: str
    notes: list[str] = field(default_factory=list)
    attempt: int | None = None
    attempt_dir: str | None = None
    earlier_attempts: list[str] = field(default_factory=list)
    logs: list[Tracked] = field(default_factory=list)
    metrics: list[Tracked] = field(default_factory=list)
    rollouts: list[Tracked] = field(default_factory=list)
    configs: list[Tracked] = field(default_factory=list)
    # (trainer checkpoints root, orchestrator checkpoints root or None)
    checkpoint_roots: list[tuple[str, str | None]] = field(default_factory=list)
    single_file: bool = False
    # SkyRL: the checkpoint dir given with --ckpt-dir (else the log names it).
    ckpt_dir: str | None = None

    def files(self) -> list[Tracked]:
        return [*self.configs, *self.metrics, *self.logs, *self.rollouts]


def _isdir(*parts: str) -> bool:
    return os.path.isdir(os.path.join(*parts))


def _isfile(*parts: str) -> bool:
    return os.path.isfile(os.path.join(*parts))


def _step_of(path: str) -> int | None:
    for part in reversed(path.split(os.sep)):
        m = _STEP_DIR_RE.match(part)
        if m:
            return int(m.group(1))
    return None


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
            with open(latest, encoding="utf-8", errors="replace") as f:
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
    and env-server logs (issue 12: refused as "nothing runtop recognises" before)."""
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
    return [Tracked(os.path.join(base, n), r, "log") for n, r in ROLE_OF_LOG.items() if _isfile(base, n)]


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
            key=lambda p: int(_ATTEMPT_RE.search(p).group(1)) if _ATTEMPT_RE.search(p) else 0,
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
        lay = RunLayout(root, "prime-rl", layout, attempt=number, attempt_dir=adir)
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
        lay = RunLayout(root, "prime-rl", layout)
        lay.logs = _role_logs(logs) + _env_logs(logs)
        if layout == "v0.5-v0.8":
            lay.notes.append("layout generation v0.5-v0.6 or v0.7-v0.8: no rollouts or env logs yet to tell them apart")
    for rel in ("monitors/file/metrics.jsonl", "metrics.jsonl", "run_default/metrics.jsonl"):
        if _isfile(root, rel):
            lay.metrics.append(Tracked(os.path.join(root, rel), "metrics", "metrics"))
            break
    lay.rollouts = _rollout_files(root, ["rollouts", "run_default/rollouts"])
    lay.configs = _configs(root)
    orch_root = os.path.join(root, "run_default", "checkpoints")
    lay.checkpoint_roots = [(os.path.join(root, "checkpoints"), orch_root if _isdir(orch_root) else None)]
    if not any(t.role != "env" for t in lay.logs) and (lay.rollouts or lay.logs) and not lay.metrics:
        have = " and ".join(w for w, ok in (("rollout files", lay.rollouts), ("env-server logs", lay.logs)) if ok)
        lay.notes.append(
            f"partial {lay.layout} run dir: {have} only, no trainer/orchestrator/inference logs "
            "(copied without logs/, or the run has not started them): rollouts and env health only"
        )
    elif not lay.logs and not lay.metrics:
        lay.notes.append("no logs or metrics.jsonl yet: the run may still be starting")
    return lay


def _sniff(path: str, n: int = 65536) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(n)
            size = os.fstat(f.fileno()).st_size
            if size > 2 * n:
                f.seek(size - n)
                head += b"\n" + f.read(n)
    except OSError as e:
        raise DiscoveryError(f"cannot read {path}: {e.strerror or e}") from None
    return head.decode("utf-8", "replace")


_PRIME_SIGNS = re.compile(
    r"\d{2}:\d{2}:\d{2}\S*\s+\S*\s*(?:SUCCESS|INFO|WARNING|ERROR)\S*\s|\[trainer\d+\]:|\(APIServer pid=|"
    r"Starting orchestrator|rollout (?:start|done): id=|Train batch \d+/\d+", re.ASCII
)
_SKYRL_SIGNS = re.compile(r"skyrl_train|skyrl_entrypoint|skyrl-agent|skyrl_agent|Training Batches Processed|global_step: \d", re.ASCII)


def _skyrl_layout(path: str) -> RunLayout:
    """A SkyRL driver log (`bash run_x.sh &> logs/name.log`). The infra log and the
    checkpoint dir are named inside it, so the reader adds them as it reads."""
    path = os.path.abspath(path)
    lay = RunLayout(os.path.dirname(path), "skyrl", "driver log")
    lay.logs = [Tracked(path, "trainer", "log", dialect="skyrl")]
    return lay


def _is_skyrl_log(path: str) -> bool:
    try:
        return bool(_SKYRL_SIGNS.search(_sniff(path, 16384)))
    except DiscoveryError:
        return False


def _single_file(path: str) -> RunLayout:
    text = _sniff(path)
    if not text.strip():
        raise DiscoveryError(f"{path} is empty: {EXPECTED}")
    if _SKYRL_SIGNS.search(text):
        return _skyrl_layout(path)
    name = os.path.basename(path)
    if name == "metrics.jsonl" or name.endswith("metrics.jsonl"):
        lay = RunLayout(os.path.dirname(os.path.abspath(path)), "prime-rl", "single-file", single_file=True)
        lay.metrics = [Tracked(path, "metrics", "metrics")]
        return lay
    if not _PRIME_SIGNS.search(text):
        raise DiscoveryError(f"nothing runtop recognises in {path}: {EXPECTED}")
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
    lay = RunLayout(os.path.dirname(os.path.abspath(path)), "prime-rl", "single-file", single_file=True)
    lay.logs = [Tracked(os.path.abspath(path), role, "log")]
    lay.notes.append(f"single log file read as the {role}'s log")
    return lay


def discover(path: str) -> RunLayout:
    """The layout of `path`, or `DiscoveryError` with a one-line reason."""
    if not os.path.exists(path):
        raise DiscoveryError(f"no such file or directory: {path} ({EXPECTED})")
    path = os.path.abspath(path)
    if os.path.isfile(path):
        return _single_file(path)
    if not os.path.isdir(path):
        raise DiscoveryError(f"{path} is not a regular file or directory ({EXPECTED})")
    try:
        entries = os.listdir(path)
    except OSError as e:
        raise DiscoveryError(f"cannot list {path}: {e.strerror or e}") from None
    if not entries:
        raise DiscoveryError(f"{path} is empty: {EXPECTED}")
    if _looks_like_primerl_run(path):
        return _primerl_layout(path)
    runs = [os.path.join(path, e) for e in entries if os.path.isdir(os.path.join(path, e)) and _looks_like_primerl_run(os.path.join(path, e))]
    if runs:
        runs.sort(key=_newest_mtime)
        lay = _primerl_layout(runs[-1])
        if len(runs) > 1:
            others = ", ".join(os.path.basename(r) for r in reversed(runs[:-1]))
            lay.notes.insert(0, f"{len(runs)} runs in {path}; showing the newest, {os.path.basename(runs[-1])} (others: {others})")
        return lay
    logs = [os.path.join(path, e) for e in entries if e.endswith(".log") and os.path.isfile(os.path.join(path, e))]
    sub = os.path.join(path, "logs")
    if os.path.isdir(sub):
        logs += sorted(glob.glob(os.path.join(sub, "*.log")))
    skyrl = [f for f in logs if not os.path.basename(f).startswith("infra-") and _is_skyrl_log(f)]
    if skyrl:
        skyrl.sort(key=lambda f: os.path.getmtime(f))
        lay = _skyrl_layout(skyrl[-1])
        if len(skyrl) > 1:
            others = ", ".join(os.path.basename(f) for f in reversed(skyrl[:-1]))
            lay.notes.insert(0, f"{len(skyrl)} SkyRL logs in {path}; showing the newest, {os.path.basename(skyrl[-1])} (others: {others})")
        return lay
    if len(logs) == 1:
        return _single_file(logs[0])
    raise DiscoveryError(f"nothing runtop recognises in {path}: {EXPECTED}")


def with_ckpt_dir(layout: RunLayout, ckpt_dir: str | None) -> RunLayout:
    """Apply `--ckpt-dir`: a SkyRL run's checkpoint dir, checked now so a typo fails at once."""
    if ckpt_dir is None:
        return layout
    if layout.framework != "skyrl":
        raise DiscoveryError(f"--ckpt-dir is for SkyRL runs; {layout.root} is a {layout.framework} run (its checkpoints are found from the run dir)")
    if not os.path.isdir(ckpt_dir):
        raise DiscoveryError(f"--ckpt-dir {ckpt_dir}: no such directory")
    layout.ckpt_dir = os.path.abspath(ckpt_dir)
    return layout


def rescan(layout: RunLayout) -> RunLayout:
    """The same run listed again: new attempts, env logs, rollout steps, configs."""
    if layout.single_file or layout.framework == "skyrl":
        return layout
    fresh = _primerl_layout(layout.root)
    # Keep what only the first look could know (which of several runs was picked).
    fresh.notes = [n for n in layout.notes if " runs in " in n] + fresh.notes
    return fresh
