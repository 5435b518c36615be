"""Hang forensics: what a maintainer asks for first, saved before anyone restarts
the run. Into `RUN/.runtop/forensics/<UTC time>/`:

- `stacks/<role>-<pid>.txt`: a `py-spy dump` of every run process (or why there is none:
  py-spy missing, ptrace refused, and how to get it);
- `processes.txt`: the run's process tree, each process's and thread's state and kernel
  wait channel (`/proc/PID/task/TID/wchan`: `futex_wait_queue`, `pipe_read`, …);
- `gpus.json`: the last NVML reading, per GPU and process;
- `logs/<file>.tail`: the last 200 lines of each log; `disk.txt`: /dev/shm and disk usage;
- `findings.json`: the status JSON with every finding; `summary.txt`: what the stacks show.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from runtop.parsers import pyspy
from runtop.queues import drain
from runtop.rules.health import Verdict
from runtop.sources.disk import DiskSnapshot
from runtop.sources.gpu import GpuSnapshot
from runtop.sources.processes import ProcessSnapshot, ProcInfo
from runtop.sources.regular import open_binary
from runtop.sources.writes import Dir, OutputError, open_dir, private_dir
from runtop.state.run import RunState

TAIL_LINES = 200
DUMP_TIMEOUT_S = 30.0
HOW_TO_GET = "pip install '.[forensics]' in runtop's checkout (or pip install py-spy)"
PTRACE_HELP = ("ptrace was refused: run runtop as the run's user with /proc/sys/kernel/yama/ptrace_scope 0, "
               "or `sudo py-spy dump --pid PID`; in a container add --cap-add SYS_PTRACE")


@dataclass(frozen=True)
class Forensics:
    folder: str
    summary: str  # what the stacks show, one line
    problems: tuple[str, ...] = ()  # what could not be collected, and why

    def line(self) -> str:
        extra = f" ({'; '.join(self.problems)})" if self.problems else ""
        return f"{self.summary or 'no stacks'}{extra}: {self.folder}"


def py_spy() -> str | None:
    """py-spy beside this Python (a venv) or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return here if os.access(here, os.X_OK) else shutil.which("py-spy")


def dump(pid: int, exe: str | None = None) -> tuple[str | None, str | None]:
    """(`py-spy dump` text, None) or (None, why not)."""
    exe = exe or py_spy()
    if exe is None:
        return None, f"py-spy is not installed: {HOW_TO_GET}"
    try:
        done = subprocess.run([exe, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"py-spy dump of {pid} ran past {DUMP_TIMEOUT_S:g} s"
    except OSError as e:
        return None, f"py-spy: {e.strerror or e}"
    if done.returncode != 0:
        err = (done.stderr or done.stdout).strip().splitlines()
        first = err[0] if err else f"exit {done.returncode}"
        if "ermission" in first or "ptrace" in first.lower() or "Operation not permitted" in first:
            return None, f"{first} ({PTRACE_HELP})"
        return None, f"py-spy dump of {pid}: {first}"
    return done.stdout, None


def collect(
    state: RunState, verdict: Verdict, procs: ProcessSnapshot | None, gpu: GpuSnapshot | None = None,
    disk: DiskSnapshot | None = None, now: float | None = None,
) -> Forensics:
    """Collects first, then saves the folder whole: in the run dir, else (read-only, full,
    `.runtop` a link or another user's) in the user's private dir, the reason said. Where
    neither can take it (a full disk everywhere), `OutputError`: one line."""
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc) if now is not None else _dt.datetime.now(_dt.timezone.utc)
    problems: list[str] = []
    files: list[tuple[str, str, str]] = []  # (sub-folder, name, text)
    by_role: dict[str, list[pyspy.Dump]] = {}
    run_procs = [p for p in (procs.procs if procs else []) if p.role and p.role != "ray" and not p.zombie]
    for p in run_procs:
        text, why = dump(p.pid)
        files.append(("stacks", f"{p.role}-{p.pid}.txt", text if text is not None else f"no stack: {why}\n"))
        if text is None:
            if why and why not in problems:
                problems.append(why)
            continue
        by_role.setdefault(p.role or "?", []).append(pyspy.parse(text))
    if not run_procs:
        problems.append("no run process to dump" + (f" ({procs.error})" if procs and procs.error else ""))
    files.append(("", "processes.txt", _process_table(run_procs)))
    files.append(("", "gpus.json", json.dumps(dataclasses.asdict(gpu) if gpu else {"error": "no NVML reading"}, indent=2, default=str)))
    files.append(("", "disk.txt", _disks(disk, state.path)))
    for f in state.files.values():
        if f.kind == "log":
            files.append(("logs", state.relpath(f.path).replace(os.sep, "__") + ".tail", _tail(f.path)))
    from runtop.outputs.report_json import to_json

    files.append(("", "findings.json", json.dumps(to_json(state, verdict, include_steps=False), indent=2, default=str)))
    summary = pyspy.summary(by_role)
    name = stamp.strftime("%Y%m%dT%H%M%SZ")
    try:
        with open_dir(state.path or ".", ".runtop/forensics") as base:
            folder = _save(base, name, [*files, ("", "summary.txt", _summary(summary, problems))])
    except OutputError as e:
        root = os.path.realpath(state.path or ".")
        with private_dir() as mine, mine.sub("forensics") as kept, kept.sub(os.path.basename(root) or "run") as per_run:
            problems.append(f"not saved in the run dir ({e}): saved under {per_run.path}")
            folder = _save(per_run, name, [*files, ("", "summary.txt", _summary(summary, problems))])
    return Forensics(folder, summary, tuple(problems))


def _summary(summary: str, problems: list[str]) -> str:
    return "\n".join([summary or "no stacks", *problems]) + "\n"


def _save(base: Dir, name: str, files: list[tuple[str, str, str]]) -> str:
    """A folder made now under `base` (one someone made first, a link or a directory, is
    never written into) holding every file, or nothing: a failure (a full disk) takes the
    folder away again and raises `OutputError`."""
    with base.fresh(name) as folder:
        subs: dict[str, Dir] = {}
        try:
            for sub, fname, text in files:
                d = folder
                if sub:
                    if sub not in subs:
                        subs[sub] = folder.sub(sub)
                    d = subs[sub]
                d.create(fname, text.encode("utf-8"))
        except OutputError:
            base.remove_tree(os.path.basename(folder.path))
            raise
        finally:
            for d in subs.values():
                d.close()
        return folder.path


def _tail(path: str, n: int = TAIL_LINES) -> str:
    """The last `n` lines, read from the end (a 40 GB log is not read whole)."""
    try:
        with open_binary(path) as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - (n * 400 + 4096)))
            data = f.read()
    except OSError as e:
        return f"cannot read {path}: {e.strerror or e}\n"
    lines = data.decode("utf-8", "replace").splitlines()[-n:]
    return "\n".join(lines) + "\n"


