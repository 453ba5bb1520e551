"""Requests as data: each public client method builds a ``Call`` here (validated with the
server's own request models) and the sync or async client sends it. One place for the
contract, two thin transports."""

from __future__ import annotations

import email.utils
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.client.errors import ApiError, InvalidInput, ServerError, from_response
from strata.foundation.errors import field_path

# Statuses worth another attempt. 429 and 503 say the request was not processed (rate
# limit; a provider down before anything was written), so every request retries them;
# other 5xx (and a connection dropped after sending) may have been processed, so only
# requests that are safe to repeat retry those.
ALWAYS_RETRY = frozenset({429, 503})
MAX_RETRY_AFTER = 60.0


def _models():
    from strata.client import models

    return models


def validated(model: type, **values: Any) -> Any:
    """``model(**values)``, with a validation failure raised as the server would answer it
    (``InvalidInput`` naming the field), before anything is sent."""
    from pydantic import ValidationError

    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInput(first.get("msg", "invalid value"), field=field_path(first.get("loc", ())),
                           status=None) from None


def as_id(value: uuid.UUID | str, field_name: str = "id") -> str:
    try:
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    except ValueError:
        raise InvalidInput(f"{value!r} is not a memory id (a UUID)", field=field_name,
                           status=None) from None


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_unset=True)


@dataclass
class Call:
    method: str
    path: str
    json: Any = None
    params: list[tuple[str, str]] | None = None
    headers: dict[str, str] | None = None
    parse: Callable[[Any], Any] = lambda body: body
    idempotent: bool = True  # safe to send again after a 5xx or a lost answer
    timeout: float | None = None


@dataclass
class Backoff:
    """Exponential backoff with full jitter; a server's Retry-After wins when it says more."""

    base: float = 0.5
    cap: float = 8.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        jittered = self.rng.uniform(0, min(self.cap, self.base * 2 ** attempt))
        if retry_after is not None:
            return max(min(retry_after, MAX_RETRY_AFTER), jittered)
        return jittered


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def retryable_status(status: int, call: Call) -> bool:
    return status in ALWAYS_RETRY or (status >= 500 and call.idempotent)


def outcome(call: Call, status: int, headers: Any, content: bytes) -> Any:
    """The parsed answer of a 2xx, or the typed error of anything else."""
    import json

    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
        if 200 <= status < 300:
            raise ServerError(f"the server answered HTTP {status} with a body that is not JSON",
                              status=status) from None
    if 200 <= status < 300:
        return call.parse(body)
    return from_response(status, body, retry_after(headers))


def is_error(value: Any) -> bool:
    return isinstance(value, ApiError)


# --------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------


def _page(item_model: Any) -> Callable[[Any], Any]:
    def parse(body: Any) -> Any:
        return _models().Page[item_model].model_validate(body)

    return parse


def _list_of(item_model: Any, key: str) -> Callable[[Any], Any]:
    def parse(body: Any) -> Any:
        return [item_model.model_validate(x) for x in body[key]]

    return parse


def _one(model: Any) -> Callable[[Any], Any]:
    return model.model_validate


def _csv(values: str | Iterable[str] | None) -> str | None:
    if values is None:
        return None
    if isinstance(values, str):
        return values
    return ",".join(values)


def _params(**values: Any) -> list[tuple[str, str]]:
    out = []
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, datetime):
            v = v.isoformat()
        out.append((k, str(v)))
    return out


def health() -> Call:
    return Call("GET", "/healthz", parse=_one(_models().Health))


def create(memories: Sequence[Any], on_conflict: str = "error") -> Call:
    m = _models()
    items = [x if isinstance(x, m.MemoryIn) else (
        validated(m.MemoryIn, **x) if isinstance(x, dict) else x) for x in memories]
    req = validated(m.CreateRequest, memories=items, on_conflict=on_conflict)
    return Call("POST", "/v1/memories", json=req.model_dump(mode="json", exclude_unset=True),
                parse=_list_of(m.WriteResult, "results"), idempotent=False)


def get(memory_id: Any) -> Call:
    return Call("GET", f"/v1/memories/{as_id(memory_id)}", parse=_one(_models().Memory))


