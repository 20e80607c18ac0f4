"""The package's shape, as docs/architecture.md promises it: public modules at the root and
folders by role, no import cycle, modules small enough to read whole, one backoff policy."""

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
