"""The vetted actions: the one allowlisted registry of what runtop may send to a run's tmux
Launcher window (`vetted.py`), the run an action is planned for (`context.py`), the launch
command a resume types (`launch_command.py`, `launcher.py`), SLURM's own (`slurm.py`), and the
one module that types into tmux (`dispatch.py`)."""
