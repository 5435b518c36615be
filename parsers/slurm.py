"""What `squeue` and `sacct` say of one job, read in every shape they print.

Pure: text in, `SlurmJob` out. Two generations of each:
- `--json` (Slurm ≥ 21.08). Its fields changed shape in 23.02: a state is a list
  (`"current": ["RUNNING"]`), a number a `{"set", "infinite", "number"}` triple
  (real 23.11.10 captures: virtualcell/vcell#1913, `sacct-json-multistep.json`); 21.08
  and 22.05 wrote plain values (`"current": "COMPLETED"`, `"limit": 1440` minutes,
  `"exit_code": {"status": "SUCCESS", "return_code": 0}`: mila-iqia/SARC's 21.08.8
  fixtures).
- `--parsable2` / `squeue -o` (every version): `|`-separated with a header, one line per
  job *step* in sacct (`4242`, `4242.batch`, `4242.extern`, `4242.0`: the allocation's line
  is the job's), states with words after them (`CANCELLED by 54321`), durations as
  `[D-]HH:MM:SS` (vcell#1913's `sacct-cancelled-by-user`, cluster_utils#87).
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any


class JobState(enum.Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    SUSPENDED = "SUSPENDED"
    REQUEUED = "REQUEUED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    PREEMPTED = "PREEMPTED"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OTHER = "OTHER"  # a state this version of runtop does not know: shown as SLURM wrote it

    @property
    def alive(self) -> bool:
        return self in (JobState.RUNNING, JobState.COMPLETING)

    @property
    def waiting(self) -> bool:
        """Queued to run (again): a preempted job requeued, a job held."""
        return self in (JobState.PENDING, JobState.REQUEUED, JobState.SUSPENDED)

    @property
    def ended(self) -> bool:
        return not (self.alive or self.waiting or self is JobState.OTHER)


# squeue's compact codes (`%t`) beside the long names (`%T`).
_SHORT = {"PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "S": "SUSPENDED", "RQ": "REQUEUED", "CD": "COMPLETED",
          "F": "FAILED", "CA": "CANCELLED", "TO": "TIMEOUT", "PR": "PREEMPTED", "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY",
          "BF": "BOOT_FAIL", "DL": "DEADLINE"}


def job_state(text: str) -> JobState:
    word = text.strip().split(" ", 1)[0].upper().rstrip("+")  # `CANCELLED by 54321`, `CANCELLED+`
    word = _SHORT.get(word, word)
    try:
        return JobState(word)
    except ValueError:
        return JobState.OTHER


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    state: JobState
    state_text: str  # as SLURM wrote it: `CANCELLED by 54321`, `REQUEUE_HOLD`
    name: str = ""
    exit_code: int | None = None
    signal: int | None = None
    elapsed_s: float | None = None
    limit_s: float | None = None  # None: no limit (UNLIMITED) or not said
    left_s: float | None = None  # squeue's TIME_LEFT, else limit − elapsed
    nodes: str = ""  # `gpu-[01-04]`
    node_count: int | None = None
    reason: str = ""  # squeue's reason (`Priority`, `BeginTime`), or sacct's
    start_ts: float | None = None
    end_ts: float | None = None
    step_states: tuple[tuple[str, str], ...] = ()  # (step id, state text) of each step sacct listed
    user: str = ""  # who submitted it, as sacct says (`User`; `user` in --json); "" where not said

    def time_left(self) -> float | None:
        if self.left_s is not None:
            return self.left_s
        if self.limit_s is not None and self.elapsed_s is not None:
            return max(0.0, self.limit_s - self.elapsed_s)
        return None

    def worst_step(self) -> tuple[str, JobState] | None:
        """A step that ended in a scheduler kill (`4242.0 OUT_OF_MEMORY` under a `FAILED`
        allocation): the step says more than the allocation."""
        for step, text in self.step_states:
            st = job_state(text)
            if st in (JobState.OUT_OF_MEMORY, JobState.NODE_FAIL, JobState.TIMEOUT, JobState.PREEMPTED):
                return step, st
        return None


class SlurmFormatError(ValueError):
    """Output runtop cannot read as the command's: the line, not a traceback."""


