"""Find what to read: which framework and layout generation a path holds, and its files.

Each framework plug-in (`runtop.frameworks`) recognises its own run directories, log
directories and files; this module asks them in turn and owns what is common: which
plug-in claims a path, the files every run has beside its own (a SLURM job's output, a vLLM
server's log, `--metrics`), and the one-line `DiscoveryError` naming what was expected (from
every plug-in's `expects`). The layout types are `runtop.frameworks.layout`'s, below the plug-ins.
"""

from __future__ import annotations

import os
import re

from runtop.frameworks import REGISTRY, all_frameworks, get
from runtop.frameworks.base import Framework
from runtop.frameworks.evidence import best
from runtop.frameworks.generic import GENERIC, text_logs
from runtop.frameworks.layout import JOB as JOB
from runtop.frameworks.layout import DiscoveryError as DiscoveryError
from runtop.frameworks.layout import RunLayout as RunLayout
from runtop.frameworks.layout import Tracked as Tracked
from runtop.frameworks.layout import resolve as resolve
from runtop.frameworks.layout import sniff


def expected() -> str:
    """The hint under a path runtop cannot read, one short line: the plug-ins by name (their
    descriptions of their files, each its `expects`, made a line of 450 characters)."""
    names = ", ".join(fw.name for fw in all_frameworks() if fw.expects)
    return f"give a run dir or a driver log ({names}), a directory of runs, or any text log"


# Bytes no text log holds: a file with them in its head is binary (a checkpoint shard, a core).
_BINARY = ("\x00",)


def _is_text(text: str) -> bool:
    head = text[:8192]
    return not any(b in head for b in _BINARY) and head.count("\ufffd") <= len(head) // 10


def detect(text: str) -> tuple[Framework | None, str, int]:
    """The framework whose evidence in `text` (a log's head and tail) is strongest, why, and its
    points; (None, why, 0) when no plug-in's evidence decides (docs/reading.md, "Detection")."""
    scores = [fw.claims(text) for fw in all_frameworks()]
    chosen = best(scores)
    if chosen is None:
        weak = max(scores, key=lambda s: s.points)
        seen = f" (only weak signs: {weak.reason()})" if weak.points else ""
        return None, f"framework not recognised: read generically{seen}", 0
    return get(chosen.framework), chosen.reason(), chosen.points


def _single_file(path: str, forced: Framework | None = None) -> RunLayout:
    text = sniff(path)
    if not text.strip():
        raise DiscoveryError(f"{path} is empty", expected())
    if not _is_text(text):
        raise DiscoveryError(f"{path} is not a text log (binary data)", expected())
    if forced is not None:
        lay = forced.structured_file(path, text) or forced.file_layout(path, text)
        lay.detection = f"{forced.name}: given with --framework"
        return lay
    for plug in all_frameworks():
        structured = plug.structured_file(path, text)  # a metrics file known by its name or rows
        if structured is not None:
            structured.detection = structured.detection or f"{plug.name}: its metrics file"
            return structured
    fw, why, _ = detect(text)
    lay = (fw or GENERIC).file_layout(path, text)
    lay.detection = why
    return lay


def discover(path: str, framework: str | None = None, *, generic: bool = True) -> RunLayout:
    """The layout of `path`, or `DiscoveryError` with a one-line reason. `framework` names the
    plug-in to read it with (`--framework`); `generic=False` refuses what only the generic
    reader would read (the runs table looking for runs among directories)."""
    forced = None
    if framework is not None:
        forced = REGISTRY.get(framework)
        if forced is None:
            raise DiscoveryError(f"--framework {framework}: not one runtop knows ({', '.join(REGISTRY)})")
    if not os.path.exists(path):
        raise DiscoveryError(f"no such file or directory: {path}", expected())
    path = os.path.abspath(path)
    if os.path.isfile(path):
        lay = _single_file(path, forced)
        if not generic and get(lay.framework) is GENERIC:
            raise DiscoveryError(f"no framework's signs in {path}")
        lay.given = path
        return lay
    if not os.path.isdir(path):
        raise DiscoveryError(f"{path} is not a regular file or directory", expected())
    try:
        entries = os.listdir(path)
    except OSError as e:
        raise DiscoveryError(f"cannot list {path}: {e.strerror or e}") from None
    if not entries:
        raise DiscoveryError(f"{path} is empty", expected())
    lay = with_job_logs(_in_dir(path, entries, forced, generic))
    lay.given = path
    return lay


