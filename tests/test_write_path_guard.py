"""The write path is structural: only ``strata.write`` changes the tables that hold memories.

Every statement that inserts, updates, deletes, copies into, truncates or merges into
``memories``, ``tombstones``, ``memory_relationships`` or ``memory_history`` must live under
src/strata/write/. Any other module (an API route, review, import, lifecycle, search, a
Lambda handler) reaches them only by calling the write path, so a rule written there (a
tombstone check, a lock, an authorisation) cannot be skipped by a side door.

The scan reads every string literal of a module's AST, with the literal parts of f-strings
joined and implicit concatenation already folded by the parser, so a statement split over
lines or built around ``{placeholders}`` is still seen.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "strata"
WRITE_PATH = PACKAGE / "write"
TABLES = ("memories", "tombstones", "memory_relationships", "memory_history")
WRITES = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|COPY|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO)"
    r"\s+(?:ONLY\s+)?(?:public\.)?(" + "|".join(TABLES) + r")\b",
    re.IGNORECASE,
)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                           else " {} " for v in node.values)
            out.append((node.lineno, text))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    return out


def writes_in(source: str) -> list[tuple[int, str]]:
    """(line, table) for every write statement to a guarded table in ``source``."""
    found = []
    for line, text in _strings(ast.parse(source)):
        found += [(line, m.group(1).lower()) for m in WRITES.finditer(" ".join(text.split()))]
    return found


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_only_the_write_path_writes_memories_and_tombstones():
    """Given every module of strata outside strata.write and every Lambda handler, when their
    string literals are scanned for writes to the memory tables, then there are none."""
    outside = [p for p in _modules(PACKAGE) if WRITE_PATH not in p.parents]
    outside += _modules(ROOT / "functions")
    assert len(outside) > 50  # the scan covers the package, not an empty folder
    offenders = [f"{p.relative_to(ROOT)}:{line} writes {table}"
                 for p in outside for line, table in writes_in(p.read_text(encoding="utf-8"))]
    assert not offenders, "writes outside strata.write:\n" + "\n".join(offenders)


def test_the_scan_sees_the_write_paths_own_statements():
    """Control: the same scan over strata.write finds writes to every guarded table, so the
    test above cannot pass because the pattern matches nothing."""
    tables = {table for p in _modules(WRITE_PATH)
              for _, table in writes_in(p.read_text(encoding="utf-8"))}
    assert tables == set(TABLES)


def test_the_scan_sees_statements_however_they_are_written():
    """Control: split literals, f-strings with placeholders, lower case, COPY and TRUNCATE
    are all found; reads and writes of other tables are not."""
    source = '''
a = ("UPDATE memories"
     " SET status = 'archived' WHERE id = %s")
b = f"WITH page AS ({page}) DELETE FROM memories m USING page"
c = "insert into   tombstones (id) values (%s)"
d = "COPY memory_history (id) FROM STDIN"
e = "TRUNCATE TABLE memory_relationships"
f = "SELECT * FROM memories WHERE id = %s"
g = "UPDATE ingest_receipts SET status = 'wrote'"
h = "INSERT INTO memories_archive VALUES (1)"
'''
    assert writes_in(source) == [(2, "memories"), (4, "memories"), (5, "tombstones"),
                                 (6, "memory_history"), (7, "memory_relationships")]
