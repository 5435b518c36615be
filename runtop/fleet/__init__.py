"""Many runs at once: the runs table's engines, stepped gently by one thread (`runs.py`), runs
side by side (`compare.py`) and their judgment as Prometheus metrics (`exporter.py`)."""
