"""The README's two commands are what CI runs and what a new user types."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "pytest" in ci and ci in readme.splitlines()


def test_readme_has_the_demo_command():
    assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/runtop demo" in (ROOT / "README.md").read_text()
