"""No import cycles between strata's modules.

The graph comes from the AST of every ``.py`` under ``src/strata``: every import statement
counts, wherever it is (module level, inside a function, under ``if TYPE_CHECKING:``), absolute
or relative. A function-level import hides a cycle from the interpreter until the function
runs; it does not make the two modules any less tangled.

Resolution: ``import strata.a.b`` is an edge to ``strata.a.b``; ``from strata.a import b`` to
``strata.a.b`` when that is a module or package, else to ``strata.a`` (its ``__init__``);
relative imports resolve against the importing module's package. There are no implicit edges
from a module to the ``__init__`` of the packages that contain it: Python runs those, but an
``__init__`` that re-exports its submodules would then make every package a cycle. An explicit
``from strata.memories import x`` in ``strata.memories.store`` is an edge to
``strata.memories`` and counts.
"""

from __future__ import annotations

import ast
import textwrap
from collections import deque
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

Graph = dict[str, dict[str, list[int]]]  # module -> {imported module: [line, ...]}


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (found under ``root``) by dotted name."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` if it is a module of the package, else its longest prefix that is one."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The package's modules one import statement depends on."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return [t for t in (_known(n, modules) for n in names) if t]
    if node.level:
        # The package the import is relative to: a package's __init__ is its own package.
        package = module.split(".") if is_package else module.split(".")[:-1]
        up = node.level - 1
        if up > len(package) - 1:
            return []  # beyond the top-level package: not one of ours
        base = ".".join(package[: len(package) - up])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module or ""
    targets = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if alias.name != "*" and submodule in modules:
            targets.append(submodule)
        elif (found := _known(base, modules)) is not None:
            targets.append(found)
    return targets


def import_graph(root: Path, package: str) -> Graph:
    """Which of ``package``'s modules each of its modules imports, and on which lines."""
    modules = module_names(root, package)
    graph: Graph = {}
    for module, path in modules.items():
        edges: dict[str, list[int]] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, module, path.name == "__init__.py", modules):
                    edges.setdefault(target, []).append(node.lineno)
        graph[module] = edges
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return sorted(components)


