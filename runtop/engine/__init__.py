"""The engine: the run's files read (`reader.py`: the fold of every followed file into the
state; `live.py`: tail first, history backfilled), the probes asked, the rules judged and a
frozen view published (`engine.py`). `snapshot.py` reads a run once and judges it with the same
engine (`status`, `check`). Nothing here imports Textual (docs/architecture.md, "Layers")."""
