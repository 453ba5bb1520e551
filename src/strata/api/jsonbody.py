"""Every request body is read as JSON, whatever its Content-Type says.

The API speaks JSON only, so a body is JSON or it is invalid: ``curl -d '{...}'`` sends
``application/x-www-form-urlencoded``, ``fetch`` with a string body ``text/plain``, and
FastAPI reads neither as JSON -- it validated the raw bytes and answered 422 "Input should be
a valid dictionary", the same answer malformed JSON got. This ASGI middleware hands the app
``application/json`` for any other media type, so such a body is parsed like any JSON one:
well-formed, it is accepted; malformed, it is the 400 ``invalid_json`` (strata.api.errors)
whatever the client declared. A ``+json`` type (``application/merge-patch+json``) is left
alone: FastAPI reads it as JSON already.
"""

from __future__ import annotations

__all__ = ["JsonBodies", "install"]

_JSON = b"application/json"


def _is_json(value: bytes) -> bool:
    media = value.split(b";", 1)[0].strip().lower()
    return media == _JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


class JsonBodies:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            declared = [v for k, v in scope["headers"] if k == b"content-type"]
            if not declared or not _is_json(declared[0]):
                scope = {**scope, "headers": [*headers, (b"content-type", _JSON)]}
        await self.app(scope, receive, send)


def install(app) -> None:
    app.add_middleware(JsonBodies)
