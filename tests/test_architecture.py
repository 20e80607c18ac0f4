"""The package's shape, as docs/architecture.md promises it: public modules at the root and
folders by role, no import cycle between modules or folders, imports only down the layer
table, no private name read across folders, modules small enough to read whole, one backoff
policy."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "req_managed_agents"
ROOT_MODULES = {  # the public leaves and doors, and one private leaf: redaction
    "__init__.py",
    "_redact.py",
    "__main__.py",
    "errors.py",
    "telemetry.py",
    "otel.py",
    "sse.py",
    "eventstream.py",
}
MAX_LINES = 450
BACKOFF_MODULE = "req_managed_agents.transport._backoff"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every package module ``name`` imports: at the top, inside functions and under
    ``TYPE_CHECKING`` alike (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], base]).rstrip(".")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return cycles


def test_the_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # A parent package's __init__ runs before its children: that is not an edge we draw.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def _folder(name: str) -> str:
    """What a module belongs to in the layer table: its top folder (``providers/`` for
    ``providers.claude._feed``), or itself when it sits at the root (``errors.py``)."""
    top = name.split(".")[1] if "." in name else "__init__"
    return f"{top}/" if (PACKAGE / top).is_dir() else f"{top}.py"


def _folder_edges() -> dict[tuple[str, str], list[str]]:
    """Every import from one folder into another, with the modules that make it. The root's
    ``__init__`` and ``__main__`` are the doors, above every layer: left out."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        if _folder(name) in ("__init__.py", "__main__.py"):
            continue
        for target in _imports(name, path, modules):
            pair = (_folder(name), _folder(target))
            if pair[0] != pair[1] and pair[1] != "__init__.py":
                edges.setdefault(pair, []).append(f"{name} -> {target}")
    return edges


def test_no_two_folders_import_each_other() -> None:
    """A loop between folders hides from the module graph when no single module closes it
    (as when ``errors.py`` imported ``transport/_redact.py`` and ``transport/_aws.py`` imports
    ``errors``)."""
    edges = _folder_edges()
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    loops = _cycles(graph)
    assert loops == [], [
        edges[(a, b)] for loop in loops for a in loop for b in loop if (a, b) in edges
    ]


def _layers() -> dict[str, int]:
    """Each folder and root module the architecture page's layer table names, by its row
    (rows continuing a layer, with an empty first cell, share its number)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("## Layers", 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    ranks: dict[str, int] = {}
    rank = 0
    for row in table.splitlines()[2:]:
        layer, where = row.split("|")[1:3]
        rank += bool(layer.strip())
        for place in re.findall(r"`([^`]+)`", where):
            ranks.setdefault(place.split("/")[0] + "/" if "/" in place else place, rank)
    return ranks


def test_imports_go_only_down_the_layer_table() -> None:
    ranks = _layers()
    placed = {_folder(name) for name in _modules()} - {"__init__.py", "__main__.py"}
    assert placed - set(ranks) == set(), "folders and root modules the layer table leaves out"
    upward = [
        found
        for (source, target), found in sorted(_folder_edges().items())
        if ranks[target] > ranks[source]
    ]
    assert upward == []


def _private_names_defined(tree: ast.AST) -> set[str]:
    """The ``_names`` a module defines: functions, classes, variables and attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.endswith("__")}


def _private_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``obj._name`` on anything but ``self``/``cls``, and ``from module import _name``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        ):
            yield node.lineno, node.attr
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def test_no_folder_reads_a_private_name_of_another() -> None:
    """A private name is a folder's own business: another folder may import its private
    modules' public names, never a ``_name`` defined only elsewhere (a store's ``_read``,
    a ``Detach``'s ``_entry``)."""
    modules = _modules()
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules.items()}
    defined: dict[str, set[str]] = {}
    for name, tree in trees.items():
        defined.setdefault(_folder(name), set()).update(_private_names_defined(tree))
    elsewhere = set().union(*defined.values())
    offenders = []
    for name, tree in trees.items():
        own = defined[_folder(name)]
        for line, read in _private_reads(tree):
            if read in modules:
                continue  # a private module, imported: the package's own business
            private = read.rpartition(".")[2]
            if private.startswith("_") and private in elsewhere - own:
                offenders.append(f"{modules[name].relative_to(ROOT)}:{line} reads {private}")
    assert offenders == [], offenders


def test_the_root_holds_only_the_leaves_and_the_doors() -> None:
    root_modules = {path.name for path in PACKAGE.glob("*.py")}
    assert root_modules == ROOT_MODULES


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_a_module_is_small_enough_to_read_whole(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def _backoff_arithmetic(tree: ast.AST) -> Iterator[str]:
    """What computes a delay or reads a server's wait: randomness, growth by a power, and
    the ``retry-after`` header read by name."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "random" in names or (isinstance(node, ast.ImportFrom) and node.module == "random"):
                yield f"line {node.lineno}: imports random"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            if not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)):
                yield f"line {node.lineno}: raises to a computed power"
        elif isinstance(node, ast.Call) and any(
            isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and arg.value.lower().startswith("retry-after")
            for arg in node.args
        ):
            yield f"line {node.lineno}: reads retry-after"


def test_exactly_one_module_computes_a_backoff_delay() -> None:
    offenders = {
        name: list(_backoff_arithmetic(ast.parse(path.read_text(encoding="utf-8"))))
        for name, path in _modules().items()
        if not name.startswith("req_managed_agents.testing")  # emulators *send* retry-after
    }
    computing = {name: found for name, found in offenders.items() if found}
    assert set(computing) == {BACKOFF_MODULE}, computing


def test_every_retry_and_poll_loop_names_its_policy() -> None:
    """A policy is built once, at the top of its module, under a name that says what it
    paces; none is built inside a function."""
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, (ast.Name, ast.Attribute))
                and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
                in ("RetryPolicy", "poll")
                and name != BACKOFF_MODULE
            ):
                assert id(node) in top_level, (
                    f"{path.relative_to(ROOT)}:{node.lineno} builds a RetryPolicy inline"
                )


def test_the_architecture_page_matches_the_tree() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    folders = {
        str(path.parent.relative_to(PACKAGE)) + "/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    }
    named = set(re.findall(r"`((?:[a-z_]+/)+)`", page))
    assert folders - named == set(), "folders the page does not describe"
    assert named - folders == set(), "folders the page describes that do not exist"
