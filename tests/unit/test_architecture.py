"""The layers of runtop, as an import contract (docs/architecture.md, "Layers").

Every module's imports are read from its syntax tree (nothing is imported or run), each as one
of three kinds: `top` runs when the module is imported, `type` only under `if TYPE_CHECKING:`,
`lazy` inside a function. Four arrows must never be drawn, of any kind; import circles and
arrows that run back up a layer are counted, and today's numbers are a ceiling: a new one fails
and the message draws them all. `python tests/unit/test_architecture.py` prints the same drawing.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.paths import REPO

# Bottom first: a module may import its own layer and the layers below it. An import of a layer
# above is an arrow running back up. Names are module paths under `runtop.`; a package names
# every module in it; the longest name that fits a module wins.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("parsers", ("parsers",)),  # pure: text in, typed events out (and the metric registry, parsers/columns.py)
    ("base", ("runtop", "units", "exit_codes", "action_error", "queues")),  # leaves: no I/O, no runtop imports
    ("sources", ("sources", "config")),  # all I/O: files, /proc, NVML, df, tmux, HTTP, squeue; the config file
    ("state", ("state",)),  # RunState and its reducers
    ("simulator", ("simulator",)),  # the stage a simulated run plays on: its processes, GPUs, clock
    ("frameworks", ("frameworks",)),  # the plug-ins, their registry and discovery
    ("rules", ("rules",)),  # facts in, findings and one Verdict out; the next step
    ("view", ("view",)),  # the frozen, versioned views a screen renders
    ("probes", ("probes",)),  # the system probes on the seam
    ("outputs", ("outputs",)),  # what a verdict becomes: check-in, JSON, alerts, forensics
    ("engine", ("engine",)),  # read, probe, judge, publish
    ("actions", ("actions",)),  # what runtop may send to a run
    ("faces", ("fleet", "mcp", "serve", "playback")),  # many runs, Prometheus, MCP, the browser, simulated runs played
    ("widgets", ("widgets",)),
    ("tui", ("tui",)),
    ("cli", ("cli", "__main__")),
]

ENGINE = ("runtop.engine", "runtop.view", "runtop.probes")
# The engine is the only way to a verdict: the rules are evaluated (a `HealthTracker`, or the
# one-evaluation `judge`) by the engine alone, and every face takes the verdict it judged.
JUDGING = ("runtop.rules.health.HealthTracker", "runtop.rules.health.judge")
JUDGES = ("runtop.engine.engine", "runtop.rules.health")
TEXTUAL = ("textual", "runtop.tui", "runtop.widgets")


@dataclass(frozen=True)
class Never:
    """An arrow that must not be drawn, of any kind: from modules under `importers` to a
    module under `targets`, except the modules under `allowed`."""

    rule: str
    importers: tuple[str, ...]
    targets: tuple[str, ...]
    allowed: tuple[str, ...] = ()


NEVER = [
    Never("parsers import nothing from runtop outside parsers", ("runtop.parsers",), ("runtop",), allowed=("runtop.parsers",)),
    Never("sources never reach the widgets, the app or Textual", ("runtop.sources",), TEXTUAL),
    Never("the engine never imports Textual, the app or a widget", ENGINE, TEXTUAL),
    Never("widgets never import a source (they read a View)", ("runtop.widgets",), ("runtop.sources",)),
]

# Known breaches, each to be removed, never added to: none (docs/architecture.md, "The tree today").
KNOWN: set[tuple[str, str]] = set()

# Today's numbers (docs/architecture.md, "The tree today"): no circle and no arrow running back
# up; a change may keep them there, never raise them.
CEILING = {
    "circles at import time": 0,
    "circles at module level (with TYPE_CHECKING imports)": 0,
    "modules in those circles": 0,
    "circles with lazy imports": 0,
    "modules in those circles (lazy)": 0,
    "arrows running back up": 0,
    "layer pairs running back up": 0,
}


@dataclass(frozen=True)
class Arrow:
    importer: str
    target: str
    kind: str  # top, type or lazy
    line: int
    name: str = ""  # the dotted name as imported (`runtop.rules.health.judge`)


@dataclass
class Tree:
    modules: dict[str, Path]
    arrows: list[Arrow] = field(default_factory=list)

    def internal(self, kinds: tuple[str, ...]) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = defaultdict(set)
        for a in self.arrows:
            if a.kind in kinds and a.target in self.modules and a.target != a.importer:
                graph[a.importer].add(a.target)
        return graph


def folders(repo: Path) -> dict[str, Path]:
    """Each installed package's source folder, as pyproject.toml maps them (runtop.parsers →
    parsers/, …)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    tool = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: repo / folder for name, folder in tool["package-dir"].items()}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@functools.lru_cache(maxsize=None)