def list_(*, path: str | None, kind: Any, status: Any, tags: Any, valid_at: datetime | None,
          cursor: str | None, limit: int) -> Call:
    return Call("GET", "/v1/memories", params=_params(
        path=path, kind=_csv(kind), status=_csv(status), tags=_csv(tags), valid_at=valid_at,
        cursor=cursor, limit=limit), parse=_page(_models().Memory))


def update(memory_id: Any, expected_version: int, changes: dict[str, Any]) -> Call:
    m = _models()
    patch = validated(m.MemoryPatch, expected_version=expected_version, **changes)
    return Call("PATCH", f"/v1/memories/{as_id(memory_id)}", json=dump(patch),
                parse=_one(m.Memory), idempotent=False)


def delete(memory_id: Any) -> Call:
    return Call("DELETE", f"/v1/memories/{as_id(memory_id)}", parse=_one(_models().Deleted),
                idempotent=False)


def history(memory_id: Any) -> Call:
    return Call("GET", f"/v1/memories/{as_id(memory_id)}/history",
                parse=_list_of(_models().HistoryEntry, "items"))


def restore(memory_id: Any, version: int | None) -> Call:
    if version is not None and (not isinstance(version, int) or version < 1):
        raise InvalidInput("version must be a positive integer", field="version", status=None)
    return Call("POST", f"/v1/memories/{as_id(memory_id)}/restore",
                json={"version": version} if version is not None else None,
                parse=_one(_models().Memory), idempotent=False)


def forget(memory_id: Any) -> Call:
    # Forgetting twice answers as once: safe to retry.
    return Call("POST", f"/v1/memories/{as_id(memory_id)}/forget", parse=_one(_models().Forgotten))


def related(memory_id: Any) -> Call:
    return Call("GET", f"/v1/memories/{as_id(memory_id)}/related",
                parse=_list_of(_models().Relationship, "items"))


def messages_of(content: str | Sequence[Any], role: str = "user") -> list[Any]:
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    return list(content)


def ingest(messages: Sequence[Any], *, path: str | None, wait: bool,
           idempotency_key: str | None, timeout: float | None) -> Call:
    m = _models()
    req = validated(
        m.IngestRequest, path=path, messages=list(messages), wait=wait,
        # A key of our own when the caller gave none: a retried request then replays the
        # first receipt instead of ingesting twice.
        idempotency_key=idempotency_key or f"client-{uuid.uuid4().hex}",
    )
    return Call("POST", "/v1/ingest", json=req.model_dump(mode="json", exclude_none=True),
                parse=_one(m.Receipt), timeout=timeout)


def remember(content: str | Sequence[Any], path: str | None, *, as_is: bool, role: str,
             wait: bool, idempotency_key: str | None, timeout: float | None,
             fields: dict[str, Any]) -> Call:
    """What ``remember`` sends: an ingest (extraction decides what is kept and says why the
    rest is not), or with ``as_is`` one memory created verbatim through the write gate,
    answered by its single ``WriteResult``. :func:`to_read` and :func:`remembered` turn the
    answer into the ``Remembered`` every surface gives."""
    fields = {k: v for k, v in fields.items() if v is not None}
    if not as_is:
        if fields:
            name = next(iter(fields))
            raise InvalidInput(f"{name} applies only with as_is=True (extraction decides it)",
                               field=name, status=None)
        return ingest(messages_of(content, role), path=path, wait=wait,
                      idempotency_key=idempotency_key, timeout=timeout)
    if not isinstance(content, str):
        raise InvalidInput("as_is stores one statement: give a string", field="content",
                           status=None)
    if wait is not True:  # the write is immediate: there is nothing to leave queued
        raise InvalidInput("as_is writes at once: wait=False applies to extraction only"
                           if wait is False else "wait must be True or False",
                           field="wait", status=None)
    for name, given in (("role", role != "user"), ("idempotency_key", idempotency_key)):
        if given:  # a repeated statement reinforces what is held: nothing to replay
            raise InvalidInput(f"{name} applies only to extraction, not with as_is",
                               field=name, status=None)
    call = create([{"content": content, "path": path, **fields}])
    results = call.parse
    call.parse = lambda body: results(body)[0]
    return call