# ---- durations ------------------------------------------------------------------------
# Bounded digit runs: unbounded `\d+` groups in a row backtrack quadratically on a long number.
_DURATION_RE = re.compile(r"(?:(\d{1,5})-)?(?:(\d{1,6}):)?(\d{1,9}):(\d{1,2})(?:\.\d{1,6})?\Z", re.ASCII)


def duration_s(text: str) -> float | None:
    """`1-02:03:04`, `02:03:04`, `03:04`, `12:00.5` → seconds; `UNLIMITED`, `INVALID`,
    `Partition_Limit`, `NOT_SET`, empty → None."""
    m = _DURATION_RE.match(text.strip())
    if not m:
        return None
    days, hours, mins, secs = (int(g) if g else 0 for g in m.groups())
    return float(((days * 24 + hours) * 60 + mins) * 60 + secs)


def slurm_time(secs: float) -> str:
    """Seconds as SLURM writes a time (`1-00:00:00`, `23:59:00`): a limit reads as the user set it."""
    s = int(secs)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _exit(text: str) -> tuple[int | None, int | None]:
    """sacct's `ExitCode` is `code:signal` (`0:9` killed by SIGKILL, `1:0` exited 1)."""
    code, _, sig = text.partition(":")
    try:
        return int(code), int(sig) if sig else None
    except ValueError:
        return None, None


# ---- --parsable2 / -o -------------------------------------------------------------------
SACCT_FIELDS = ("JobID", "JobName", "User", "State", "ExitCode", "Elapsed", "Timelimit", "NNodes", "NodeList", "Start", "End")
# squeue -o: %i id, %j name, %T state, %M used, %L left, %l limit, %D nodes, %R nodes or reason.
SQUEUE_FORMAT = "%i|%j|%T|%M|%L|%l|%D|%R"


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return [], []
    header = lines[0].split("|")
    return header, [ln.split("|") for ln in lines[1:]]