def _imports(name: str, is_package: bool, text: str) -> tuple[tuple[str, str, int], ...]:
    """Each dotted name a module's text imports, with its kind and line (cached by the text: a
    copy of the tree parses only the files that differ)."""
    found: list[tuple[str, str, int]] = []

    def walk(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and kind == "top" and _type_checking(child.test):
                for stmt in child.body:
                    walk(ast.Module(body=[stmt], type_ignores=[]), "type")
                for stmt in child.orelse:
                    walk(ast.Module(body=[stmt], type_ignores=[]), kind)
            elif isinstance(child, ast.Import):
                found.extend((a.name, kind, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name.split(".") if is_package else name.split(".")[:-1]
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join([*package, *([base] if base else [])])
                found.extend((f"{base}.{a.name}", kind, child.lineno) for a in child.names)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, "lazy")
            else:
                walk(child, kind)

    walk(ast.parse(text), "top")
    return tuple(found)


def read_tree(repo: Path) -> Tree:
    modules: dict[str, tuple[Path, bool]] = {}
    for package, folder in folders(repo).items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            modules[".".join([package, *parts])] = (path, is_package)
    tree = Tree({name: path for name, (path, _) in modules.items()})

    def target(name: str) -> str:
        # The longest known module a dotted name falls in (`a.b.C` → `a.b`), else its top
        # package (`textual.app` → `textual`).
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in tree.modules:
                return ".".join(parts[:n])
        return parts[0]

    for name, (path, is_package) in modules.items():
        tree.arrows += [Arrow(name, target(dotted), kind, line, dotted) for dotted, kind, line in _imports(name, is_package, path.read_text())]
    return tree


def circles(graph: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(found)


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer(module: str) -> tuple[int, str] | None:
    short = module.removeprefix("runtop.") if module != "runtop" else "runtop"
    best: tuple[int, int, str] | None = None
    for rank, (name, members) in enumerate(LAYERS):
        for m in members:
            fits = short.startswith(m[:-1]) and "." not in short if m.endswith("*") else short == m or short.startswith(m + ".")
            if fits and (best is None or len(m) > best[1]):
                best = (rank, len(m), name)
    return None if best is None else (best[0], best[2])


def breaches(tree: Tree) -> list[str]:
    out = []
    for a in tree.arrows:
        for never in NEVER:
            if _under(a.importer, never.importers) and _under(a.target, never.targets) and not _under(a.target, never.allowed):
                if (a.importer, a.target) not in KNOWN:
                    out.append(f"{never.rule}: {a.importer} → {a.target} ({a.kind}, line {a.line})")
    return sorted(set(out))


def upward(tree: Tree) -> list[tuple[str, str, str]]:
    """Each (importer, target) pair importing a layer above its own, with the kinds it is
    imported by."""
    kinds: dict[tuple[str, str], set[str]] = defaultdict(set)
    for a in tree.arrows:
        here, there = layer(a.importer), layer(a.target)
        if a.target in tree.modules and here and there and there[0] > here[0]:
            kinds[(a.importer, a.target)].add(a.kind)
    return sorted((i, t, "+".join(sorted(k))) for (i, t), k in kinds.items())


@dataclass
class Measure:
    numbers: dict[str, int]
    drawing: str


def measure(tree: Tree) -> Measure:
    nodes = sorted(tree.modules)
    at_import = circles(tree.internal(("top",)), nodes)
    module_level = circles(tree.internal(("top", "type")), nodes)
    with_lazy = circles(tree.internal(("top", "type", "lazy")), nodes)
    up = upward(tree)
    numbers = {
        "circles at import time": len(at_import),
        "circles at module level (with TYPE_CHECKING imports)": len(module_level),
        "modules in those circles": sum(map(len, module_level)),
        "circles with lazy imports": len(with_lazy),
        "modules in those circles (lazy)": sum(map(len, with_lazy)),
        "arrows running back up": len(up),
        "layer pairs running back up": len({(layer(i), layer(t)) for i, t, _ in up}),
    }
    lines = [f"{k}: {v} (ceiling {CEILING[k]})" for k, v in numbers.items()]
    for title, found in (("circles at import time", at_import), ("circles at module level", module_level), ("circles closed by lazy imports", with_lazy)):
        lines.append(f"{title}:")
        lines += [f"  {len(c)} modules: " + " ".join(m.removeprefix("runtop.") for m in c) for c in found] or ["  none"]
    lines.append("arrows running back up (importer [layer] → target [layer], kinds):")
    for importer, target, kinds in up:
        lines.append(f"  {importer} [{layer(importer)[1]}] → {target} [{layer(target)[1]}]  {kinds}")
    return Measure(numbers, "\n".join(lines))


def over_ceiling(m: Measure) -> list[str]:
    return [f"{k}: {v} > {CEILING[k]}" for k, v in m.numbers.items() if v > CEILING[k]]


@pytest.fixture(scope="module")
def tree() -> Tree:
    return read_tree(REPO)


def test_every_module_has_a_layer(tree):
    """A new module is placed in a layer (LAYERS above, docs/architecture.md) before it lands."""
    loose = sorted(m for m in tree.modules if layer(m) is None)
    assert not loose, f"modules in no layer (add them to LAYERS): {loose}"
    assert len(tree.modules) > 150, "the walk found too few modules to be reading the package"


def test_no_arrow_that_must_never_be_drawn(tree):
    found = breaches(tree)
    assert not found, "\n".join(found)


def test_the_known_breaches_are_still_there(tree):
    """A breach fixed is taken off KNOWN, so it cannot come back unseen."""
    present = {(a.importer, a.target) for a in tree.arrows}
    assert KNOWN <= present, f"fixed: take off KNOWN: {sorted(KNOWN - present)}"


def judged_elsewhere(tree: Tree) -> list[str]:
    return sorted({f"{a.importer} → {a.name} ({a.kind}, line {a.line})" for a in tree.arrows if a.name in JUDGING and a.importer not in JUDGES})


def test_the_engine_is_the_only_way_to_a_verdict(tree):
    """No face judges a run beside the engine (docs/architecture.md, "Layers"): `status`, `check`,
    `follow`, `watch`, the TUI, a check-in sent as an action and the MCP tools all show the
    verdict one engine judged, with every probe's facts."""
    found = judged_elsewhere(tree)
    assert not found, "judge through the engine (snapshot.read_and_judge, Engine.verdict):\n" + "\n".join(found)


def test_importing_the_engine_loads_no_textual(tree):
    """Whatever the engine imports at import time, and whatever that imports: `status`, `check`
    and `export` never load Textual."""
    graph = tree.internal(("top",))
    external = defaultdict(set)
    for a in tree.arrows:
        if a.kind == "top":
            external[a.importer].add(a.target)
    seen: set[str] = set()
    todo = [m for m in tree.modules if _under(m, ENGINE)]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph.get(m, ())
    reached = sorted({t for m in seen for t in external[m] if _under(t, TEXTUAL)} | {m for m in seen if _under(m, TEXTUAL)})
    assert not reached, f"the engine loads {reached}"


# tomli is tomllib before Python 3.11.
STDLIB = set(sys.stdlib_module_names) | {"__future__", "tomli"}


def test_parsers_use_the_standard_library_only(tree):
    """Parsers are pure (docs/design.md, "One direction"): nothing installed, nothing of runtop's."""
    outside = sorted({f"{a.importer} → {a.target}" for a in tree.arrows if _under(a.importer, ("runtop.parsers",)) and a.target.split(".")[0] not in STDLIB and not _under(a.target, ("runtop",))})
    assert not outside, outside


def test_no_new_circle_and_no_new_arrow_running_back_up(tree):
    m = measure(tree)
    over = over_ceiling(m)
    assert not over, "\n".join(["over the ceiling:", *over, "", m.drawing])


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    for folder in ("runtop", "parsers", "widgets", "tui"):
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def _plant(path: Path, line: str) -> None:
    text = path.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest if sep else line + "\n" + text)


def test_a_planted_violation_fails_the_contract(tmp_path):
    """The contract can fail: a copy of the tree with a source importing a widget, a parser
    importing a helper of runtop's, the engine importing Textual inside a function, and the state
    importing the view (a circle at import time, running back up) breaks each rule, and the
    message names each arrow."""
    copy = _copy(tmp_path)
    clean = measure(read_tree(copy))
    assert not breaches(read_tree(copy)) and not over_ceiling(clean)

    _plant(copy / "runtop" / "sources" / "walk.py", "from runtop.widgets.pane import Pane  # noqa")
    _plant(copy / "parsers" / "text.py", "from runtop.units import duration  # noqa")
    (copy / "runtop" / "view" / "publish.py").write_text((copy / "runtop" / "view" / "publish.py").read_text() + "\n\ndef _planted():\n    import textual.app  # noqa\n")
    _plant(copy / "runtop" / "state" / "parts.py", "from runtop.view.view import View  # noqa")
    _plant(copy / "runtop" / "outputs" / "report.py", "from runtop.rules.health import judge  # noqa")
    planted = read_tree(copy)
    assert [j.split(" (")[0] for j in judged_elsewhere(planted)] == ["runtop.outputs.report → runtop.rules.health.judge"]

    found = "\n".join(breaches(planted))
    assert "sources never reach the widgets, the app or Textual: runtop.sources.walk → runtop.widgets.pane (top" in found
    assert "parsers import nothing from runtop outside parsers: runtop.parsers.text → runtop.units (top" in found
    assert "the engine never imports Textual, the app or a widget: runtop.view.publish → textual (lazy" in found

    m = measure(planted)
    over = over_ceiling(m)
    assert "circles at import time: 1 > 0" in over
    assert any(o.startswith("arrows running back up:") for o in over)
    assert "runtop.state.parts [state] → runtop.view.view [view]  top" in m.drawing
    circle = next(line for line in m.drawing.splitlines() if "modules:" in line)
    assert "state.parts" in circle and "view.view" in circle


def test_a_module_in_no_layer_is_named(tmp_path):
    copy = _copy(tmp_path)
    (copy / "runtop" / "stray.py").write_text('"""A module someone forgot to place."""\n')
    assert [m for m in read_tree(copy).modules if layer(m) is None] == ["runtop.stray"]


# Comments point at docs/ (docs/architecture.md): never at an issue's number or a document that is
# not in the repository, and every pointer leads somewhere.
CITED = ("runtop", "parsers", "widgets", "tui", "tests", "benchmarks")
NOT_HERE = re.compile(r"\b[Ii]ssue #?\d+|\bDESIGN\.md|\bFORMATS\.md|\.\./shared|\bseeds/")
POINTER = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+)|, \"([^\"]+)\")?")


