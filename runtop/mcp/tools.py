"""What `runtop mcp`'s tools answer: plain functions over a served run's engine view, so they are
tested without the SDK (docs/mcp.md).

One schema: every answer is a JSON object naming its `run`, and otherwise the keys of
`runtop status --json` with the same meaning (README, "`runtop status --json` schema");
`processes`, `disk` and `gpus` add the probes' own readings as `runtop forensics` writes them
(`gpus.json`, `disks`). Every string passes the same boundary as the other faces (`public`:
escapes stripped, secrets hidden); NaN and infinities are null.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
import threading
import time
from typing import Any

from runtop.mcp.runs import Served
from runtop.outputs.report_json import _redact_all, step_dict, to_json
from runtop.parsers.columns import BY_NAME, METRICS
from runtop.view.view import View

MAX_ROWS = 1000  # step rows in one `metrics` answer (a 100k-step run is read in windows)
FORENSICS_WAIT_S = 90.0
FIRST_READING_S = 10.0  # the most a tool waits for a probe's first reading (a server just started)  # py-spy of every process of a big run takes seconds each


def _answer(run: Served, doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _redact_all({"run": run.name, **doc})
    return out


def status_doc(run: Served) -> dict[str, Any]:
    """`runtop status --json` of the engine's newest view, without the step rows (`metrics` has them)."""
    view = run.view()
    return to_json(view.state, view.verdict, include_steps=False)


def run_status(run: Served) -> dict[str, Any]:
    """Verdict, cause, reporter (`health.wrapper`), phase, evidence (`alerts`), next step, progress
    and the last complete checkpoint: the status JSON, with how much of the history is read."""
    view = run.view()
    doc = to_json(view.state, view.verdict, include_steps=False)
    doc["backfill"] = view.backfill  # 1.0: the whole history read (before, the verdict is the tail's)
    doc["engine_problem"] = run.problem
    return _answer(run, doc)


def list_runs(runs: list[Served], root: str | None = None) -> dict[str, Any]:
    """The fleet, most troubled first: per run its verdict, step a/b, last write and first-line cause."""
    from runtop.fleet.runs import TROUBLE

    chosen = runs
    if root:
        base = os.path.realpath(root)
        chosen = [r for r in runs if os.path.realpath(r.path) == base or os.path.realpath(r.path).startswith(base + os.sep)]
        if not chosen:
            raise LookupError(f"no run served under {root!r}: this server serves {', '.join(r.path for r in runs)}")
    now = time.time()
    rows = []
    for r in chosen:
        view = r.view()
        state, verdict = view.state, view.verdict
        writes = state.write_times()
        rows.append({
            "run": r.name, "path": state.path, "framework": state.framework, "verdict": verdict.verdict,
            "step": state.step, "max_steps": state.max_steps, "step_text": state.step_text(),
            "last_write": max(writes) if writes else None, "last_write_age_s": round(now - max(writes), 1) if writes else None,
            "cause": verdict.reasons[0] if verdict.reasons else None, "backfill": view.backfill,
        })
    rows.sort(key=lambda row: (TROUBLE.get(str(row["verdict"]), 9), str(row["run"])))
    out: dict[str, Any] = _redact_all({"runs": rows})
    return out


def findings(run: Served, since: int | str = 0) -> dict[str, Any]:
    """Incidents begun or cleared after `since`: a cursor from an earlier answer (each change is
    seen once), or a time (seconds since the epoch, or ISO 8601) for every change from then."""
    cursor, after = _since(since)
    run.view()  # the first judged look, so a first call sees the incidents already open
    events, newest, lost = run.journal.since(cursor, after)
    doc: dict[str, Any] = {"cursor": newest, "events": events, "open": run.journal.open()}
    if lost:
        doc["note"] = f"events after cursor {cursor} were dropped from memory (the journal keeps the newest); `open` lists what is open now"
    return _answer(run, doc)