UNDECIDED = "framework not recognised"


def redetect(layout: RunLayout) -> RunLayout | None:
    """A run read generically because its logs held no framework's signs yet (runtop started
    with the launch, before the first logged step), looked at again: the layout a plug-in
    claims now, with what the user gave (`--ckpt-dir`, `[metrics]`); None while still undecided."""
    if not layout.detection.startswith(UNDECIDED) or not layout.given:
        return None
    try:
        fresh = discover(layout.given)
    except DiscoveryError:
        return None
    if fresh.detection.startswith(UNDECIDED):
        return None
    fresh.ckpt_dir = fresh.ckpt_dir or layout.ckpt_dir
    fresh.metrics_map = fresh.metrics_map or layout.metrics_map
    return fresh


def _in_dir(path: str, entries: list[str], forced: Framework | None, generic: bool) -> RunLayout:
    frameworks = [forced] if forced is not None else all_frameworks()
    for fw in frameworks:
        if fw.looks_like_run(path):
            lay = fw.run_layout(path)
            lay.detection = lay.detection or (f"{fw.name}: given with --framework" if forced else f"{fw.name}: its run directory layout")
            return lay
    for fw in frameworks:
        newest = fw.newest_run(path, entries)
        if newest is not None:
            newest.detection = newest.detection or f"{fw.name}: an output directory of its runs"
            return newest
    candidates = [os.path.join(path, e) for e in entries] + _one_level_down(path, entries)
    # The newest logs, boundedly: a directory of a thousand old logs is not sniffed whole.
    logs = text_logs(candidates)[-MAX_LOGS_SCORED:]
    # Each log's framework by its own evidence; the framework with the strongest log wins, and
    # of its logs the one with the most of its signs leads (its driver's, not a server beside it).
    claimed: dict[str, list[tuple[str, str, int]]] = {}
    servers: list[str] = []
    for log in logs:
        try:
            text = sniff(log, 16384)
        except DiscoveryError:
            continue
        if VLLM_SERVER_RE.search(text) and not os.path.basename(log).startswith(("slurm-", "job_")):
            servers.append(log)
        if forced is not None:
            claimed.setdefault(forced.name, []).append((log, f"{forced.name}: given with --framework", 0))
            continue
        named, why, points = detect(text)
        if named is not None:
            claimed.setdefault(named.name, []).append((log, why, points))
    order = sorted(claimed, key=lambda name: (-max(p for _, _, p in claimed[name]), -len(claimed[name])))

    for name in order:
        plug = forced if forced is not None else get(name)
        # The newest of its logs leads (an older one is an earlier run), never a server's beside it,
        # nor a SLURM job's output where the driver's own log is there (`<id>-logs/ray-driver.log`).
        mine = sorted(claimed[name], key=lambda c: (c[0] not in servers, not JOB_LOG_RE.match(os.path.basename(c[0])), _mtime(c[0])))
        found = plug.logs_in_dir(path, [log for log, _, _ in mine]) or _single_file(mine[-1][0], plug)
        found.detection = next((why for log, why, _ in mine if found.logs and log == found.logs[0].path), mine[-1][1])
        return with_servers(found, servers)
    for fw in frameworks:
        other = fw.logs_in_dir(path, [])  # runs known by other files than logs (verl's file-logger JSONL)
        if other is not None:
            other.detection = other.detection or f"{fw.name}: its files"
            return other
    if generic and logs:
        read = GENERIC.logs_in_dir(path, logs)
        if read is not None:
            read.detection = "framework not recognised: read generically"
            return read
    raise DiscoveryError(f"nothing runtop recognises in {path}", expected())


# Where a launch script puts its logs one directory down (`logs/`, NeMo-RL's `<job id>-logs/`,
# `outputs/`): looked into, boundedly, for the run's driver log.
MAX_SUBDIRS = 40
MAX_LOGS_SCORED = 64
MAX_SUBDIR_ENTRIES = 400


