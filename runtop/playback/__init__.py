"""Simulated runs played through runtop: a directory of them with mixed verdicts for the runs
table and the fleet benchmark (`fleet.py`), and one replayed through the engine on a simulated
clock with the pauses healthy runs have and a fault injected (`replay.py`, the detection
benchmark)."""
