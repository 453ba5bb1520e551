"""What the ``strata`` command modules share: the operator's database, tenant and caller, and
table output.

:mod:`strata.cli` (the local stack and operator commands) and :mod:`strata.cli_client` (the
client-side commands, plus export and import) both import this module, and it imports
neither, so neither imports the other back. Like them, it imports nothing heavy at module
level: a command pays only for what it uses.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


# --------------------------------------------------------------------------------------
# Operator commands: on the database, as the operator
# --------------------------------------------------------------------------------------


def open_database():
    """The process database, migrated (idempotent) so every command works on a fresh home."""
    from strata.db import get_database
    from strata.db.migrate import migrate

    db = get_database()
    migrate(db.url)
    return db


def find_tenant(db, name_or_id: str):
    """The tenant named (or with this id); NotFound naming the field ``tenant``."""
    from strata.auth import find_tenant as find

    return find(db, name_or_id)


def system_caller(db, tenant: str):
    """The operator acting on ``tenant`` outside any key (audited on the ``cli`` surface)."""
    from strata.auth import Caller

    return Caller.system(find_tenant(db, tenant).id)


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def width() -> int:
    """The terminal's width; unlimited when piped (a script or grep wants the whole text)."""
    if not sys.stdout.isatty():
        return 1_000_000
    return max(shutil.get_terminal_size((120, 24)).columns, 60)


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[Any]], flex: int) -> list[str]:
    """Columns sized to their content; column ``flex`` (the text) takes what is left of the
    terminal width and is clipped to it. The header line, then one line per row."""
    cells = [[" ".join(("" if v is None else str(v)).split()) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (len(headers) - 1)
    widths[flex] = max(min(widths[flex], width() - fixed), 24)
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    for r in cells:
        r[flex] = clip(r[flex], widths[flex])
        lines.append("  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip())
    return lines


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], flex: int) -> None:
    print("\n".join(table_lines(headers, rows, flex)))


def when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else ""
