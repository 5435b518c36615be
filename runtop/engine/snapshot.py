"""Read a whole run once (headless `runtop status` / `check`): discover, read every file,
look at processes and disks, judge."""

from __future__ import annotations

from typing import Any

from runtop.config import Thresholds
from runtop.engine.engine import Engine
from runtop.engine.live import OnceRun, look_at_processes
from runtop.engine.reader import RunReader
from runtop.frameworks.discovery import discover, with_ckpt_dir, with_metrics
from runtop.rules.health import Verdict
from runtop.state.run import RunState

# Read in bounded chunks: memory holds one chunk of lines at a time, never a whole log.
CHUNK = 4 << 20
# `status` and `check` on a week-old run: each log's last BOUNDED_TAIL bytes, not
# its GBs of history (the verdict lives at the end; `--full` reads it all and says how long it took).
BOUNDED_TAIL = 8 << 20


def read_run(path: str, *, processes: bool = True, ckpt_dir: str | None = None, **more: Any) -> RunState:
    return _read(path, processes=processes, ckpt_dir=ckpt_dir, **more).state


def read_and_judge(path: str, *, ckpt_dir: str | None = None, cfg: Thresholds | None = None, processes: bool = True,
                   disks: bool = True, metrics: list[str] | None = None, metrics_map: dict[str, str] | None = None,
                   tail: int | None = None, framework: str | None = None, **probes: Any) -> tuple[RunState, Verdict]:
    """The run read once and judged with every rule and every probe the TUI has (one disk
    sample: no growth rate yet). `probes` go to the `Engine` (gpu, proc_sampler, …). `tail`:
    read only each log's last `tail` bytes (said in the state's notes)."""
    reader = _read(path, processes=False, ckpt_dir=ckpt_dir, metrics=metrics, metrics_map=metrics_map, tail=tail, framework=framework)
    return reader.state, RunJudge(reader, cfg, disks=disks, processes=processes, **probes).verdict()


class RunJudge:
    """Judges a reader's state with the same engine the TUI runs: the rules over the run's
    processes, disks and GPUs (the TUI and `runtop check` agree on the same facts).

    Kept across check-ins (`runtop watch`), it remembers when each finding began and
    samples the disks often enough for a growth rate; used once, it is `runtop check`.
    """

    def __init__(self, reader: RunReader, cfg: Thresholds | None = None, *, disks: bool = True, processes: bool = True,
                 **probes: Any) -> None:
        self.reader = reader
        # No vLLM `/metrics` probe here: no rule reads it, and a check must not wait on a port.
        probes.setdefault("vllm_url", None)
        self.engine = Engine(reader.layout, run=OnceRun(reader), disks=disks, processes=processes, thresholds=cfg, **probes)
        self.tracker = self.engine.health

    def verdict(self) -> Verdict:
        return self.engine.probe_all()


def bound_to_tail(reader: RunReader, tail: int) -> None:
    """Start each log (not the metrics file: it numbers the attempts) `tail` bytes before its
    end when it is longer, and say so: the steps before are not in this answer."""
    import os

    cut = []
    for t in reader.layout.logs:
        try:
            size = os.path.getsize(t.path)
        except OSError:
            continue
        if size > tail:
            cut.append((t.path, size))
    if not cut:
        return
    for path, _ in cut:
        reader.seek_tail_of(path, tail)
    whole = sum(size for _, size in cut)
    reader.state.notes.append(
        f"read the last {tail >> 20} MB of {len(cut)} long log(s) ({whole / (1 << 30):.1f} GB in all): the verdict is the run's "
        "now; steps and errors before that are not counted (--full reads all of it)"
    )


def read_all(reader: RunReader) -> None:
    """Read every file to its end, in bounded chunks (no rescans: the layout is fresh)."""
    while True:
        before = reader.progress()[0]
        read = reader.poll(max_bytes=CHUNK, rescan_every=float("inf"), ckpt_every=float("inf"))
        # A chunk inside a 3 GB line hands on no line but moves on: only no bytes read at all
        # (a file vanished, or stopped growing short of its size) ends the reading early.
        if reader.done() or (not read and reader.progress()[0] == before):
            break  # done, or nothing more could be read: report what we have


def _read(path: str, *, processes: bool, ckpt_dir: str | None, metrics: list[str] | None = None,
          metrics_map: dict[str, str] | None = None, tail: int | None = None, framework: str | None = None) -> RunReader:
    reader = RunReader(with_metrics(with_ckpt_dir(discover(path, framework), ckpt_dir), metrics, metrics_map))
    if tail is not None:
        bound_to_tail(reader, tail)
    read_all(reader)
    if processes:
        look_at_processes(reader)
    return reader


def read_run_reader(path: str, *, ckpt_dir: str | None = None, **more: Any) -> RunReader:
    """The run's reader, every file read to its end (the processes are the engine's to sample)."""
    return _read(path, processes=False, ckpt_dir=ckpt_dir, **more)