def sacct_parsable(text: str, job_id: str) -> SlurmJob | None:
    """The allocation's line of `sacct --parsable2 --format=<SACCT_FIELDS>` (None: no such
    job, as when sacct prints only its header)."""
    header, rows = _table(text)
    if not header:
        return None
    if "JobID" not in header or "State" not in header:
        raise SlurmFormatError(f"sacct printed no JobID|State header: {text.splitlines()[0][:80]!r}")
    col = {name: i for i, name in enumerate(header)}

    def get(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    base = str(job_id).split(".", 1)[0]
    alloc = None
    steps: list[tuple[str, str]] = []
    for row in rows:
        jid = get(row, "JobID")
        if jid == base or jid.split("_", 1)[0] == base and "." not in jid:
            alloc = row
        elif jid.startswith(base + "."):
            steps.append((jid, get(row, "State")))
    if alloc is None:
        return None
    code, sig = _exit(get(alloc, "ExitCode"))
    nn = get(alloc, "NNodes")
    return SlurmJob(
        job_id=base, state=job_state(get(alloc, "State")), state_text=get(alloc, "State"), name=get(alloc, "JobName"),
        exit_code=code, signal=sig, elapsed_s=duration_s(get(alloc, "Elapsed")), limit_s=duration_s(get(alloc, "Timelimit")),
        nodes=get(alloc, "NodeList"), node_count=int(nn) if nn.isdigit() else None, step_states=tuple(steps), user=get(alloc, "User"),
    )


def squeue_parsable(text: str, job_id: str) -> SlurmJob | None:
    """The job's line of `squeue -h -j ID -o <SQUEUE_FORMAT>` (None: not in the queue)."""
    base = str(job_id).split(".", 1)[0]
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 8 or parts[0].strip() != base:
            continue
        jid, name, state, used, left, limit, nn, where = (p.strip() for p in parts[:8])
        st = job_state(state)
        # %R is the node list while it runs, `(Reason)` while it waits.
        reason = where[1:-1] if where.startswith("(") and where.endswith(")") else ""
        return SlurmJob(
            job_id=jid, state=st, state_text=state, name=name, elapsed_s=duration_s(used), left_s=duration_s(left),
            limit_s=duration_s(limit), node_count=int(nn) if nn.isdigit() else None, nodes="" if reason else where, reason=reason,
        )
    return None


# ---- --json ---------------------------------------------------------------------------------
def _num(value: Any) -> float | None:
    """A number in either generation: `1440` (≤ 22.05) or `{"set": true, "infinite": false,
    "number": 1440}` (≥ 23.02); unset or infinite → None."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _state_text(value: Any) -> str:
    """`"RUNNING"` (≤ 22.05) or `["RUNNING"]` / `["CANCELLED", "REQUEUED"]` (≥ 23.02)."""
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value or "")


def _load(text: str, what: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SlurmFormatError(f"{what} --json printed no JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SlurmFormatError(f"{what} --json printed no `jobs` list")
    return [j for j in doc["jobs"] if isinstance(j, dict)]


def _obj(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _epoch(value: Any) -> float | None:
    n = _num(value)
    return n if n else None  # 0: not yet (an end time while it runs)


def sacct_json(text: str, job_id: str) -> SlurmJob | None:
    base = str(job_id).split(".", 1)[0]
    for job in _load(text, "sacct"):
        if str(job.get("job_id")) != base:
            continue
        state, times, exit_code = _obj(job, "state"), _obj(job, "time"), _obj(job, "exit_code")
        signal = _obj(exit_code, "signal")
        limit_min = _num(times.get("limit"))
        steps = tuple(
            (str((s.get("step") or {}).get("id", "")), _state_text(s.get("state")))
            for s in job.get("steps") or [] if isinstance(s, dict)
        )
        code = _num(exit_code.get("return_code"))
        sig = _num(signal.get("id")) if signal else None
        text_state = _state_text(state.get("current"))
        return SlurmJob(
            job_id=base, state=job_state(text_state), state_text=text_state, name=str(job.get("name") or ""),
            exit_code=int(code) if code is not None else None, signal=int(sig) if sig is not None else None,
            elapsed_s=_num(times.get("elapsed")), limit_s=limit_min * 60 if limit_min is not None else None,
            nodes=str(job.get("nodes") or ""), node_count=int(n) if (n := _num(job.get("allocation_nodes"))) is not None else None,
            reason=str(state.get("reason") or "") if str(state.get("reason") or "") != "None" else "",
            start_ts=_epoch(times.get("start")), end_ts=_epoch(times.get("end")), step_states=steps,
            user=job["user"] if isinstance(job.get("user"), str) else "",
        )
    return None


def squeue_json(text: str, job_id: str, now: float) -> SlurmJob | None:
    base = str(job_id).split(".", 1)[0]
    for job in _load(text, "squeue"):
        if str(job.get("job_id")) != base:
            continue
        text_state = _state_text(job.get("job_state"))
        limit_min = _num(job.get("time_limit"))
        start = _epoch(job.get("start_time"))
        st = job_state(text_state)
        elapsed = max(0.0, now - start) if start and st.alive else None
        limit = limit_min * 60 if limit_min is not None else None
        reason = str(job.get("state_reason") or "")
        return SlurmJob(
            job_id=base, state=st, state_text=text_state, name=str(job.get("name") or ""), elapsed_s=elapsed, limit_s=limit,
            left_s=max(0.0, limit - elapsed) if limit is not None and elapsed is not None else None,
            nodes=str(job.get("nodes") or ""), node_count=int(n) if (n := _num(job.get("node_count"))) is not None else None,
            reason="" if reason == "None" else reason, start_ts=start,
        )
    return None


# ---- what slurmstepd and srun write into the job's own output file ----------------------------
# Genuine shapes (our values): `slurmstepd: error: *** JOB 494583 ON node-07 CANCELLED AT
# 2024-04-20T09:09:37 DUE TO TIME LIMIT ***` (ZettaAI/zetta_utils#671, plantit#198), the
# `slurmstepd-<host>:` prefix (DataBiosphere/toil#4706), the old `*** JOB 830329 CANCELLED AT …
# DUE TO TIME LIMIT on n447 ***` (marbl/canu#1067), `*** STEP 3495064.0 ON orion-01-01 CANCELLED
# AT … ***` with no reason; OOM: `Detected 1 oom_kill event in StepId=440575.0. Some of the step
# tasks have been OOM Killed.` (chrisknewman/tusas#149) and the older `Detected 1 oom-kill
# event(s) in step 3495064.0 cgroup.` (hafs-community/HAFS#101), then `srun: error: <node>:
# tasks 1-3: Out Of Memory`.
STEPD_CANCEL_RE = re.compile(
    r"slurmstepd(?:-[\w.-]+)?: (?:error: )?\*\*\* (JOB|STEP) (\d{1,12})(?:\.\w+)? (?:ON (\S+) )?CANCELLED AT (\S+)"
    r"(?: DUE TO ([A-Z][A-Z ]{2,30}?))?(?: on (\S+))? \*\*\*", re.ASCII)
STEPD_OOM_RE = re.compile(r"slurmstepd(?:-[\w.-]+)?: error: Detected (\d{1,9}) oom[-_]kill event", re.ASCII)
SRUN_TASK_RE = re.compile(r"srun: error: (\S+): tasks? [\d,-]+: (Out Of Memory|Bus error|Segmentation fault|Killed)", re.ASCII)
DUE_TO = {"TIME LIMIT": JobState.TIMEOUT, "PREEMPTION": JobState.PREEMPTED, "NODE FAILURE": JobState.NODE_FAIL}


@dataclass(frozen=True)
class JobLogEnd:
    """How the job's own output file says it ended."""

    state: JobState
    line: str
    node: str = ""


def job_log_end(text: str) -> JobLogEnd | None:
    """The scheduler's last word in a job's output (its tail): a cancel with its reason, an
    OOM kill, a task killed; None when the file holds none."""
    found: JobLogEnd | None = None
    oom = None
    for line in text.splitlines():
        if "slurmstepd" not in line and "srun: error" not in line:
            continue  # C-speed skip of the run's own lines
        m = STEPD_CANCEL_RE.search(line)
        if m:
            reason = (m.group(5) or "").strip()
            state = DUE_TO.get(reason, JobState.TIMEOUT if reason.startswith("TIME") else JobState.CANCELLED)
            if oom is not None and not reason:
                state = JobState.OUT_OF_MEMORY  # the step was cancelled because a task was OOM-killed
            if found is None or found.state is JobState.CANCELLED or m.group(1) == "JOB":
                found = JobLogEnd(state, line.strip(), m.group(3) or m.group(6) or "")
            continue
        m2 = STEPD_OOM_RE.search(line)
        if m2:
            oom = line.strip()
            found = JobLogEnd(JobState.OUT_OF_MEMORY, oom)
            continue
        m3 = SRUN_TASK_RE.search(line)
        if m3 and m3.group(2) == "Out Of Memory":
            if found is None:
                found = JobLogEnd(JobState.OUT_OF_MEMORY, line.strip(), m3.group(1))
            elif found.state is JobState.OUT_OF_MEMORY and not found.node:
                found = JobLogEnd(found.state, found.line, m3.group(1))  # srun names the node slurmstepd did not
    return found
