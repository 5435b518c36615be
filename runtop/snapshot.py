"""Read a whole run once (headless `runtop status`): discover, read every file, look at processes."""

from __future__ import annotations

from runtop.discovery import discover
from runtop.sources.processes import run_processes
from runtop.sources.run_reader import RunReader
from runtop.state import RunState


def read_run(path: str, *, processes: bool = True) -> RunState:
    reader = RunReader(discover(path))
    reader.poll(rescan_every=0.0, ckpt_every=0.0)
    while not reader.done():
        if not reader.poll(rescan_every=float("inf"), ckpt_every=float("inf")):
            break  # nothing more could be read (a file vanished): report what we have
    if processes:
        reader.state.processes = run_processes(reader.layout.root)
    return reader.state
