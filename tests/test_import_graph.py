"""The import graph of engine/ and app/: no cycle at run time, few imports hidden in functions.

import-linter's contracts (pyproject.toml) say which room may import which; they do not see a
cycle inside one room, and a function-level import is the usual way such a cycle hides. This
walks every module's syntax tree — imports inside functions included, ``if TYPE_CHECKING:``
blocks excluded (they never run) — builds the module graph and fails on any strongly connected
component, naming its modules. It also caps the number of function-level imports of the
project's own modules: one belongs there only to defer a heavy optional dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "app")
# Imports of engine/ or app/ modules inside function bodies. Lower it as they go; never raise it.
MAX_FUNCTION_LEVEL_IMPORTS = 80  # issue 35 asks at most 80; 68 when it was set


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


Found = tuple[ast.Import | ast.ImportFrom, bool]


def _imports(tree: ast.Module) -> Iterator[Found]:
    """Every import statement that runs, and whether it sits inside a function."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[Found]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    yield from walk(other, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            yield from walk(child, inner)

    yield from walk(tree, False)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement may load: for ``from a import b``, ``a.b`` first
    (a submodule) then ``a``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """(module -> the project modules it imports, [(module, target) imported in a function])."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    in_functions: list[tuple[str, str]] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, in_function in _imports(tree):
            names = _targets(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):  # a submodule named, else the package itself
                named = {_resolve(n, modules) for n in names[:-1]} - {None, module}
                found = named or {_resolve(names[-1], modules)} - {None, module}
            else:
                found = {_resolve(n, modules) for n in names} - {None, module}
            for target in sorted(t for t in found if t is not None):
                if target.split(".")[0] not in PACKAGES:
                    continue
                edges[module].add(target)
                if in_function:
                    in_functions.append((module, target))
    return edges, in_functions


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_engine_and_app_have_no_import_cycle_at_run_time() -> None:
    edges, _ = import_graph()
    assert cycles(edges) == []


def test_the_cycle_finder_sees_a_cycle_hidden_in_a_function() -> None:
    # The check itself can fail: a -> b at module level, b -> a inside a function.
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_function_level_imports_of_the_project_stay_few() -> None:
    _, in_functions = import_graph()
    assert len(in_functions) <= MAX_FUNCTION_LEVEL_IMPORTS, (
        f"{len(in_functions)} imports of engine/app modules inside functions "
        f"(at most {MAX_FUNCTION_LEVEL_IMPORTS}): import at module level unless the import "
        "defers a heavy optional dependency"
    )
