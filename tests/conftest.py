from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import os
import sys
import time

import pytest

from runtop.frameworks.primerl.sim import Simulator

# pytest keeps each test module's rewritten code (and Python each module's bytecode) only where
# bytecode may be written: where the environment forbids it (PYTHONDONTWRITEBYTECODE), every run
# rewrites every test module again, half the CPU of collecting the inner loop.
sys.dont_write_bytecode = False

# Pictures and times must not depend on the zone of the machine running the tests (a time
# runtop takes from the wall clock is shown in local time).
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture
def simulated(tmp_path):
    """Write a whole simulated prime-rl run (main layout) and return its directory."""

    def make(scenario: str = "healthy", **kw) -> str:
        root = os.path.join(tmp_path, f"run-{scenario}")
        Simulator(root, scenario=scenario, **kw).run()
        return root

    return make


@pytest.fixture
def skyrl_run(tmp_path):
    """Write a whole simulated SkyRL run (driver log + checkpoint dir) and return its directory."""
    from runtop.frameworks.skyrl.sim import SkyrlSimulator

    def make(scenario: str = "healthy", **kw) -> str:
        root = os.path.join(tmp_path, f"skyrl-{scenario}")
        SkyrlSimulator(root, scenario=scenario, **kw).run()
        return root

    return make


# The live-run fixture of the action tests (a real tmux server and Launcher pane), shared
# with tests/live/test_action_proof.py.
from tests.live.test_actions import live_run  # noqa: E402, F401

# What makes a test `live` (pyproject.toml's markers): it starts something that runs beside it —
# a child process (runtop's own command line, a demo's processes, a fake launcher), a tmux
# server, a server on a socket (serve, export, mcp over HTTP, an alert receiver), or the whole
# Textual app under its pilot. Those tests wait on the clock and the scheduler more than they
# compute; `-m "not slow and not live"` is the inner loop without them (docs/architecture.md,
# "Tests"). A test is read, with the fixtures it asks for and the functions of tests/ it calls,
# down to three calls deep; `@pytest.mark.live` marks one by hand; every test under tests/live/
# is live by its folder.
# Read in the code only (names, attributes, parameters, imports), never in strings: a log line
# that says `multiprocessing/api.py` starts nothing.
LIVE_NAMES = frozenset({
    "subprocess", "Popen", "run_test", "sys.executable", "os.fork", "multiprocessing", "pty", "HTTPServer",
    "ThreadingHTTPServer", "serve_forever", "websocket", "websockets", "aiohttp", "stdio_client", "snap_compare",
    "DemoProcesses",
})


