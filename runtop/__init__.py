"""runtop: a live terminal monitor for reinforcement-learning training runs."""

__version__ = "0.1.0"
