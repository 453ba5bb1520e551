"""Every request body is read as JSON, whatever its Content-Type says, and none is larger
than ``STRATA_MAX_BODY_BYTES``.

The API speaks JSON only, so a body is JSON or it is invalid: ``curl -d '{...}'`` sends
``application/x-www-form-urlencoded``, ``fetch`` with a string body ``text/plain``, and
FastAPI reads neither as JSON -- it validated the raw bytes and answered 422 "Input should be
a valid dictionary", the same answer malformed JSON got. This ASGI middleware hands the app
``application/json`` for any other media type, so such a body is parsed like any JSON one:
well-formed, it is accepted; malformed, it is the 400 ``invalid_json`` (strata.api.errors)
whatever the client declared. A ``+json`` type (``application/merge-patch+json``) is left
alone: FastAPI reads it as JSON already.

The size bound is checked before anything is parsed, validated or embedded: a declared
``Content-Length`` over it is answered 413 ``payload_too_large`` without reading the body, and
a body sent without one (chunked) is read only until it passes the bound. Item counts alone
did not bound the work: 500 memories of 20 KB each were a 10 MB body the server took 47 s
to refuse or store.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

from strata.api.serving import error_body

__all__ = ["JsonBodies", "install"]

_JSON = b"application/json"


def _is_json(value: bytes) -> bool:
    media = value.split(b";", 1)[0].strip().lower()
    return media == _JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


def too_large(limit: int) -> JSONResponse:
    return JSONResponse(error_body(
        "payload_too_large", f"the request body is larger than {limit} bytes; send fewer "
        "or smaller items per request", "body"), 413)


class JsonBodies:
    def __init__(self, app, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
        declared = [v for k, v in scope["headers"] if k == b"content-type"]
        if not declared or not _is_json(declared[0]):
            scope = {**scope, "headers": [*headers, (b"content-type", _JSON)]}
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.limit:
            await too_large(self.limit)(scope, receive, send)
            return
        if length is None:  # chunked: read it here, up to the bound, and hand it on whole
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    break  # the client went away: the app sees the same
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                if size > self.limit:
                    await too_large(self.limit)(scope, receive, send)
                    return
                if not message.get("more_body", False):
                    break
            body, replayed = b"".join(chunks), False

            async def replay():
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)


def install(app, max_body_bytes: int) -> None:
    app.add_middleware(JsonBodies, max_body_bytes=max_body_bytes)