def _names(syntax: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(syntax):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
            if isinstance(n.value, ast.Name):
                out.add(f"{n.value.id}.{n.attr}")
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _imported(syntax: ast.AST) -> set[str]:
    """What the code imports where it stands (`import pty`, `from subprocess import Popen`)."""
    out: set[str] = set()
    for n in ast.walk(syntax):
        if isinstance(n, ast.Import):
            out.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            out.update(a.name for a in n.names)
            out.add((n.module or "").split(".")[0])
    return out


def _starts_something(names: set[str]) -> bool:
    return bool(names & LIVE_NAMES) or any("tmux" in n.lower() for n in names)


_live_source: dict[object, bool] = {}
TESTS = os.path.dirname(os.path.abspath(__file__))


def _ours(fn: object) -> bool:
    """A function or class of tests/ (the tests' modules import as `test_x`, not `tests.test_x`)."""
    try:
        return os.path.abspath(inspect.getsourcefile(fn) or "").startswith(TESTS + os.sep)  # type: ignore[arg-type]
    except TypeError:
        return False


@functools.lru_cache(maxsize=None)
def _definitions(path: str) -> tuple[dict[int, ast.AST], dict[str, ast.AST]]:
    """A file of tests/ parsed once: its functions by first line (a decorator's, if any), its
    classes by name."""
    functions: dict[int, ast.AST] = {}
    classes: dict[str, ast.AST] = {}
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[min([node.lineno, *(d.lineno for d in node.decorator_list)])] = node
        elif isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
    return functions, classes


def _definition(fn: object) -> ast.AST | None:
    """The syntax of a function or class of tests/."""
    path = inspect.getsourcefile(fn)  # type: ignore[arg-type]
    if path is None:
        return None
    functions, classes = _definitions(os.path.abspath(path))
    code = getattr(fn, "__code__", None)
    return functions.get(code.co_firstlineno) if code is not None else classes.get(getattr(fn, "__name__", ""))


def _calls_live(fn: object, depth: int = 3) -> bool:
    """Whether `fn`'s source, or that of a function or class of tests/ it names, starts
    something live."""
    key = (fn, depth)
    if key in _live_source:
        return _live_source[key]
    _live_source[key] = False  # a function that names itself is not read twice
    syntax = _definition(fn)
    if syntax is None:
        return False
    names = _names(syntax)
    found = _starts_something(names | _imported(syntax))
    if not found and depth:
        module = inspect.getmodule(fn)
        here = dict(vars(module)) if module is not None else {}
        for node in ast.walk(syntax):  # a helper imported inside the test (`from tests.launch_shapes import Shapes`)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                helpers = importlib.import_module(node.module or "")
                here.update({a.asname or a.name: getattr(helpers, a.name, None) for a in node.names})
        for name in sorted(names):
            other = here.get(name)
            other = getattr(other, "__wrapped__", other)
            if (inspect.isfunction(other) or inspect.isclass(other)) and other is not fn and _ours(other) and _calls_live(other, depth - 1):
                found = True
                break
    _live_source[key] = found
    return found


def _is_live(item) -> bool:
    # tests/live/ holds the modules whose tests start something: live by their folder, unread
    # (reading them, three calls deep through their fixtures, was a third of collecting).
    if item.get_closest_marker("live") is not None or item.nodeid.startswith("tests/live/"):
        return True
    fn = getattr(item, "function", None)
    if fn is None:
        return False
    if _calls_live(fn):
        return True
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    for name in item.fixturenames:
        for fixturedef in defs.get(name, ()):
            func = getattr(fixturedef, "func", None)
            if func is not None and _ours(func) and _calls_live(func):
                return True
    return False


def _tests_digest() -> str:
    """One hash of every module under tests/: what the reading of a test depends on."""
    h = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "corpus", "recordings"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def _live_ids(config, items) -> frozenset[str]:
    """The tests that start something, each read once for a given tests/ tree: the reading
    (every test's code, three calls deep) is kept in pytest's cache under the tree's hash, so a
    run of unchanged tests marks them without reading a line; a test not read before (a run of
    one file saved only its own) is read and added."""
    found = getattr(config, "_runtop_live_ids", None)
    if found is not None:
        return found
    key = _tests_digest()
    cache = getattr(config, "cache", None)  # None under `-p no:cacheprovider`
    saved = cache.get("runtop/live-tests", None) if cache is not None else None
    if not (isinstance(saved, dict) and saved.get("key") == key):
        saved = {"key": key, "read": [], "live": []}
    read, live = set(saved["read"]), set(saved["live"])
    new = [i for i in items if i.nodeid not in read]
    for item in new:
        read.add(item.nodeid)
        if _is_live(item):
            live.add(item.nodeid)
    if new and cache is not None:
        cache.set("runtop/live-tests", {"key": key, "read": sorted(read), "live": sorted(live)})
    found = frozenset(live)
    config._runtop_live_ids = found
    return found


def pytest_configure(config):
    """The inner loop (a marker expression that leaves `slow` out) reads in less: tests/inner.py."""
    import tests.inner

    tests.inner.INNER = "not slow" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    """Tests that start something live are marked `live` (above). The real-framework runs
    (tests/real/, marked `real`) train a genuine model for minutes: they run only when asked
    for by name (`pytest -m real`), never inside the main suite's command, whatever is
    installed."""
    for item in items:
        if item.get_closest_marker("live") is None and item.nodeid in _live_ids(config, items):
            item.add_marker(pytest.mark.live)
    if "real" in (config.getoption("-m") or ""):
        return
    keep = [i for i in items if i.get_closest_marker("real") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("real") is not None])
        items[:] = keep