def _process_table(procs: Iterable[ProcInfo]) -> str:
    out = ["pid\trole\tstate\twchan\ttitle"]
    for p in procs:
        pid = p.pid
        out.append(f"{pid}\t{p.role}\t{p.status}\t{_read(f'/proc/{pid}/wchan')}\t{p.title}")
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        except OSError:
            continue
        for tid in tids[:256]:
            stat = _read(f"/proc/{pid}/task/{tid}/stat")
            state = stat.rsplit(")", 1)[1].split()[0] if ")" in stat else "?"
            comm = _read(f"/proc/{pid}/task/{tid}/comm")
            out.append(f"  {tid}\tthread\t{state}\t{_read(f'/proc/{pid}/task/{tid}/wchan')}\t{comm}")
    return "\n".join(out) + "\n"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or "-"
    except OSError:
        return "?"


def _disks(disk: DiskSnapshot | None, run_root: str) -> str:
    rows = []
    for path in ("/dev/shm", run_root):
        try:
            u = shutil.disk_usage(path)
        except OSError as e:
            rows.append(f"{path}: {e.strerror or e}")
            continue
        rows.append(f"{path}: {100 * u.used / max(1, u.total):.0f}% used, {u.free / 2**30:.1f} GiB free of {u.total / 2**30:.1f} GiB")
    if disk is not None:
        rows.append(json.dumps(dataclasses.asdict(disk), default=str))
    return "\n".join(rows) + "\n"


class InThread:
    """Hang forensics taken one at a time in a thread of their own (py-spy takes seconds), the
    results handed to the engine's thread; a failed collection is said, never a dead engine."""

    def __init__(self) -> None:
        self.last: Forensics | None = None
        self._running = threading.Event()
        self._done: queue.SimpleQueue[Forensics] = queue.SimpleQueue()

    def start(self, state: RunState, verdict: Verdict, procs: ProcessSnapshot | None, gpu: GpuSnapshot | None,
              disk: DiskSnapshot | None, now: float) -> bool:
        """From a frozen copy of the run (read while the engine reads on); False if one is running."""
        if self._running.is_set():
            return False
        self._running.set()

        def run() -> None:
            try:
                self._done.put(collect(state, verdict, procs, gpu, disk, now))
            except Exception as e:  # noqa: BLE001 - a failed collection is said, never a dead engine
                self._done.put(Forensics("", "", (f"forensics failed: {type(e).__name__}: {e}",)))
            finally:
                self._running.clear()

        threading.Thread(target=run, name="runtop-forensics", daemon=True).start()
        return True

    def take(self) -> list[Forensics]:
        """The collections finished since the last call (the newest is `last`)."""
        results = drain(self._done)
        if results:
            self.last = results[-1]
        return results

