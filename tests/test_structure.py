"""The layout's import rules, so that they cannot erode one import at a time.

- imports run one way: `providers` builds on `offerings`, and `offerings` never imports
  `providers`, in any form (module level, inside a function, or through `import_module`). The
  settings package `gpucatalog/`, which wires the two together, is outside the rule;
- the packages import each other in no loop. The graph is of module-level imports only (those
  run when a module is first imported; an import inside a function, as Django apps commonly
  make to reach a model or a view late, runs later and closes no loop at import time, and an
  `if TYPE_CHECKING:` block never runs). Its units are the subpackages of `offerings/` and
  `providers/` (`offerings.estimator`, `providers.scrapers`, ...) and each module standing
  directly in `offerings/` or `providers/` on its own: `offerings/` holds both `models.py`,
  which every subpackage builds on, and `urls.py`, which includes every subpackage's URLs, so
  taken as one unit it would close a loop with every subpackage by its nature. No module is in
  a loop of module-level imports either.

The limits of issue 18 (modules directly in `offerings/`, lines per module and in the settings,
characters per line of template markup) are retired.
"""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
OFFERINGS = ROOT / "offerings"
PACKAGES = ("offerings", "providers")


# -- offerings never imports providers ------------------------------------------------------------


def imported_modules(source: str) -> set[str]:
    """Every module an `import`, a `from ... import` or an `import_module("...")` names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def imports_providers(source: str) -> set[str]:
    return {
        name
        for name in imported_modules(source)
        if name == "providers" or name.startswith("providers.")
    }


def test_the_import_scan_sees_every_form():
    assert imports_providers("import providers.registry") == {"providers.registry"}
    assert imports_providers("from providers import tasks") == {"providers"}
    assert imports_providers("def f():\n    from providers.http import client\n") == {
        "providers.http"
    }
    assert imports_providers("importlib.import_module('providers.replay')") == {"providers.replay"}
    assert not imports_providers("from offerings import services\nimport providers_x")


def test_offerings_never_imports_providers():
    found = {
        str(path.relative_to(ROOT)): sorted(names)
        for path in sorted(OFFERINGS.rglob("*.py"))
        if (names := imports_providers(path.read_text(encoding="utf-8")))
    }
    assert not found, f"offerings imports providers: {found}"


# -- no import loop ------------------------------------------------------------------------------


def project_files() -> dict[str, Path]:
    """Every module of offerings/ and providers/ by dotted name (a package's is its __init__.py)."""
    files = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def project_modules() -> dict[str, bool]:
    """Every module of offerings/ and providers/ by dotted name: whether it is a package."""
    return {name: path.name == "__init__.py" for name, path in project_files().items()}


def is_type_checking(test: ast.expr) -> bool:
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def module_level_imports(tree: ast.Module):
    """The import statements that run when the module is imported: none inside a function (or a
    lambda), none in an `if TYPE_CHECKING:` block; those in class bodies, `try` and `if` do."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            stack.extend(reversed(node.orelse))
        else:
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def module_imports(name: str, source: str, modules: dict[str, bool]) -> set[str]:
    """The project modules `name` imports at module level: `from a import b` names the module
    `a.b` if there is one, else `a`; relative imports are resolved; the packages an import runs
    on the way count too; modules outside offerings/ and providers/ are left out."""
    package = name if modules.get(name) else name.rpartition(".")[0]
    found = set()
    for node in module_level_imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    # `import a.b.c` runs a/__init__.py and a/b/__init__.py first, unless they are the
    # importer's own packages: those are imported before it, or are importing it.
    for module in list(found):
        parts = module.split(".")
        found.update(
            ancestor
            for ancestor in (".".join(parts[:end]) for end in range(1, len(parts)))
            if not name.startswith(f"{ancestor}.")
        )
    return {module for module in found if module in modules and module != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports at module level."""
    modules = project_modules()
    return {
        name: module_imports(name, path.read_text(encoding="utf-8"), modules)
        for name, path in project_files().items()
    }


def unit(module: str, modules: dict[str, bool]) -> str:
    """The subpackage a module belongs to, or the module itself if it stands directly in
    offerings/ or providers/ (see the module docstring)."""
    package = module if modules[module] else module.rpartition(".")[0]
    return package if "." in package else module


def unit_graph(graph: dict[str, set[str]], modules: dict[str, bool]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, imported in graph.items():
        for other in imported:
            if unit(module, modules) != unit(other, modules):
                units.setdefault(unit(module, modules), set()).add(unit(other, modules))
    return units


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The loops of a graph: its strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def edges_within(cycle: list[str], graph: dict[str, set[str]]) -> list[str]:
    return [f"{a} -> {b}" for a in cycle for b in sorted(graph.get(a, ())) if b in cycle]


def imports_across(cycle: list[str], graph: dict[str, set[str]], modules: dict[str, bool]):
    """The module-level imports that join the units of a loop: what to move to break it."""
    return [
        f"{module} -> {other}"
        for module in sorted(graph)
        for other in sorted(graph[module])
        if unit(module, modules) in cycle
        and unit(other, modules) in cycle
        and unit(module, modules) != unit(other, modules)
        and not any(name.startswith(f"{other}.") for name in graph[module])  # a.b.c: a.b
    ]


def test_the_graph_sees_module_level_imports_only():
    modules = {
        "app": True,
        "app.models": False,
        "app.urls": False,
        "app.views": False,
        "app.forms": False,
        "app.admin": False,
        "app.api": True,
        "app.api.views": False,
    }
    source = """
from typing import TYPE_CHECKING

from app import models, helpers
from . import views as _views
from .api.views import handler

try:
    import app.forms
except ImportError:
    pass

class Form:
    import app.api

def late():
    from app.urls import urlpatterns

if TYPE_CHECKING:
    from app.admin import site
"""
    assert module_imports("app.views", source, modules) == {
        "app",  # `helpers` is no module: a name app/__init__.py defines
        "app.models",
        "app.api.views",
        "app.api",  # imported by the class body, and run before app.api.views anyway
        "app.forms",
    }
    # Importing app.api.views runs app/api/__init__.py first, unless it is the importer's own.
    assert module_imports("app.urls", "from app.api.views import handler", modules) == {
        "app.api",
        "app.api.views",
    }
    assert module_imports("app.api.views", "from .. import models\nfrom . import x", modules) == {
        "app.models",
        "app.api",
    }
    # Naming its own package is an import of it, though: a loop if app/api/__init__.py imports
    # app.api.views.
    assert module_imports("app.api.views", "from app.api import x", modules) == {"app.api"}
    assert module_imports("app.api", "from .views import handler", modules) == {"app.api.views"}


def test_the_cycle_search_finds_each_loop_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}}
    assert cycles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []
    modules = {
        "app": True,
        "app.models": False,
        "app.urls": False,
        "app.one": True,
        "app.one.views": False,
        "app.two": True,
        "app.two.views": False,
        "app.two.helpers": False,
    }
    graph = {
        "app.urls": {"app.one.views", "app.two.views"},  # a module of the root is a unit alone
        "app.one.views": {"app.models", "app.two.helpers"},
        "app.two.views": {"app.models", "app.two.helpers"},  # within one subpackage: no edge
        "app.two.helpers": {"app.models"},
    }
    assert unit_graph(graph, modules) == {
        "app.urls": {"app.one", "app.two"},
        "app.one": {"app.models", "app.two"},
        "app.two": {"app.models"},
    }
    assert cycles(unit_graph(graph, modules)) == []
    graph["app.two.helpers"].add("app.one.views")
    assert cycles(unit_graph(graph, modules)) == [["app.one", "app.two"]]


def test_no_module_is_in_a_loop_of_module_level_imports():
    graph = import_graph()
    loops = {" / ".join(cycle): edges_within(cycle, graph) for cycle in cycles(graph)}
    assert not loops, f"modules importing each other at module level: {loops}"


# The one loop there is (issue 27): the API's schema, gathered in offerings/table/openapi.py, takes
# the estimator's and the planner's parts, which build on the table's rows and parameters.
def test_the_packages_import_each_other_in_no_loop():
    modules = project_modules()
    graph = import_graph()
    loops = {
        " / ".join(cycle): imports_across(cycle, graph, modules)
        for cycle in cycles(unit_graph(graph, modules))
    }
    assert not loops, f"packages importing each other: {loops}"
