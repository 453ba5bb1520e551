"""The core's exceptions. The API maps them to HTTP in one place (``strata.api.errors``)."""

from __future__ import annotations

from typing import Any


class StrataError(Exception):
    code = "error"

    def __init__(self, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details


class InvalidInput(StrataError):
    code = "invalid_input"


class Unauthenticated(StrataError):
    code = "unauthenticated"


class Forbidden(StrataError):
    code = "forbidden"


class NotFound(StrataError):
    code = "not_found"

    def __init__(self, what: str = "memory", ident: object = None, **kw: Any) -> None:
        super().__init__(f"{what} not found", **kw)
        self.what = what
        self.ident = ident


class Conflict(StrataError):
    code = "conflict"


class VersionConflict(StrataError):
    code = "version_conflict"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"expected version {expected}, current version is {actual}",
            field="expected_version",
            current_version=actual,
        )
        self.expected = expected
        self.actual = actual


class Suppressed(StrataError):
    """A write was refused because its value is tombstoned (forgotten, rejected, superseded)."""

    code = "suppressed"

    def __init__(self, tombstone_id: object, reason: str, *, field: str | None = None) -> None:
        super().__init__(
            f"value is tombstoned ({reason})", field=field, tombstone_id=str(tombstone_id)
        )
        self.tombstone_id = tombstone_id
        self.reason = reason


class Gone(StrataError):
    """The thing existed but was erased (forget): it cannot be restored."""

    code = "gone"


class Unavailable(StrataError):
    """The database cannot serve now (unreachable, shutting down, no connection in time).

    Nothing about the request is wrong: it may be sent again after ``retry_after_s``.
    ``failure`` names the database error (its type, never its message) for logs and metrics.
    """

    code = "unavailable"
    retry_after_s = 5

    def __init__(self, failure: str) -> None:
        super().__init__(f"the database is unavailable: retry in {self.retry_after_s} s")
        self.failure = failure


class ModelUnavailable(StrataError):
    """A capability that needs a model (reflection, a consolidation without content) and
    none is configured: ``setting`` names what to set."""

    code = "model_unavailable"

    def __init__(self, message: str, *, setting: str, field: str | None = None) -> None:
        super().__init__(message, field=field, setting=setting)


def field_path(loc) -> str | None:
    """A pydantic error location as the field name errors report: ('memories', 3, 'content')
    -> 'memories[3].content', without pydantic's validator and type steps. Shared by the
    API and the client (which validates requests before sending them)."""
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and not p.startswith(("function-after", "literal[", "list[")):
            out += f".{p}" if out else p
    return out or None