def _since(since: int | str) -> tuple[int, float | None]:
    import datetime as _dt

    if isinstance(since, int) or (isinstance(since, str) and since.strip().isdigit()):
        value = int(since)
        # A number the size of the epoch is a time, not a cursor (a journal of a billion events is not kept).
        return (0, float(value)) if value > 10**9 else (value, None)
    try:
        return 0, _dt.datetime.fromisoformat(str(since).strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValueError(f"since {since!r}: give a cursor from an earlier answer (0: everything kept), or a time (ISO 8601 or epoch seconds)") from None


def metrics(run: Served, names: list[str] | None = None, last_n: int = 20) -> dict[str, Any]:
    """The newest `last_n` step rows (each the status JSON's `steps` row, cut to `names`: the
    registry's metric names, or a run's own keys from `extra`), and each metric's trend over them."""
    view = run.view()
    rows = [step_dict(r) for r in view.state.rows(last=max(1, min(int(last_n), MAX_ROWS)))]
    if names:
        known = {k for d in rows for k in d.get("extra", {})}
        unknown = [n for n in names if n not in BY_NAME and n not in known]
        wanted = [n for n in names if n not in unknown]
    else:
        unknown = []
        wanted = [m.name for m in METRICS if any(d.get(m.name) is not None for d in rows)]
    out_rows = []
    for d in rows:
        row = {"step": d["step"], "attempt": d["attempt"], **{n: d[n] if n in BY_NAME else d.get("extra", {}).get(n) for n in wanted}}
        if d.get("superseded"):
            row["superseded"] = True
        out_rows.append(row)
    doc: dict[str, Any] = {
        "steps": out_rows, "trends": {n: trend([r[n] for r in out_rows], n) for n in wanted},
        "progress": {"step": view.state.step, "max_steps": view.state.max_steps, "step_text": view.state.step_text()},
    }
    if unknown:
        doc["unknown"] = unknown
        doc["names"] = [m.name for m in METRICS]
    return _answer(run, doc)


def trend(values: list[Any], name: str) -> dict[str, Any] | None:
    """first, last, min, max, mean over the window, and the direction of the newest five (as the
    TUI's arrows read it: within 5% of the range is flat); `better`/`worse` where the registry
    says which way is good."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return None
    recent = vals[-min(len(vals), 5):]
    delta = recent[-1] - recent[0]
    spread = (max(vals) - min(vals)) or abs(recent[-1]) or 1.0
    direction = "flat" if len(vals) < 2 or abs(delta) < 0.05 * spread else "up" if delta > 0 else "down"
    good = BY_NAME[name].good if name in BY_NAME else None
    reading = None if direction == "flat" or good is None else "better" if direction == good else "worse"
    return {"n": len(vals), "first": vals[0], "last": vals[-1], "min": min(vals), "max": max(vals),
            "mean": sum(vals) / len(vals), "direction": direction, "reading": reading}


def probed(run: Served, probe: str) -> View:
    """The newest view once `probe` has answered at least once (a reading or its error), or after
    `FIRST_READING_S`: a server just started must not say "no process" for "not looked yet"."""
    view = run.view()
    until = time.monotonic() + FIRST_READING_S
    while not view.system.readings.get(probe) and time.monotonic() < until and any(p.name == probe for p in run.engine.probes):
        time.sleep(0.05)
        view = run.view()
    return view


def checkpoints(run: Served) -> dict[str, Any]:
    doc = status_doc(run)
    keys = ("checkpoints", "last_complete_checkpoint", "checkpoint_dir", "checkpoint_dir_source")
    return _answer(run, {k: doc[k] for k in keys})


def processes(run: Served) -> dict[str, Any]:
    """The run's processes by role (the status JSON's `processes`) and the process probe's reading."""
    view = probed(run, "process")
    snap = view.system.procs
    doc: dict[str, Any] = {"processes": view.state.processes, "error": view.system.errors.get("process")}
    if snap is not None:
        doc.update(procs=[dataclasses.asdict(p) for p in snap.procs], missing=snap.missing, zombie_roles=snap.zombie_roles,
                   denied=snap.denied, taken_at=snap.taken_at)
    return _answer(run, doc)


def disk(run: Served) -> dict[str, Any]:
    """The disks under the run and its checkpoints (free space, growth), as `forensics` writes them."""
    view = probed(run, "disk")
    snap = view.system.disk
    doc: dict[str, Any] = dataclasses.asdict(snap) if snap is not None else {"disks": []}
    doc["error"] = view.system.errors.get("disk")
    return _answer(run, doc)


_nvml: Any = None
_nvml_lock = threading.Lock()


def gpus(runs: list[Served]) -> dict[str, Any]:
    """The machine's GPUs (NVML), as `runtop forensics` writes `gpus.json`: a run's engine reading
    where one has it (a fleet's engines leave the GPUs to this call), else NVML asked now."""
    global _nvml
    for r in runs:
        snap = probed(r, "gpu").system.gpu
        if snap is not None:
            out: dict[str, Any] = _redact_all(dataclasses.asdict(snap))
            return out
    from runtop.sources.gpu import NvmlProbe

    with _nvml_lock:
        if _nvml is None:
            _nvml = NvmlProbe()
        snap = _nvml.read()
    out = _redact_all(dataclasses.asdict(snap))
    return out