def to_read(written: Any) -> list[uuid.UUID]:
    """The memories ``remember`` reads back (with the caller's key) to show their content:
    a receipt's kept items, or the one memory a statement stored as is landed in."""
    from strata.ingest import remember as remember_models

    if isinstance(written, _models().Receipt):
        return remember_models.to_show(written.items)
    return [written.id] if written.id is not None and written.status != "blocked" else []


def remembered(written: Any, path: str | None, memories: dict[uuid.UUID, Any]) -> Any:
    """``remember``'s answer from what it sent back and the memories read for it."""
    from strata.ingest import remember as remember_models

    if isinstance(written, _models().Receipt):
        return remember_models.of_receipt(written, {k: m.content for k, m in memories.items()})
    memory = memories.get(written.id)
    return remember_models.of_write(written, path, memory.content if memory else None,
                                    memory.path if memory else None)


def one_item(exc: ApiError) -> ApiError:
    """A refusal of the one memory ``remember(as_is=True)`` sent, naming its own field
    (``content``) rather than the batch's ``memories[0].content``."""
    if exc.field and exc.field.startswith("memories[0]."):
        exc.field = exc.field.removeprefix("memories[0].")
    return exc


def receipt(receipt_id: Any) -> Call:
    return Call("GET", f"/v1/ingest/{as_id(receipt_id, 'receipt_id')}", parse=_one(_models().Receipt))


def search(query: str, **options: Any) -> Call:
    m = _models()
    req = validated(m.SearchRequest, query=query,
                    **{k: v for k, v in options.items() if v is not None})
    return Call("POST", "/v1/search", json=req.model_dump(mode="json", exclude_unset=True),
                parse=_list_of(m.SearchResult, "results"))


def paths(*, path: str | None, cursor: str | None, limit: int) -> Call:
    return Call("GET", "/v1/paths", params=_params(path=path, cursor=cursor, limit=limit),
                parse=_page(_models().PathCount))


def review_list(*, path: str | None, cursor: str | None, limit: int) -> Call:
    return Call("GET", "/v1/review", params=_params(path=path, cursor=cursor, limit=limit),
                parse=_page(_models().ReviewItem))


def events(*, after: str | None, path: str | None, types: Sequence[str] | None,
           limit: int) -> Call:
    return Call("GET", "/v1/events", params=_params(
        after=after, path=path, types=",".join(types) if types else None, limit=limit),
        parse=_page(_models().Event))


def promote(memory_id: Any) -> Call:
    return Call("POST", f"/v1/review/{as_id(memory_id)}/promote", parse=_one(_models().Memory),
                idempotent=False)


def reject(memory_id: Any, suppress: bool, until: datetime | None = None) -> Call:
    body: dict[str, Any] = {"suppress": bool(suppress)}
    if until is not None:
        body["until"] = until.isoformat()
    return Call("POST", f"/v1/review/{as_id(memory_id)}/reject", json=body,
                parse=_one(_models().Memory), idempotent=False)


def merge(memory_id: Any, into: Any) -> Call:
    return Call("POST", f"/v1/review/{as_id(memory_id)}/merge", json={"into": as_id(into, "into")},
                parse=_one(_models().Memory), idempotent=False)


def rule_set(path: str, **fields: Any) -> Call:
    """``PUT /v1/rules``: the fields of ``RuleIn``; the whole rule at ``path`` is replaced."""
    body = validated(_models().RuleIn, path=path, **fields)
    return Call("PUT", "/v1/rules", json=dump(body) | {"path": path},
                parse=_one(_models().Rule))


def rule_list(*, path: str | None) -> Call:
    return Call("GET", "/v1/rules", params=_params(path=path),
                parse=_list_of(_models().Rule, "items"))


def rule_get(rule_id: Any) -> Call:
    return Call("GET", f"/v1/rules/{as_id(rule_id)}", parse=_one(_models().Rule))


def rule_delete(rule_id: Any) -> Call:
    return Call("DELETE", f"/v1/rules/{as_id(rule_id)}", parse=_one(_models().RuleDeleted),
                idempotent=False)


def rule_history(rule_id: Any) -> Call:
    return Call("GET", f"/v1/rules/{as_id(rule_id)}/history",
                parse=_list_of(_models().RuleVersion, "items"))