def _shortest_path(graph: Graph, start: str, goal: str, within: set[str]) -> list[str]:
    """The shortest import path from ``start`` to ``goal`` (``goal`` != ``start``) in ``within``."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph[node]):
            if succ not in within or succ in previous or succ == start:
                continue
            previous[succ] = node
            if succ == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return path[::-1]
            queue.append(succ)
    raise AssertionError(f"{goal} is not reachable from {start}")  # not strongly connected


def _simple_cycle(graph: Graph, component: list[str], budget: int = 100_000) -> list[str] | None:
    """A cycle through every module of ``component`` once, if a bounded search finds one."""
    first, within = component[0], set(component)
    path, on_path = [first], {first}
    work = [iter(sorted(set(graph[first]) & within))]
    while work and budget > 0:
        budget -= 1
        succ = next(work[-1], None)
        if succ is None:
            work.pop()
            on_path.discard(path.pop())
        elif succ == first and len(path) == len(component):
            return [*path, first]
        elif succ not in on_path and succ != first:
            path.append(succ)
            on_path.add(succ)
            work.append(iter(sorted(set(graph[succ]) & within)))
    return None


def find_cycles(graph: Graph) -> list[list[str]]:
    """Each import cycle as a closed path ``[a, b, ..., a]`` through every module of one
    strongly connected component (a module that imports itself: ``[a, a]``): each module once
    when a bounded search finds such a path, else a walk that may pass a module twice."""
    cycles = []
    for component in strongly_connected(graph):
        first = component[0]
        if len(component) == 1:
            if first in graph[first]:
                cycles.append([first, first])
            continue
        if (cycle := _simple_cycle(graph, component)) is not None:
            cycles.append(cycle)
            continue
        # A closed walk: from each module on to the nearest one not yet visited, then home.
        within, walk, unvisited = set(component), [first], set(component) - {first}
        while unvisited:
            legs = [_shortest_path(graph, walk[-1], m, within) for m in sorted(unvisited)]
            leg = min(legs, key=len)
            walk += leg[1:]
            unvisited -= set(leg)
        walk += _shortest_path(graph, walk[-1], first, within)[1:]
        cycles.append(walk)
    return cycles


def describe(graph: Graph, cycles: list[list[str]]) -> str:
    """Each cycle as its path, then every import between its modules and the lines of each."""
    lines = [f"{len(cycles)} import cycle(s) between strata's modules:"]
    for cycle in cycles:
        members = set(cycle)
        lines.append("  " + " -> ".join(cycle))
        for a in sorted(members):
            for b in sorted(set(graph[a]) & members):
                where = ", ".join(str(n) for n in sorted(set(graph[a][b])))
                lines.append(f"      {a} imports {b} (line {where})")
    return "\n".join(lines)


def test_strata_has_no_import_cycles():
    """Given every module under src/strata and every import statement in it
    Then no two modules import each other, directly or through others, and none imports
    itself (the message names each cycle and the lines that make it)."""
    graph = import_graph(SRC, "strata")
    assert len(graph) > 50 and "strata.api.app" in graph  # control: it read the package
    assert sum(map(len, graph.values())) > 200
    cycles = find_cycles(graph)
    if cycles:
        pytest.fail(describe(graph, cycles), pytrace=False)


# ------------------------------------------------------------------------------ controls


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    """Given a synthetic package whose two modules import each other, one of them only inside
    a function (as the interpreter would never notice at import)
    Then the cycle is found and named as a path."""
    root = write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "import pkg.b\n",
        "pkg/b.py": "def later():\n    from pkg import a\n    return a\n",
        "pkg/c.py": "from pkg import b\n",  # imports into the cycle, is not part of it
    })
    graph = import_graph(root, "pkg")

    assert graph["pkg.a"] == {"pkg.b": [1]} and graph["pkg.b"] == {"pkg.a": [2]}
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    message = describe(graph, find_cycles(graph))
    assert "pkg.a -> pkg.b -> pkg.a" in message and "pkg.b imports pkg.a (line 2)" in message


def test_relative_type_checking_and_self_imports_are_cycles_too(tmp_path):
    """Given cycles made by a relative import under ``if TYPE_CHECKING:``, by a three-module
    loop, by a hub two modules import and that imports both, by an explicit import of a
    package's ``__init__`` from one of its submodules (which the ``__init__`` imports), and by
    a module importing itself
    Then each is found: the loop as one path through all three modules, the hub as a walk
    that passes it twice."""
    root = write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/api/__init__.py": "",
        "pkg/api/app.py": "from ..server import transport\n",
        "pkg/server/__init__.py": "",
        "pkg/server/transport.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from ..api.app import Runtime\n"),
        "pkg/x.py": "import pkg.y\n",
        "pkg/y.py": "from . import z\n",
        "pkg/z.py": "from .x import thing\n",
        "pkg/store/__init__.py": "from pkg.store.core import put\n",
        "pkg/store/core.py": "from pkg.store import LIMIT\n",
        "pkg/selfish.py": "import pkg.selfish\n",
        # A hub two modules import and that imports both: no path passes each once.
        "pkg/hub.py": "from pkg import left, right\n",
        "pkg/left.py": "from pkg.hub import x\n",
        "pkg/right.py": "from pkg.hub import x\n",
    })
    graph = import_graph(root, "pkg")

    assert find_cycles(graph) == [
        ["pkg.api.app", "pkg.server.transport", "pkg.api.app"],
        ["pkg.hub", "pkg.left", "pkg.hub", "pkg.right", "pkg.hub"],
        ["pkg.selfish", "pkg.selfish"],
        ["pkg.store", "pkg.store.core", "pkg.store"],
        ["pkg.x", "pkg.y", "pkg.z", "pkg.x"],
    ]


def test_an_acyclic_package_has_no_cycles(tmp_path):
    """Given a synthetic package whose ``__init__`` files re-export their submodules, whose
    submodules import siblings (absolutely, relatively, from the package by submodule name)
    and outside modules, in functions and under TYPE_CHECKING, all one way
    Then no cycle is found: a module is not taken to import the packages that contain it."""
    root = write_package(tmp_path, {
        "pkg/__init__.py": "from pkg.core import models\nfrom . import core\n",
        "pkg/core/__init__.py": "from .models import Model\nfrom .store import save\n",
        "pkg/core/models.py": "import json\nfrom pydantic import BaseModel\n",
        "pkg/core/store.py": (
            "from typing import TYPE_CHECKING\n"
            "from pkg.core import models\n"
            "if TYPE_CHECKING:\n"
            "    from .models import Model\n"
            "def save():\n"
            "    from . import models\n"),
        "pkg/api.py": "import pkg.core.store\nfrom pkg.core.models import Model\n",
    })
    graph = import_graph(root, "pkg")

    assert graph["pkg.core.store"] == {"pkg.core.models": [2, 4, 6]}
    assert graph["pkg.core.models"] == {}  # json and pydantic are not ours
    assert graph["pkg"] == {"pkg.core.models": [1], "pkg.core": [2]}
    assert find_cycles(graph) == []