def forensics(run: Served, wait_s: float = FORENSICS_WAIT_S) -> dict[str, Any]:
    """Take the hang forensics now (py-spy stacks of every run process, process states, GPUs,
    log tails, disks) and answer with what the stacks show and the folder they are in."""
    engine = run.engine
    before = engine.last_forensics
    if not engine.start_forensics():
        return _answer(run, {"started": False, "note": "a collection is already running: ask again in a few seconds"})
    until = time.monotonic() + wait_s
    while engine.last_forensics is before and time.monotonic() < until:
        time.sleep(0.1)  # the engine's thread hands the result on at its next step
    got = engine.last_forensics
    if got is None or got is before:
        return _answer(run, {"started": True, "note": f"still collecting after {wait_s:g} s: ask again later"})
    return _answer(run, {"started": True, "folder": got.folder, "summary": got.summary, "problems": list(got.problems), "line": got.line()})


def propose_action(run: Served, action: str) -> dict[str, Any]:
    """The vetted plan of `action` (resume, stop, restart, open-logs, checkin): its exact text, the
    pane it would go to and why that pane, the token a person types to confirm. Never sent from
    here: a person confirms it in the TUI or with `runtop send` (docs/mcp.md)."""
    from runtop.action_error import ActionError, ReadOnly
    from runtop.actions.vetted import BY_NAME as ACTIONS
    from runtop.actions.vetted import Context, plan
    from runtop.config import load_actions

    settings = run.actions
    cfg = load_actions(settings.config)
    if settings.read_only or cfg.read_only:
        return _answer(run, {"action": action, "actions": "off", "disabled": "read-only: actions are off (runtop mcp --read-only or [actions] read_only)",
                             "executed": False})
    if action not in ACTIONS:
        raise LookupError(f"unknown action {action!r}; actions: {', '.join(ACTIONS)}")
    view = probed(run, "process")  # which processes live decides the plan (a resume into a live launcher is refused)
    # records=False: a proposal writes nothing in the run dir (the pane is recorded when a person acts).
    ctx = Context.for_run(view.state, cfg=cfg, socket=settings.tmux_socket, session=settings.tmux_session,
                          target=settings.tmux_target, launch_cmd=settings.launch_cmd, records=False, verdict=view.verdict)
    try:
        p = plan(action, ctx)
    except ReadOnly as e:
        return _answer(run, {"action": action, "actions": "off", "disabled": str(e), "executed": False})
    target = proof = None
    try:
        target, proof = ctx.pane().target, ctx.pane_proof
    except ActionError:
        pass
    doc: dict[str, Any] = {
        "action": p.name, "actions": "on", "description": p.description, "text": p.text, "disabled": p.disabled,
        "confirm": p.confirm, "target": target, "target_proof": proof, "notes": list(p.notes), "executed": False,
        "confirm_with": None if p.disabled else _confirm_with(run, p.name, p.confirm),
    }
    return _answer(run, doc)


def _confirm_with(run: Served, name: str, token: str | None) -> dict[str, str]:
    """How a person sends it: the TUI's key and token, or the command line (`--step` pins a resume
    to the checkpoint the plan named: if a newer one lands first, nothing is sent)."""
    from runtop.actions.vetted import BY_NAME as ACTIONS

    s = run.actions
    argv = ["runtop", "send", name, run.path]
    if name in ("resume", "restart") and token and token.isdigit():
        argv += ["--step", token]
    for flag, value in (("--tmux-socket", s.tmux_socket), ("--tmux-session", s.tmux_session), ("--tmux-target", s.tmux_target),
                        ("--launch-cmd", s.launch_cmd), ("--config", s.config)):
        if value:
            argv += [flag, value]
    tui = f"press {ACTIONS[name].key} in runtop's TUI" + (f", then type {token}" if token else "")
    return {"tui": tui, "command": shlex.join([*argv, "--yes"])}


def checkin(run: Served) -> str:
    """The run's STATUS.md check-in, as `runtop status` prints it (markdown)."""
    from runtop.outputs.report import to_markdown

    view = run.view()
    return to_markdown(view.state, view.verdict)
