"""The run's state: `RunState` (`run.py`), the one writer of what was read, with the reducers
that fold each parsed event into it (`steps.py`, `rollouts.py`, `errors.py`, `meta.py`), its typed
parts (`parts.py`), a death's root cause (`causes.py`) and the Logs pane's tail (`log_tail.py`).
It imports the parsers and nothing else of runtop's (docs/architecture.md, "Layers")."""
