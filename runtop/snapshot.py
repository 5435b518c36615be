"""Read a whole run once (headless `runtop status`): discover, read every file, look at processes."""

from __future__ import annotations

from runtop.discovery import discover, with_ckpt_dir
from runtop.sources.processes import run_processes
from runtop.sources.run_reader import RunReader
from runtop.state import RunState

# Read in bounded chunks: memory holds one chunk of lines at a time, never a whole log.
CHUNK = 4 << 20


def read_run(path: str, *, processes: bool = True, ckpt_dir: str | None = None) -> RunState:
    reader = RunReader(with_ckpt_dir(discover(path), ckpt_dir))
    # One pass: no rescans (the layout is fresh); checkpoints are listed on the first poll.
    while True:
        read = reader.poll(max_bytes=CHUNK, rescan_every=float("inf"), ckpt_every=float("inf"))
        if reader.done() or not read:
            break  # done, or nothing more could be read (a file vanished): report what we have
    if processes:
        reader.state.processes = run_processes(reader.layout.root, [t.path for t in reader.layout.logs])
    return reader.state
