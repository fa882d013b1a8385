"""The package's layout rules, read from its source: no import cycles at import time, and the
expected-calls check's modules kept small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

import toolscore

PACKAGE = Path(toolscore.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_statements(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: its top level, and inside ``if``/``try``/
    ``with`` blocks there, but not under ``if TYPE_CHECKING:`` nor inside functions or classes
    (a function-level import runs at a call, after every module has loaded)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _import_time_statements(node.body)
            found += _import_time_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                found += _import_time_statements(block)
            for handler in node.handlers:
                found += _import_time_statements(handler.body)
        elif isinstance(node, ast.With):
            found += _import_time_statements(node.body)
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package modules an import statement names (a submodule named by ``from P import m``
    included). A module's own parent packages are left out: they are always initialised first,
    so a package's ``__init__`` importing its submodules is no cycle."""
    named: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            prefixes = (".".join(parts[:i]) for i in range(len(parts), 0, -1))
            named.update(next((p for p in prefixes if p in MODULES), "").split()[:1])
    else:
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            named.add(sub if sub in MODULES else base)
    ancestors = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
    return {name for name in named if name in MODULES and name != module} - ancestors


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges: set[str] = set()
        for node in _import_time_statements(tree.body):
            edges |= _targets(module, node)
        graph[module] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph[node]):
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                found = visit(nxt)
                if found:
                    return found
        on_path.discard(node)
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_is_read_from_the_source() -> None:
    graph = _graph()
    # a few edges that exist, so the reading cannot silently find nothing
    assert "toolscore.calls" in graph["toolscore.pipeline"] | graph["toolscore.result"]
    assert any("toolscore.checks.expected" in edges for edges in graph.values())
    assert sum(len(edges) for edges in graph.values()) > 100


def test_no_import_cycles_at_import_time() -> None:
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_expected_calls_modules_stay_under_600_lines() -> None:
    folder = PACKAGE / "checks" / "expected"
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert len(sizes) >= 5
    assert max(sizes.values()) <= 600, sizes


def test_tests_use_no_underscore_attributes() -> None:
    """A test goes through what a module offers: no ``obj._name`` on another object (a test
    class's own ``self._x`` and dunders aside), no private name imported from a module."""
    tests = Path(__file__).parent
    touched = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                touched.append(f"{path.relative_to(tests)}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolscore"):
                # a package's private module may be imported; a module's private name may not
                touched += [
                    f"{path.relative_to(tests)}:{node.lineno}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                    and not alias.name.startswith("__")
                    and f"{node.module}.{alias.name}" not in MODULES
                ]
    assert touched == []
