"""What the ``strata`` command modules share: the operator's database, tenant and caller,
table output, and what every command gets from the one parser walk (``--json``, errors that
name the real option).

:mod:`strata.cli.main` (the local stack and operator commands) and :mod:`strata.cli.client` (the
client-side commands, plus export and import) both import this module, and it imports
neither, so neither imports the other back. Like them, it imports nothing heavy at module
level: a command pays only for what it uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

EXIT_REFUSED = 1
EXIT_USAGE = 2
# What a shell reports for a process that SIGPIPE ended: the reader of stdout went away
# (`strata ... | head`). Not an error of ours, so nothing is printed.
EXIT_CLOSED_PIPE = 141

JSON_HELP = "machine-readable output: JSON on stdout and nothing else (errors: JSON on stderr)"


# --------------------------------------------------------------------------------------
# Operator commands: on the database, as the operator
# --------------------------------------------------------------------------------------


def open_database(*, check_embedder: bool = True):
    """The process database, migrated (idempotent) so every command works on a fresh home.

    Unless told not to (``strata reindex`` is the fix, not a victim), it resolves the store's
    embedder (:func:`strata.providers.store_embedder.resolve`: a STRATA_EMBEDDER other than the store's
    is not followed, and said so on stderr) and warns on stderr when stored vectors come from
    another model than the store's embedder (an unfinished ``strata reindex``)."""
    from strata.db import get_database
    from strata.db.migrate import migrate

    db = get_database()
    migrate(db.url)
    if check_embedder:
        warn_embedder_mismatch(db)
    return db


def store_embedder(db, settings=None):
    """What an operator command embeds with: the store's embedder
    (:class:`strata.providers.store_embedder.Resolved`; ``warning`` set when the configured one differs)."""
    from strata.foundation.config import get_settings
    from strata.providers.store_embedder import resolve

    return resolve(db, settings or get_settings(), strict=False)


def warn_embedder_mismatch(db, embedder=None) -> str | None:
    """Log (WARNING, on stderr) and return the warning when stored memory vectors were
    embedded by another model than ``embedder`` (default: the store's; see
    :func:`strata.maintenance.reindex.model_mismatch`). A configuration the embedder refuses is left to
    the command to report."""
    from strata.maintenance.reindex import model_mismatch
    from strata.providers.store_embedder import EmbedderMismatch, stored_models

    if embedder is None:
        try:
            embedder = store_embedder(db).embedder
        except (ValueError, EmbedderMismatch):
            return None
    warning = model_mismatch(stored_models(db), embedder.model)
    if warning:
        logging.getLogger("strata").warning(warning)
    return warning


def find_tenant(db, name_or_id: str):
    """The tenant named (or with this id); NotFound naming it and the field ``tenant``."""
    from strata.auth import find_tenant as find
    from strata.foundation.errors import NotFound

    try:
        return find(db, name_or_id)
    except NotFound as exc:
        exc.message = f"tenant {name_or_id!r} not found; `strata tenants list` shows them"
        raise


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


def print_json(value: Any) -> None:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    elif isinstance(value, list):
        value = [v.model_dump(mode="json") if hasattr(v, "model_dump") else v for v in value]
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))


# --------------------------------------------------------------------------------------
# What every command gets: the parser walk, and errors
# --------------------------------------------------------------------------------------


def leaf_parsers(parser: argparse.ArgumentParser,
                 prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command the parser runs, as (its words, its parser): `("keys", "list")`, ..."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
        return
    for name, child in subs[0].choices.items():
        yield from leaf_parsers(child, prefix + (name,))


def option_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each argument's destination and what a user types for it: ``--version``, or the
    positional's name in capitals (``ID``)."""
    names = {}
    for action in parser._actions:
        if action.option_strings:
            names[action.dest] = max(action.option_strings, key=len)
        elif action.dest != argparse.SUPPRESS:
            names[action.dest] = (action.metavar or action.dest).upper()
    return names


def finish(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """What every command gets, also one added later: ``--json``, and the names of its
    options, so an error about a field names the flag a user types (``--version``, not
    "(version)")."""
    for _, leaf in leaf_parsers(parser):
        if "--json" not in leaf._option_string_actions:
            leaf.add_argument("--json", action="store_true", help=JSON_HELP)
        leaf.set_defaults(_options=option_names(leaf))
    return parser


def option_for(args: argparse.Namespace | None, field: str | None) -> str | None:
    """The option a user types for ``field``: an argument's dest, or a request field, also a
    nested one (``memories[0].path`` is what ``--path`` sent)."""
    if not field:
        return None
    options = getattr(args, "_options", None) or {}
    leaf = re.sub(r"\[\d+\]", "", field).rsplit(".", 1)[-1]
    for name in (field, field.replace("-", "_"), leaf):
        if name in options:
            return options[name]
    return None


def fail(args: argparse.Namespace | None, message: str, *, code: str = "invalid_input",
         field: str | None = None, status: int = EXIT_USAGE, hint: str | None = None,
         details: dict[str, Any] | None = None) -> int:
    """Say why a command did not do its work, on stderr, and return its exit status: with
    ``--json`` the API's error body, else one line naming the option (and a hint)."""
    option = option_for(args, field)
    if getattr(args, "json", False):
        body: dict[str, Any] = {"code": code, "message": message}
        if field:
            body["field"] = field
        if option:
            body["option"] = option
        if hint:
            body["hint"] = hint
        body.update(details or {})
        print(json.dumps({"error": body}, default=str), file=sys.stderr)
        return status
    where = f" ({option or field})" if (option or field) else ""
    print(f"strata: {message}{where} [{code}]", file=sys.stderr)
    if hint:
        print(f"strata: {hint}", file=sys.stderr)
    return status
