"""hooklab's modules import one another without a cycle, at the top of a module or inside a function: a reader follows
a submission from stage to stage without an import back up."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "src" / "hooklab"


def module_name(path: Path) -> str:
    return ".".join(("hooklab", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")


def imported(path: Path, modules: set[str]) -> set[str]:
    """The modules of the package that ``path`` imports anywhere in it (``from package import module`` counts as
    the module; a name from a package, as the package)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}
    return (found & modules) - {name}


def test_the_packages_imports_form_no_cycle():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    graph = {module_name(path): imported(path, modules) for path in paths}
    assert sum(map(len, graph.values())) > 100  # the walk found the package's imports
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        raise AssertionError(f"modules that import one another: {' → '.join(error.args[1])}") from None