def _one_level_down(path: str, entries: list[str]) -> list[str]:
    out: list[str] = []
    subdirs = sorted(e for e in entries if not e.startswith(".") and os.path.isdir(os.path.join(path, e)))
    for name in sorted(subdirs, key=lambda e: (e != "logs", not e.endswith("logs")))[:MAX_SUBDIRS]:
        sub = os.path.join(path, name)
        try:
            names = os.listdir(sub)
        except OSError:
            continue
        if len(names) > MAX_SUBDIR_ENTRIES:
            continue  # a directory of shards or samples, not of logs
        out += [os.path.join(sub, n) for n in sorted(names)]
        if name == "logs":  # `logs/attempt_N/`, `logs/<date>/`: one more level, there only
            out += _one_level_down(sub, names)[:MAX_SUBDIR_ENTRIES]
    return out


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


# A vLLM server's own output (`trl vllm-serve`, `vllm serve`) in the run dir beside a driver log:
# its engine's death stops the run's rollouts, so it is followed as the run's inference log.
VLLM_SERVER_RE = re.compile(r"vllm\.entrypoints|vllm serve|vllm-serve|vllm_serve|Starting vLLM API server|\(EngineCore\w* pid=\d+\)", re.ASCII)


def with_servers(layout: RunLayout, servers: list[str]) -> RunLayout:
    """Follow the vLLM servers' logs beside a run whose layout leaves them out."""
    tracked = {t.path for t in layout.logs}
    if any(t.role == INFERENCE for t in layout.logs):
        return layout
    for p in servers:
        if p not in tracked:
            layout.logs.append(Tracked(p, INFERENCE, "log"))
    return layout


INFERENCE = "inference"


# A SLURM job's own output beside the run (sbatch's `slurm-<id>.out`, prime-rl's `job_<id>.log`,
# newest prime-rl's `launcher/logs/`): slurmstepd's and srun's last words are read as evidence
# of how the run ended, whatever the framework, with or without SLURM's clients here.
JOB_LOG_RE = re.compile(r"(?:job_|slurm-)\d{1,12}(?:_\d+)?\.(?:log|out|err)\Z", re.ASCII)


def with_job_logs(layout: RunLayout) -> RunLayout:
    tracked = {t.path for t in layout.logs}
    found: list[str] = []
    for base in (layout.root, os.path.join(layout.root, "launcher", "logs")):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        found += [os.path.join(base, n) for n in names if JOB_LOG_RE.match(n) and os.path.isfile(os.path.join(base, n))]
    for p in sorted(found, key=os.path.getmtime)[-2:]:
        if p not in tracked:
            layout.logs.append(Tracked(p, JOB, "log"))
    return layout


def with_ckpt_dir(layout: RunLayout, ckpt_dir: str | None) -> RunLayout:
    """Apply `--ckpt-dir`: a checkpoint dir the run dir does not lead to (SkyRL's), checked
    now so a typo fails at once."""
    if ckpt_dir is None:
        return layout
    if not get(layout.framework).takes_ckpt_dir:
        takers = ", ".join(fw.name for fw in all_frameworks() if fw.takes_ckpt_dir)
        raise DiscoveryError(
            f"--ckpt-dir is for {takers} runs; {layout.root} is a {layout.framework} run (its checkpoints are found from the run dir)"
        )
    if not os.path.isdir(ckpt_dir):
        raise DiscoveryError(f"--ckpt-dir {ckpt_dir}: no such directory")
    layout.ckpt_dir = os.path.abspath(ckpt_dir)
    return layout


CUSTOM = "custom"  # the role of a metrics file given with --metrics: read by its rows' names


def with_metrics(layout: RunLayout, paths: list[str] | None, mapping: dict[str, str] | None = None) -> RunLayout:
    """Apply `--metrics FILE`: any JSONL of `{"step": N, …}` rows, read beside the run's own
    files, its keys mapped by `mapping` onto runtop's metric names."""
    for path in paths or []:
        if not os.path.isfile(path):
            raise DiscoveryError(f"--metrics {path}: no such file")
        layout.metrics.append(Tracked(os.path.abspath(path), CUSTOM, "metrics"))
    layout.metrics_map = dict(mapping or {})
    return layout


def rescan(layout: RunLayout) -> RunLayout:
    """The same run listed again: new attempts, env logs, rollout steps, configs."""
    fresh = get(layout.framework).rescan(layout)
    fresh.detection = fresh.detection or layout.detection
    return fresh if fresh.single_file else with_job_logs(fresh)
