"""strata's packages stand in floors, and imports only run down.

Every package under ``src/strata`` is one capability and sits on one floor of ``FLOORS``; a
module may import its own package and any package on a lower floor, never one on its own floor
or above. ``docs/reference/layout.md`` lists the same floors, and a test holds the two equal.
The import graph is the one ``test_import_cycles`` builds (every import statement, wherever it
is: in a function, under ``if TYPE_CHECKING:``).

The root of the package holds its face (``__init__``, the version) and nothing else: a new
module goes into the package of its capability, a new package onto a floor.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_import_cycles import Graph, import_graph, write_package

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LAYOUT = ROOT / "docs" / "reference" / "layout.md"

# Bottom first. A package may import only packages on floors below its own.
FLOORS: list[tuple[str, ...]] = [
    ("foundation",),                                # settings, errors, field types, paths, logs
    ("db",),                                        # the pool, migrations, vectors, deadlines
    ("providers", "audit"),                         # embedders and models; the audit chain
    ("auth",),                                      # tenants, principals, keys, access
    ("rules",),                                     # an owner's policy for what is kept
    ("write",),                                     # the one write path
    ("memories", "events"),                         # reads and direct CRUD; change events
    ("ingest", "review", "reflection", "maintenance"),
    ("search",),
    ("api", "console"),                             # the HTTP edge (and MCP), the console's files
    ("client",),                                    # the Python client (public)
    ("cli", "integrations"),                        # the command; agent frameworks (public)
]


def floors_of(floors: list[tuple[str, ...]]) -> dict[str, int]:
    return {package: n for n, names in enumerate(floors) for package in names}


def package_of(module: str) -> str:
    """``strata.search.hybrid`` -> ``search``; the root ``strata`` -> ``strata``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: Graph, floors: list[tuple[str, ...]], root: str) -> list[str]:
    """Every import that does not run down a floor, as ``a (floor) imports b (floor), line n``.
    Imports of the root package (its face) are allowed from anywhere; the root imports
    nothing. A package on no floor (``-``) runs down nowhere."""
    floor = floors_of(floors)
    found = []
    for module, edges in sorted(graph.items()):
        here = package_of(module)
        for target, lines in sorted(edges.items()):
            there = package_of(target)
            if there == here or (there == root and module != root):
                continue
            if (here == root or here not in floor or there not in floor
                    or floor[there] >= floor[here]):
                where = ", ".join(str(n) for n in sorted(set(lines)))
                found.append(f"{module} (floor {floor.get(here, '-')}) imports {target} "
                             f"(floor {floor.get(there, '-')}), line {where}")
    return found


def test_every_package_has_a_floor_and_the_root_holds_only_the_face():
    """Given the entries of src/strata
    Then every package is on exactly one floor, every floor names a package that exists, and
    the only module at the root is __init__ (a loose module is a capability without a home)."""
    top = SRC / "strata"
    packages = {p.name for p in top.iterdir() if (p / "__init__.py").is_file()}
    loose = {p.stem for p in top.glob("*.py")} - {"__init__"}
    listed = [name for names in FLOORS for name in names]
    assert len(packages) >= 15  # control: it read the package
    assert len(listed) == len(set(listed)), "a package is on two floors"
    assert packages == set(listed), (f"without a floor: {sorted(packages - set(listed))}; "
                                     f"on a floor but gone: {sorted(set(listed) - packages)}")
    assert not loose, f"modules at the root of strata: {sorted(loose)}"


def test_imports_run_down_the_floors_only():
    """Given every import statement under src/strata
    Then each goes to its own package or to one on a lower floor (the message names each
    import that does not, with its floors and lines)."""
    graph = import_graph(SRC, "strata")
    crossing = sum(1 for m, edges in graph.items() for t in edges
                   if package_of(t) != package_of(m))
    assert crossing > 200  # control: most imports cross packages
    upward = upward_imports(graph, FLOORS, "strata")
    if upward:
        pytest.fail("imports that do not run down:\n  " + "\n  ".join(upward), pytrace=False)


def test_the_layout_page_lists_the_same_floors():
    """Given docs/reference/layout.md's table of floors (top first, one row per floor)
    Then its packages, floor by floor, are FLOORS'."""
    rows = re.findall(r"^\|\s*(\d+)\s*\|([^|]+)\|", LAYOUT.read_text(encoding="utf-8"), re.M)
    documented = {int(n): tuple(re.findall(r"`(\w+)/`", names)) for n, names in rows}
    assert documented, "layout.md has no table of floors"
    assert documented == dict(enumerate(FLOORS))


# ------------------------------------------------------------------------------ controls


def test_an_import_up_or_across_a_floor_is_found(tmp_path):
    """Given a synthetic package with three floors, where the bottom imports the top inside a
    function, two packages on one floor import each other's modules under TYPE_CHECKING, and
    the root face imports a package
    Then each of those imports is named, and the downward ones (and imports of the face) are
    not; put on floors of their own, the two on one floor no longer clash; and a package left
    off the floors has every import into it and out of it named."""
    root = write_package(tmp_path, {
        "pkg/__init__.py": "from pkg.base import x\n",
        "pkg/base/__init__.py": "",
        "pkg/base/x.py": "def later():\n    from pkg.top import app\n",
        "pkg/mid_a/__init__.py": "",
        "pkg/mid_a/m.py": ("from typing import TYPE_CHECKING\n"
                           "import pkg\nfrom pkg.base import x\n"
                           "if TYPE_CHECKING:\n    from pkg.mid_b import n\n"),
        "pkg/mid_b/__init__.py": "",
        "pkg/mid_b/n.py": "from pkg.base.x import later\n",
        "pkg/top/__init__.py": "",
        "pkg/top/app.py": "from pkg.mid_a import m\nfrom pkg.mid_b.n import later\n",
    })
    floors = [("base",), ("mid_a", "mid_b"), ("top",)]

    found = upward_imports(import_graph(root, "pkg"), floors, "pkg")

    assert found == [
        "pkg (floor -) imports pkg.base.x (floor 0), line 1",
        "pkg.base.x (floor 0) imports pkg.top.app (floor 2), line 2",
        "pkg.mid_a.m (floor 1) imports pkg.mid_b.n (floor 1), line 5",
    ]
    # With mid_b below mid_a, their import runs down and is no longer named.
    apart = [("base",), ("mid_b",), ("mid_a",), ("top",)]
    assert upward_imports(import_graph(root, "pkg"), apart, "pkg") == [
        "pkg (floor -) imports pkg.base.x (floor 0), line 1",
        "pkg.base.x (floor 0) imports pkg.top.app (floor 3), line 2",
    ]
    # A package on no floor: every import into it or out of it is named.
    strayed = upward_imports(import_graph(root, "pkg"), [("base",), ("mid_a",), ("top",)], "pkg")
    assert [line for line in strayed if "mid_b" in line] == [
        "pkg.mid_a.m (floor 1) imports pkg.mid_b.n (floor -), line 5",
        "pkg.mid_b.n (floor -) imports pkg.base.x (floor 0), line 1",
        "pkg.top.app (floor 2) imports pkg.mid_b.n (floor -), line 2",
    ]
