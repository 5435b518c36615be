"""The command line: the argument parser (`args.py`), the one-shot commands and the exit codes
(`main.py`), and a module per family of commands. Headless paths never import Textual."""
