"""The SLURM job a run lives in: which job, and what `squeue` and `sacct` say of it.

The job is found, in this order, from `--slurm-job ID`; the newest `job_<id>.log` /
`slurm-<id>.out` in the run dir (prime-rl's template writes `#SBATCH
--output={output_dir}/job_%j.log`; `slurm-%j.out` is sbatch's default); `SLURM_JOB_ID` in
the environment of one of the run's own processes. Nothing found: no SLURM probe at all.

The commands are the seam: `run_command` runs an argv with a deadline and is all that
touches the scheduler, so the tests put stand-in `squeue`/`sacct` on `PATH` that print
real captures of two SLURM generations. `--json` is asked first; a SLURM without it (<
21.08, or built without the JSON plugin) is asked `--parsable2` / `-o` from then on, and
the reading says so. The controller is asked at most every `SLURM_PERIOD_S`: sacct goes
to slurmdbd, which clusters ask users not to hammer.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from runtop.parsers.slurm import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    JobLogEnd,
    SlurmFormatError,
    SlurmJob,
    job_log_end,
    sacct_json,
    sacct_parsable,
    squeue_json,
    squeue_parsable,
)
from runtop.sources.environ import run_env
from runtop.sources.regular import open_binary

SLURM_PERIOD_S = 30.0
COMMAND_TIMEOUT_S = 10.0
JOB_LOG_RE = re.compile(r"(?:job_|slurm-)(\d{1,12})(?:_\d+)?\.(?:log|out)\Z", re.ASCII)
JOB_ID_RE = re.compile(r"\d{1,12}(?:_\d{1,9})?\Z", re.ASCII)


@dataclass(frozen=True)
class JobRef:
    job_id: str
    how: str  # the proof it is this run's: `job_4242.log in the run dir`, `--slurm-job`, `SLURM_JOB_ID of pid 123`
    earlier: tuple[str, ...] = ()  # the run's earlier jobs (older job logs), newest first
    log: str | None = None  # the job log in the run dir that named it (`job_4242.log`)


def job_from_dir(root: str) -> JobRef | None:
    """The newest job log in the run dir names the run's current job."""
    try:
        names = os.listdir(root)
    except OSError:
        return None
    found: list[tuple[float, str, str]] = []
    for name in names:
        m = JOB_LOG_RE.match(name)
        if not m:
            continue
        try:
            mtime = os.stat(os.path.join(root, name)).st_mtime
        except OSError:
            continue
        found.append((mtime, m.group(1), name))
    if not found:
        return None
    # Newest written first; equal times: the higher id (SLURM ids grow).
    found.sort(key=lambda t: (t[0], int(t[1])), reverse=True)
    return JobRef(found[0][1], f"{found[0][2]} in the run dir", tuple(j for _, j, _ in found[1:]), log=found[0][2])


def job_from_env(pids: Sequence[int]) -> JobRef | None:
    """`SLURM_JOB_ID` in a run process's environment."""
    found = run_env(pids, "SLURM_JOB_ID", JOB_ID_RE)
    return JobRef(found[0], f"SLURM_JOB_ID of the run's pid {found[1]}") if found else None


def find_job(root: str, explicit: str | None = None, pids: Sequence[int] = ()) -> JobRef | None:
    if explicit:
        return JobRef(explicit, "--slurm-job")
    return job_from_dir(root) or job_from_env(pids)


def read_job(root: str, explicit: str | None = None, pids: Sequence[int] = (), client: SlurmClient | None = None) -> SlurmSnapshot | None:
    """The run's job as squeue/sacct say now (None: the run names no job)."""
    ref = find_job(root, explicit, pids)
    return (client or SlurmClient()).read(ref, root) if ref is not None else None


LOG_TAIL_BYTES = 64 << 10  # slurmstepd's last words are at the end of the job's output


def read_log_end(path: str) -> JobLogEnd | None:
    """The end of the job's own output file, as slurmstepd wrote it (its last 64 KB)."""
    try:
        with open_binary(path) as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    return job_log_end(text)


# ---- the commands ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    rc: int
    out: str
    err: str


Runner = Callable[[Sequence[str]], Answer]


class CommandMissing(Exception):
    pass


def run_command(argv: Sequence[str], timeout: float = COMMAND_TIMEOUT_S) -> Answer:
    """Run a SLURM client with a deadline: a slurmctld that does not answer is a reading
    error, never a hung probe."""
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, errors="replace", stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise CommandMissing(f"{argv[0]} is not on PATH") from None
    except subprocess.TimeoutExpired:
        return Answer(124, "", f"{argv[0]} did not answer in {timeout:g} s")
    except OSError as e:
        return Answer(126, "", f"{argv[0]}: {e.strerror or e}")
    return Answer(p.returncode, p.stdout, p.stderr)


@dataclass(frozen=True)
class SlurmSnapshot:
    ref: JobRef
    job: SlurmJob | None  # None: neither command knows the job (purged from both)
    in_queue: bool  # squeue still lists it
    source: str  # `squeue --json + sacct --json`, `squeue -o + sacct --parsable2 (this SLURM has no --json)`
    notes: tuple[str, ...] = ()  # what could not be read, said plainly
    taken: float = field(default_factory=time.time)
    log_end: JobLogEnd | None = None  # what slurmstepd wrote into the job's own output file


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# A SLURM that does not know `--json` says so in one of these ways (getopt's words, or the
# data_parser plugin missing on a 21.08+ build).
NO_JSON_RE = re.compile(r"unrecognized option|invalid option|unknown option|data_parser|serializer|not supported", re.I)
# squeue asked of a job it no longer holds (before 23.02 an error; since, an empty list).
NOT_IN_QUEUE_RE = re.compile(r"Invalid job id specified", re.I)


