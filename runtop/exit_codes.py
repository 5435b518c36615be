"""runtop's exit codes, one meaning each for every command (the table is `runtop.cli.main`'s docstring)."""

EXIT_OK, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 70, 130
# `runtop check`: an Unknown is not a Healthy; a script must be able to tell.
CHECK_EXIT = {"Healthy": 0, "Finished": 0, "Degraded": 1, "Down": 2, "Unknown": 4}
EXIT_CANNOT_READ = 3
EXIT_READ_ONLY = 4
