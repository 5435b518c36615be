"""The README's two commands are what CI runs and what a new user types."""

from __future__ import annotations

from tests.paths import REPO

ROOT = REPO


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "pytest" in ci and ci in readme.splitlines()


def test_readme_has_the_demo_command():
    assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/runtop demo" in (ROOT / "README.md").read_text()


def test_the_readme_names_every_demo_scenario_the_help_lists():
    """`demo --help` listed `node-nccl-timeout`; the README did not."""
    import re

    from runtop.frameworks import simulated

    readme = (ROOT / "README.md").read_text()
    missing = [f"{fw.name}: {s}" for fw in simulated() for s in fw.scenarios if not re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", readme)]
    assert not missing, missing


def test_every_package_is_installed():
    """`pip install .` (the README's demo command) installs the packages setup.py finds: a folder
    of modules without an `__init__.py` imports in the editable checkout and nowhere else."""
    import runpy
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set(runpy.run_path(str(ROOT / "setup.py"), run_name="packages")["PACKAGES"])
    dirs = {name: ROOT / folder for name, folder in tool["package-dir"].items()}
    with_modules = set()
    for name, folder in dirs.items():
        for module in folder.rglob("*.py"):
            if "__pycache__" not in module.parts:
                with_modules.add(".".join((name, *module.parent.relative_to(folder).parts)))
    assert with_modules <= found, f"folders of modules setup.py does not find (no __init__.py?): {sorted(with_modules - found)}"


def test_the_json_schema_names_every_metric_of_the_registry():
    """The metric registry drives the JSON step row; the README's schema says so,
    and this keeps the two equal: a metric added to `runtop.parsers.columns` is documented."""
    from runtop.parsers.columns import METRICS

    readme = (ROOT / "README.md").read_text()
    steps_row = next(line for line in readme.splitlines() if line.startswith("| `steps` |"))
    missing = [m.name for m in METRICS if f"`{m.name}`" not in steps_row]
    assert not missing, f"README's `steps` row lacks {missing}"
