"""The packages to install, found: every package under runtop/, and the three top-level folders
that install inside it (pyproject.toml's `package-dir` maps runtop.parsers to parsers/, …)."""

import os

from setuptools import find_packages, setup

PACKAGES = [*find_packages(os.path.dirname(os.path.abspath(__file__)), include=["runtop", "runtop.*"]), "runtop.parsers", "runtop.widgets", "runtop.tui"]

if __name__ == "__main__":
    setup(packages=PACKAGES)