class SlurmClient:
    """Asks squeue and sacct of one job; remembers whether this SLURM speaks `--json`."""

    def __init__(self, runner: Runner = run_command, clock: Callable[[], float] = time.time) -> None:
        self.runner = runner
        self.clock = clock
        self.json: bool | None = None  # None: not asked yet

    def read(self, ref: JobRef, root: str | None = None) -> SlurmSnapshot:
        notes: list[str] = []
        log_end = read_log_end(os.path.join(root, ref.log)) if root and ref.log else None
        queue_job, in_queue, queue_how = self._squeue(ref.job_id, notes)
        acct_job, acct_how = self._sacct(ref.job_id, notes)
        missing = [n for n in notes if n.endswith(" is not on PATH")]
        if len(missing) == 2:  # one sentence for one fact: this machine has no SLURM clients
            notes = [n for n in notes if n not in missing] + ["squeue and sacct are not on PATH: the job's state is read from its output only"]
        job = _merge(queue_job, acct_job)
        if job is None and not notes:
            notes.append(f"neither squeue nor sacct knows job {ref.job_id} (purged from the accounting, or another cluster's)")
        source = " + ".join(h for h in (queue_how, acct_how) if h)
        if self.json is False:
            source += " (this SLURM has no --json)"
        return SlurmSnapshot(ref, job, in_queue, source, tuple(notes), self.clock(), log_end)

    def _ask(self, json_argv: list[str], plain_argv: list[str]) -> tuple[Answer, bool]:
        """(the answer, whether it is JSON), trying `--json` until this SLURM refuses it."""
        if self.json is not False:
            ans = self.runner(json_argv)
            if ans.rc == 0 and ans.out.lstrip().startswith("{"):
                self.json = True
                return ans, True
            # Refused in words, or a build that answers without JSON: plain output from now on.
            if not (NO_JSON_RE.search(ans.err + ans.out) or ans.rc == 0):
                return ans, True  # a failure of a JSON-speaking SLURM (slurmctld down, a job it purged)
            self.json = False
        return self.runner(plain_argv), False

    def _squeue(self, job_id: str, notes: list[str]) -> tuple[SlurmJob | None, bool, str]:
        try:
            ans, is_json = self._ask(["squeue", "--json", "-j", job_id], ["squeue", "-h", "-j", job_id, "-o", SQUEUE_FORMAT])
        except CommandMissing as e:
            notes.append(str(e))
            return None, False, ""
        how = "squeue --json" if is_json else "squeue -o"
        if ans.rc != 0:
            if NOT_IN_QUEUE_RE.search(ans.err):
                return None, False, how
            notes.append(f"squeue failed: {_first_line(ans.err) or f'exit {ans.rc}'}")
            return None, False, how
        try:
            job = squeue_json(ans.out, job_id, self.clock()) if is_json else squeue_parsable(ans.out, job_id)
        except SlurmFormatError as e:
            notes.append(str(e))
            return None, False, how
        return job, job is not None, how

    def _sacct(self, job_id: str, notes: list[str]) -> tuple[SlurmJob | None, str]:
        fields = ",".join(SACCT_FIELDS)
        try:
            ans, is_json = self._ask(["sacct", "--json", "-j", job_id], ["sacct", "--parsable2", "-j", job_id, f"--format={fields}"])
        except CommandMissing as e:
            notes.append(str(e))
            return None, ""
        how = "sacct --json" if is_json else "sacct --parsable2"
        if ans.rc != 0:
            notes.append(f"sacct failed: {_first_line(ans.err) or f'exit {ans.rc}'}")
            return None, how
        try:
            return (sacct_json(ans.out, job_id) if is_json else sacct_parsable(ans.out, job_id)), how
        except SlurmFormatError as e:
            notes.append(str(e))
            return None, how


def _merge(queue: SlurmJob | None, acct: SlurmJob | None) -> SlurmJob | None:
    """squeue is the live truth while the job is queued (time left, a pending reason);
    sacct is the record once it has left (final state, exit code, steps)."""
    if queue is None:
        return acct
    if acct is None:
        return queue
    return replace(
        acct, state=queue.state, state_text=queue.state_text, left_s=queue.left_s if queue.left_s is not None else acct.left_s,
        limit_s=queue.limit_s if queue.limit_s is not None else acct.limit_s,
        elapsed_s=queue.elapsed_s if queue.elapsed_s is not None else acct.elapsed_s,
        reason=queue.reason or acct.reason, nodes=acct.nodes or queue.nodes, node_count=acct.node_count or queue.node_count,
    )


def probe_main(argv: Sequence[str] | None = None) -> int:
    """`python -m runtop.sources.slurm RUN_DIR [JOB]`: what runtop reads of the run's job."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m runtop.sources.slurm RUN_DIR [JOB_ID]", file=sys.stderr)
        return 2
    ref = find_job(args[0], args[1] if len(args) > 1 else None)
    if ref is None:
        print(f"no SLURM job found for {args[0]} (no job_<id>.log or slurm-<id>.out; pass a job id)")
        return 1
    snap = SlurmClient().read(ref)
    print(f"job {ref.job_id} ({ref.how}) via {snap.source or 'nothing'}")
    print(snap.job if snap.job else "no reading")
    for note in snap.notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(probe_main())
