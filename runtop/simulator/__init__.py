"""The stage a simulated run plays on (`runtop demo` and the tests: a user's clone has no
sample runs): a script player with pacing (`player.py`), the run's titled processes
(`processes.py`), simulated GPUs (`gpu.py`) and virtual processes and GPUs on a simulated clock
(`virtual.py`). Each plug-in's own simulator (`runtop/frameworks/<name>/sim.py`) plays on it."""
