"""Errors the client raises: the server's ``{"error": {"code", "message", "field"?}}`` body as a
typed exception.

Every class derives from :class:`ApiError` and from the core error of the same code
(``strata.foundation.errors``), so ``except strata.foundation.errors.NotFound`` catches a 404 from the client as
it catches the core's own. ``status`` is the HTTP status (``None`` when the request never got
an answer, or was refused before sending); ``details`` holds the body's other keys
(``current_version``, ``tombstone_id``, ...).
"""

from __future__ import annotations

from typing import Any

from strata.foundation import errors as core


class ApiError(core.StrataError):
    code = "error"

    def __init__(
        self, message: str, *, code: str | None = None, status: int | None = None,
        field: str | None = None, details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        core.StrataError.__init__(self, message, field=field, **(details or {}))
        if code is not None:
            self.code = code
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        return f"{self.code}: {self.message}{where}"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        body.update(self.details)
        return {"error": body}


class InvalidInput(ApiError, core.InvalidInput):
    """422 from the server, or a request the client's own validation refused (status None)."""

    code = "invalid_input"


class InvalidJson(ApiError, core.InvalidInput):
    code = "invalid_json"


class Unauthenticated(ApiError, core.Unauthenticated):
    code = "unauthenticated"


class Forbidden(ApiError, core.Forbidden):
    code = "forbidden"


class NotFound(ApiError, core.NotFound):
    code = "not_found"


class Conflict(ApiError, core.Conflict):
    code = "conflict"


class Suppressed(ApiError, core.Suppressed):
    """The value is tombstoned; ``tombstone_id`` names the tombstone."""

    code = "suppressed"

    @property
    def tombstone_id(self) -> str | None:
        return self.details.get("tombstone_id")


class Gone(ApiError, core.Gone):
    code = "gone"


class VersionConflict(ApiError, core.VersionConflict):
    """412: the memory changed since ``expected_version``; ``actual`` is its version now."""

    code = "version_conflict"

    @property
    def actual(self) -> int | None:
        return self.details.get("current_version")


class RateLimited(ApiError):
    code = "rate_limited"


class ProviderUnavailable(ApiError):
    """503: a model or embedding provider failed on the server; the request was fine."""

    code = "provider_unavailable"


class ServerError(ApiError):
    code = "internal"


class Unreachable(ApiError):
    """No answer at all: connection refused, DNS, timeout (after the retries)."""

    code = "unreachable"


class ConfigError(ApiError):
    """The client is not configured (no URL or key, a bad profile file)."""

    code = "config"


_BY_CODE: dict[str, type[ApiError]] = {
    cls.code: cls for cls in (
        InvalidInput, InvalidJson, Unauthenticated, Forbidden, NotFound, Conflict, Suppressed,
        Gone, VersionConflict, RateLimited, ProviderUnavailable,
    )
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidInput, 401: Unauthenticated, 403: Forbidden, 404: NotFound, 409: Conflict,
    410: Gone, 412: VersionConflict, 422: InvalidInput, 429: RateLimited,
    503: ProviderUnavailable,
}


def from_response(status: int, body: Any, retry_after: float | None = None) -> ApiError:
    """The exception for an error response: by the body's code, else by the status."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        err = {}
    code = err.get("code") if isinstance(err.get("code"), str) else None
    message = err.get("message") if isinstance(err.get("message"), str) else None
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status) or (
        ServerError if status >= 500 else ApiError)
    details = {k: v for k, v in err.items() if k not in ("code", "message", "field")}
    return cls(
        message or f"HTTP {status}",
        code=code or (cls.code if cls is not ApiError else f"http_{status}"),
        status=status, field=err.get("field") if isinstance(err.get("field"), str) else None,
        details=details, retry_after=retry_after,
    )


__all__ = [
    "ApiError", "ConfigError", "Conflict", "Forbidden", "Gone", "InvalidInput", "InvalidJson",
    "NotFound", "ProviderUnavailable", "RateLimited", "ServerError", "Suppressed",
    "Unauthenticated", "Unreachable", "VersionConflict", "from_response",
]
