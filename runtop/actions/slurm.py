"""Resume and stop for a run that lives in a SLURM job: `sbatch` of the run's own
batch script, `scancel` of its own job, typed into the Launcher like every other action.

The proof that a script is this run's: it lies in the run dir (prime-rl's SLURM entrypoint
writes the rendered script and config to `{output_dir}/`) and its `#SBATCH --output` names
the job log runtop found the job by (`job_%j.log` → `job_4242.log`), in this run dir. Two
scripts that both pass, or none, and nothing is planned: the plan says which proof is missing.
A job still queued or running is never submitted again: a second `sbatch` starts a second
copy of the run writing into the same checkpoints.

The run dir is untrusted (docs/design.md, "The run dir is untrusted"): the job log and the
script must be the user's own and writable by no one else, in a run dir of the same kind, and
the job must be the user's own as `sacct` says (its `User`). A planted `slurm-5555.out` and a
script naming `slurm-%j.out` resubmit nothing.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex

from runtop.parsers.slurm import JobState, SlurmJob
from runtop.sources.slurm import SlurmSnapshot
from runtop.sources.trust import Untrusted, check_trusted, read_trusted

SCRIPT_NAMES_RE = re.compile(r".*\.(?:sbatch|slurm|sh)\Z")
OUTPUT_RE = re.compile(r"^#SBATCH\s+(?:--output|--error|-o|-e)(?:=|\s+)(\S+)", re.M)
MAX_SCRIPT_BYTES = 256 << 10


class NoProof(Exception):
    """No script or job runtop can prove is this run's, with what is missing."""


def _outputs(text: str, script_dir: str) -> list[str]:
    """The `#SBATCH --output/--error` paths, resolved against the script's dir (sbatch
    resolves them against the submit dir; for a script in the run dir, the run dir)."""
    return [os.path.normpath(os.path.join(script_dir, m.strip("'\""))) for m in OUTPUT_RE.findall(text)]


def _names_job_log(pattern: str, job_log: str) -> bool:
    """`…/job_%j.log` names `job_4242.log` (`%j` the job id, `%x` the job name, `%A`/`%a` an array's)."""
    regex = re.escape(os.path.basename(pattern))
    for token, what in (("%j", r"\d+"), ("%A", r"\d+"), ("%a", r"\d+"), ("%x", r"[^/]+"), ("%N", r"[^/]+"), ("%u", r"[^/]+")):
        regex = regex.replace(re.escape(token), what)
    return re.fullmatch(regex, os.path.basename(job_log)) is not None


def run_script(run_root: str, snap: SlurmSnapshot) -> str:
    """The run's batch script, proven; NoProof says what is missing."""
    job_log = snap.ref.log
    if job_log is None:
        raise NoProof(f"the job was found by {snap.ref.how}, not by a job log in the run dir: runtop cannot tie a batch script to it")
    root = os.path.realpath(run_root)
    try:
        check_trusted(root, job_log)
    except Untrusted as e:
        raise NoProof(f"{e}: runtop will not act on the job it names") from None
    proven: list[str] = []
    ignored: list[str] = []
    try:
        names = sorted(os.listdir(root))
    except OSError as e:
        raise NoProof(f"cannot list the run dir: {e.strerror or e}") from None
    for name in names:
        if not SCRIPT_NAMES_RE.match(name):
            continue
        try:
            data = read_trusted(root, name, MAX_SCRIPT_BYTES)
        except Untrusted as e:
            ignored.append(str(e))
            continue
        text = (data or b"").decode("utf-8", "replace")
        if "#SBATCH" not in text:
            continue
        for out in _outputs(text, root):
            if os.path.dirname(os.path.realpath(out)) == root and _names_job_log(out, job_log):
                proven.append(os.path.join(root, name))
                break
    if not proven:
        why = f" (ignored: {'; '.join(ignored[:3])})" if ignored else ""
        raise NoProof(f"no batch script in the run dir whose #SBATCH --output names {job_log}{why}: give --launch-cmd 'sbatch PATH'")
    if len(proven) > 1:
        raise NoProof(f"several batch scripts write {job_log} ({', '.join(os.path.basename(p) for p in proven)}): give --launch-cmd")
    return proven[0]


def _me() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _yours(job: SlurmJob) -> None:
    """The job is the user's own, as sacct says; else NoProof."""
    if not job.user:
        raise NoProof(f"sacct does not say who submitted SLURM job {job.job_id}: runtop acts only on a job it can prove is yours")
    if job.user != _me():
        raise NoProof(f"SLURM job {job.job_id} was submitted by {job.user}, not by you ({_me()}): runtop acts only on your own jobs")


def resume_text(run_root: str, snap: SlurmSnapshot) -> tuple[str, list[str]]:
    """(`sbatch <script>`, notes), or NoProof."""
    job = snap.job
    if job is None:
        raise NoProof(f"SLURM job {snap.ref.job_id}'s state is unknown ({'; '.join(snap.notes) or 'no reading'}): it may still run")
    if not job.state.ended:
        raise NoProof(f"SLURM job {job.job_id} is {job.state_text or job.state.value}: a second sbatch would start a second copy of "
                      f"this run; stop it first (X: scancel {job.job_id})")
    _yours(job)
    script = run_script(run_root, snap)
    notes = [f"SLURM job {job.job_id} ended {job.state.value}; its batch script {os.path.basename(script)} writes {snap.ref.log}",
             "sbatch runs the script as written: it resumes only if the run's config resumes from the newest checkpoint"]
    return f"sbatch {shlex.quote(script)}", notes


def stop_text(snap: SlurmSnapshot) -> str:
    job = snap.job
    if job is None or job.state.ended:
        state = job.state.value if job is not None else "unknown"
        raise NoProof(f"SLURM job {snap.ref.job_id} has nothing to stop (state {state})")
    if job.state is JobState.OTHER:
        raise NoProof(f"SLURM job {job.job_id} is in a state runtop does not know ({job.state_text})")
    _yours(job)
    return f"scancel {job.job_id}"
