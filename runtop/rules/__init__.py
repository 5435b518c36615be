"""The rules: facts in (`findings.Facts`: the state, the probes' readings, what the engine
keeps over time), findings and one `Verdict` out (`health.py`), and the next step in words
(`advice.py`, `resumable.py`). `registry.RULES` lists every rule in its order of precedence; a
long rule lives in a module of its own here (docs/architecture.md, "Adding a rule")."""
