"""Sources own all I/O, bounded and with deadlines: files (the tailer, the scan stage), /proc,
NVML, df, tmux, HTTP, squeue and the Ray state API; every write under a run dir or the temp dir
(`writes.py`) and what of the run dir is believed (`trust.py`); the run's processes over time
(`lifetimes.py`, `process_watch.py`). What they read goes to the parsers and the state through
the engine's reader (`runtop.engine.engine.reader`)."""
