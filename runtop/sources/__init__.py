"""Sources own all I/O (files, /proc, NVML, tmux) and hand parsed events to the state."""