def _cited_files() -> list[Path]:
    files = [REPO / "pyproject.toml", REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for folder in CITED:
        files += [p for p in sorted((REPO / folder).rglob("*.py")) if "corpus" not in p.relative_to(REPO).parts]
    return files


def test_comments_cite_no_issue_numbers_and_no_document_outside_the_repository():
    found = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in _cited_files() for n, line in enumerate(p.read_text().splitlines(), 1) if NOT_HERE.search(line)]
    assert not found, "cite docs/ instead:\n" + "\n".join(found)


def _anchors(doc: str) -> set[str]:
    ids = set(re.findall(r'<a id="([\w-]+)"', doc))
    for heading in re.findall(r"^#+ (.+)$", doc, re.M):
        ids.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return ids


def test_every_pointer_into_docs_leads_somewhere():
    """`docs/design.md, "Advice that would work"` names words of that page; `docs/incidents.md#…`
    one of its anchors: a page renamed or a section retitled leaves no pointer dangling."""
    docs = {p.name: p.read_text() for p in (REPO / "docs").glob("*.md")}
    broken = []
    for p in _cited_files():
        for n, line in enumerate(p.read_text().splitlines(), 1):
            for page, anchor, words in POINTER.findall(line):
                where = f"{p.relative_to(REPO)}:{n}: docs/{page}"
                if page not in docs:
                    broken.append(f"{where}: no such page")
                elif anchor and anchor not in _anchors(docs[page]):
                    broken.append(f"{where}#{anchor}: no such anchor")
                elif words and words.lower() not in docs[page].lower():
                    broken.append(f'{where}, "{words}": no such words there')
    assert not broken, "\n".join(broken)


if __name__ == "__main__":
    print(measure(read_tree(REPO)).drawing)
