"""Bad input over HTTP: every malformed request answers a 4xx (never a 500) with exactly
``{"error": {"code", "message", "field"?}}`` naming the offending field, leaks no traceback,
and loses or changes nothing already stored.

A seeded memory (with history) is snapshotted from the database before the bad requests;
after every single bad request the tenant's memories, history and tombstones must still equal
that snapshot. Cases run in loops inside a few tests (one database each) to stay fast; every
failure message names its case.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

import pytest

ALICE = "users.alice"
LEAKS = ("Traceback", 'File "/', "site-packages", "psycopg", "pydantic_core", "sqlstate")

_SNAPSHOT = {
    "memories": "SELECT to_jsonb(m) - 'embedding' - 'fts' AS r FROM memories m"
                " WHERE tenant_id = %s ORDER BY id",
    "history": "SELECT to_jsonb(h) AS r FROM memory_history h WHERE tenant_id = %s ORDER BY id",
    "tombstones": "SELECT to_jsonb(t) - 'embedding' AS r FROM tombstones t"
                  " WHERE tenant_id = %s ORDER BY id",
}


@dataclass
class Seed:
    client: Any
    db: Any
    tenant: Any
    id: str
    version: int
    before: dict[str, list[Any]]

    @property
    def headers(self) -> dict[str, str]:
        return self.tenant.headers

    def snapshot(self) -> dict[str, list[Any]]:
        with self.db.connection() as conn:
            return {
                name: [row["r"] for row in conn.execute(sql, (self.tenant.tenant_id,)).fetchall()]
                for name, sql in _SNAPSHOT.items()
            }

    def seed_row(self) -> list[Any]:
        snap = self.snapshot()
        return [r for r in snap["memories"] if r["id"] == self.id] + [
            r for r in snap["history"] if r["memory_id"] == self.id]

    def assert_unchanged(self, case: str = "") -> None:
        assert self.snapshot() == self.before, f"stored state changed by {case}"

    def assert_seed_unchanged(self, case: str = "") -> None:
        before = [r for r in self.before["memories"] if r["id"] == self.id] + [
            r for r in self.before["history"] if r["memory_id"] == self.id]
        assert self.seed_row() == before, f"seed changed by {case}"
        got = self.client.get(f"/v1/memories/{self.id}", headers=self.headers)
        assert got.status_code == 200 and got.json()["content"] == SEED_CONTENT, case

    def reject(self, resp, status: int, code: str, field: str | None, case: str) -> dict:
        """The contract's error answer, and nothing stored lost or changed."""
        check_error_body(resp, case, status=status, code=code, field=field)
        self.assert_unchanged(case)
        return resp.json()["error"]


def check_error_body(resp, case: str, *, status: int | None = None, code: str | None = None,
                     field: str | None = None, any_field: bool = False) -> dict:
    assert 400 <= resp.status_code < 500, f"{case}: {resp.status_code} {resp.text[:500]}"
    if status is not None:
        assert resp.status_code == status, f"{case}: {resp.status_code} {resp.text[:500]}"
    body = resp.json()
    assert set(body) == {"error"}, f"{case}: {body}"
    err = body["error"]
    # 409/412 answers may add their documented detail (tombstone_id, current_version);
    # a bad-input answer carries nothing beyond code, message and field.
    extra = {"tombstone_id", "current_version"} if resp.status_code in (409, 412) else set()
    assert {"code", "message"} <= set(err) <= {"code", "message", "field"} | extra, \
        f"{case}: {body}"
    assert isinstance(err["code"], str) and err["code"], f"{case}: {body}"
    assert isinstance(err["message"], str) and err["message"], f"{case}: {body}"
    if code is not None:
        assert err["code"] == code, f"{case}: {body}"
    if not any_field:
        assert err.get("field") == field, f"{case}: expected field {field!r}: {body}"
    for leak in LEAKS:
        assert leak not in resp.text, f"{case}: {leak!r} leaked: {resp.text[:500]}"
    return err


SEED_CONTENT = "Seed fact: the vault is in Zurich"


@pytest.fixture
def seed(client, tenant, db) -> Seed:
    """One memory with a name, tags, meta and one history row; its stored state snapshotted."""
    r = client.post("/v1/memories", headers=tenant.headers, json={"memories": [{
        "content": SEED_CONTENT, "path": ALICE, "name": "vault", "tags": ["seed"],
        "meta": {"k": "v"}, "kind": "fact"}]})
    assert r.status_code == 200, r.text
    mid = r.json()["results"][0]["id"]
    r = client.patch(f"/v1/memories/{mid}", headers=tenant.headers,
                     json={"expected_version": 1, "importance": 0.7})
    assert r.status_code == 200, r.text
    s = Seed(client, db, tenant, mid, 2, {})
    s.before = s.snapshot()
    assert len(s.before["memories"]) == 1 and len(s.before["history"]) == 1
    return s


def post_raw(seed: Seed, url: str, data: bytes | str, method: str = "POST"):
    return seed.client.request(method, url, content=data, headers={
        **seed.headers, "Content-Type": "application/json"})


def one(**fields: Any) -> dict[str, Any]:
    return {"memories": [{"content": "A fresh fact", "path": ALICE, **fields}]}


# --------------------------------------------------------------------------------------
# Malformed bodies
# --------------------------------------------------------------------------------------

DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000


def test_invalid_json_is_400_invalid_json(seed):
    """Given a seeded memory
    When bodies that are not JSON (truncated, garbage, invalid UTF-8, unparseably deep) are
         sent to create, patch and restore
    Then each is 400 invalid_json and nothing stored changes; a valid body on the same route
         is accepted (control)."""
    mid = seed.id
    cases = {
        "truncated": ("/v1/memories", '{"memories": ['),
        "garbage": ("/v1/memories", "not json at all"),
        "trailing-comma": ("/v1/memories", '{"memories": [],}'),
        "single-quotes": ("/v1/memories", "{'memories': []}"),
        "bad-utf8-bytes": ("/v1/memories", b"\xff\xfe\xfd"),
        "bad-utf8-in-string": ("/v1/memories",
                               b'{"memories": [{"content": "caf\xe9", "path": "users.alice"}]}'),
        "too-deep": ("/v1/memories", '{"memories": [{"content": "x", "path": "users.alice",'
                                     ' "meta": ' + DEEP + "}]}"),
        "patch-truncated": (f"/v1/memories/{mid}", '{"expected_version": '),
        "restore-garbage": (f"/v1/memories/{mid}/restore", "{version: 1}"),
    }
    for case, (url, data) in cases.items():
        method = "PATCH" if case.startswith("patch") else "POST"
        seed.reject(post_raw(seed, url, data, method), 400, "invalid_json", None, case)

    ok = post_raw(seed, "/v1/memories", json.dumps(one()))
    assert ok.status_code == 200, ok.text


def test_non_finite_numbers_are_refused(seed):
    """Given a seeded memory
    When NaN/Infinity (accepted by Python's JSON parser, not by JSON or jsonb) appear in meta
         or importance
    Then 4xx naming the field, nothing stored changes."""
    cases = {
        "meta-nan": ('{"memories": [{"content": "x y", "path": "users.alice",'
                     ' "meta": {"a": NaN}}]}', "memories[0].meta"),
        "meta-inf-nested": ('{"memories": [{"content": "x y", "path": "users.alice",'
                            ' "meta": {"a": [1, {"b": -Infinity}]}}]}', "memories[0].meta"),
        "importance-nan": ('{"memories": [{"content": "x y", "path": "users.alice",'
                           ' "importance": NaN}]}', "memories[0].importance"),
        "importance-inf": ('{"memories": [{"content": "x y", "path": "users.alice",'
                           ' "importance": 1e999}]}', "memories[0].importance"),
    }
    for case, (data, field) in cases.items():
        seed.reject(post_raw(seed, "/v1/memories", data), 422, "invalid_input", field, case)


def test_body_of_wrong_shape_or_types(seed):
    """Given a seeded memory
    When create, patch and restore get bodies of the wrong shape or field types
    Then 422 invalid_input naming the field (none for a non-object body), nothing changes."""
    mid, v = seed.id, seed.version
    cases: dict[str, tuple[str, str, Any, str | None]] = {
        "body-list": ("POST", "/v1/memories", [], None),
        "body-null": ("POST", "/v1/memories", None, None),
        "body-string": ("POST", "/v1/memories", "memories", None),
        "body-number": ("POST", "/v1/memories", 5, None),
        "memories-missing": ("POST", "/v1/memories", {}, "memories"),
        "memories-string": ("POST", "/v1/memories", {"memories": "x"}, "memories"),
        "memories-object": ("POST", "/v1/memories", {"memories": {"content": "x"}}, "memories"),
        "item-string": ("POST", "/v1/memories", {"memories": ["x"]}, "memories[0]"),
        "content-missing": ("POST", "/v1/memories", {"memories": [{"path": ALICE}]},
                            "memories[0].content"),
        "content-number": ("POST", "/v1/memories", one(content=5), "memories[0].content"),
        "content-list": ("POST", "/v1/memories", one(content=["a"]), "memories[0].content"),
        "path-number": ("POST", "/v1/memories", one(path=5), "memories[0].path"),
        "tags-string": ("POST", "/v1/memories", one(tags="a,b"), "memories[0].tags"),
        "tags-int": ("POST", "/v1/memories", one(tags=[1]), "memories[0].tags[0]"),
        "importance-string": ("POST", "/v1/memories", one(importance="high"),
                              "memories[0].importance"),
        "valid-from-text": ("POST", "/v1/memories", one(valid_from="yesterday"),
                            "memories[0].valid_from"),
        "on-conflict-number": ("POST", "/v1/memories", {**one(), "on_conflict": 5}, "on_conflict"),
        "name-number": ("POST", "/v1/memories", one(name=7), "memories[0].name"),
        "second-item-bad": ("POST", "/v1/memories",
                            {"memories": [one()["memories"][0], {"content": True, "path": ALICE}]},
                            "memories[1].content"),
        "patch-list": ("PATCH", f"/v1/memories/{mid}", [v], None),
        "patch-version-text": ("PATCH", f"/v1/memories/{mid}", {"expected_version": "two"},
                               "expected_version"),
        "patch-version-zero": ("PATCH", f"/v1/memories/{mid}", {"expected_version": 0},
                               "expected_version"),
        "patch-version-float": ("PATCH", f"/v1/memories/{mid}", {"expected_version": 2.5},
                                "expected_version"),
        # the version columns are integers: no row can have a larger version
        "patch-version-past-integer": ("PATCH", f"/v1/memories/{mid}",
                                       {"expected_version": 2**31}, "expected_version"),
        "patch-version-past-bigint": ("PATCH", f"/v1/memories/{mid}",
                                      {"expected_version": 2**64}, "expected_version"),
        "restore-version-past-integer": ("POST", f"/v1/memories/{mid}/restore",
                                         {"version": 2**31}, "version"),
        "patch-pinned-text": ("PATCH", f"/v1/memories/{mid}",
                              {"expected_version": v, "pinned": "maybe"}, "pinned"),
        "patch-content-number": ("PATCH", f"/v1/memories/{mid}",
                                 {"expected_version": v, "content": 3}, "content"),
        "patch-valid-to-text": ("PATCH", f"/v1/memories/{mid}",
                                {"expected_version": v, "valid_to": "soon"}, "valid_to"),
        "restore-version-text": ("POST", f"/v1/memories/{mid}/restore", {"version": "one"},
                                 "version"),
        "restore-version-zero": ("POST", f"/v1/memories/{mid}/restore", {"version": 0},
                                 "version"),
        "restore-list": ("POST", f"/v1/memories/{mid}/restore", [1], None),
    }
    for case, (method, url, body, field) in cases.items():
        r = post_raw(seed, url, json.dumps(body), method)
        seed.reject(r, 422, "invalid_input", field, case)


def test_unknown_fields_are_refused(seed):
    """Given a seeded memory
    When a body carries a field the contract does not define (top level, per item, in a
         patch or a restore)
    Then 422 naming that field, nothing changes; the same body without it is accepted."""
    mid, v = seed.id, seed.version
    cases = {
        "top-level": ("POST", "/v1/memories", {**one(), "dry_run": True}, "dry_run"),
        "per-item": ("POST", "/v1/memories", one(colour="red"), "memories[0].colour"),
        "second-item": ("POST", "/v1/memories",
                        {"memories": [one()["memories"][0], {**one()["memories"][0], "id": "x"}]},
                        "memories[1].id"),
        "patch-status": ("PATCH", f"/v1/memories/{mid}", {"expected_version": v,
                                                          "status": "rejected"}, "status"),
        "patch-version-field": ("PATCH", f"/v1/memories/{mid}",
                                {"expected_version": v, "version": 9}, "version"),
        "restore-force": ("POST", f"/v1/memories/{mid}/restore", {"version": 1, "force": True},
                          "force"),
    }
    for case, (method, url, body, field) in cases.items():
        r = seed.client.request(method, url, headers=seed.headers, json=body)
        seed.reject(r, 422, "invalid_input", field, case)

    ok = seed.client.post("/v1/memories", headers=seed.headers, json=one())
    assert ok.status_code == 200 and ok.json()["results"][0]["status"] == "inserted", ok.text


# --------------------------------------------------------------------------------------
# Content, paths, enums, ranges
# --------------------------------------------------------------------------------------


def test_content_size_is_counted_in_utf8_bytes(seed):
    """Given a seeded memory
    When content is 32769 ASCII bytes, or 16385 two-byte characters (32770 bytes, far fewer
         than 32768 characters), on create or patch
    Then 422 naming the content field, nothing changes; exactly 32768 bytes of two-byte
         characters is accepted (control: the limit is bytes, and it is inclusive)."""
    mid, v = seed.id, seed.version
    cases = {
        "ascii-over": ("POST", "/v1/memories", one(content="a" * 32769), "memories[0].content"),
        "multibyte-over": ("POST", "/v1/memories", one(content="é" * 16385),
                           "memories[0].content"),
        "4-byte-over": ("POST", "/v1/memories", one(content="😀" * 8193), "memories[0].content"),
        "patch-multibyte-over": ("PATCH", f"/v1/memories/{mid}",
                                 {"expected_version": v, "content": "é" * 16385}, "content"),
    }
    for case, (method, url, body, field) in cases.items():
        r = seed.client.request(method, url, headers=seed.headers, json=body)
        seed.reject(r, 422, "invalid_input", field, case)

    at_limit = "é" * 16384
    assert len(at_limit.encode()) == 32768
    ok = seed.client.post("/v1/memories", headers=seed.headers, json=one(content=at_limit))
    assert ok.status_code == 200 and ok.json()["results"][0]["status"] == "inserted", ok.text
    got = seed.client.get(f"/v1/memories/{ok.json()['results'][0]['id']}", headers=seed.headers)
    assert got.json()["content"] == at_limit
    seed.assert_seed_unchanged("at-limit control")


def test_empty_or_wordless_content(seed):
    """Given a seeded memory
    When content is empty, whitespace (ASCII or Unicode) or punctuation only, on create or
         patch
    Then 422 naming the content field, nothing changes."""
    mid, v = seed.id, seed.version
    for i, bad in enumerate(["", " ", "   \n\t  ", "\u00a0\u2003\u3000", "...", " ?! ,;: "]):
        r = seed.client.post("/v1/memories", headers=seed.headers, json=one(content=bad))
        seed.reject(r, 422, "invalid_input", "memories[0].content", f"create #{i} {bad!r}")
        r = seed.client.patch(f"/v1/memories/{mid}", headers=seed.headers,
                              json={"expected_version": v, "content": bad})
        seed.reject(r, 422, "invalid_input", "content", f"patch #{i} {bad!r}")


BAD_PATHS = {
    "double-dot": "a..b",
    "space": "a b",
    "empty": "",
    "non-ascii": "ä",
    "non-ascii-label": "users.bjørn",
    "leading-dot": ".users",
    "trailing-dot": "users.",
    "slash": "users/alice",
    "trailing-newline": "users.alice\n",
    "tab": "users\talice",
    "label-too-long": "a" * 256,
    "path-too-long": ".".join(["abcd"] * 300),
    "nul": "users.al\x00ice",
}


def test_invalid_paths(seed):
    """Given a seeded memory
    When an invalid path is used to create, to move in a patch, or to filter a list
    Then 422 naming the path field, nothing changes; a valid long path (255-char label) is
         accepted (control)."""
    mid, v = seed.id, seed.version
    for case, bad in BAD_PATHS.items():
        r = seed.client.post("/v1/memories", headers=seed.headers, json=one(path=bad))
        seed.reject(r, 422, "invalid_input", "memories[0].path", f"create {case}")
        r = seed.client.patch(f"/v1/memories/{mid}", headers=seed.headers,
                              json={"expected_version": v, "path": bad})
        seed.reject(r, 422, "invalid_input", "path", f"patch {case}")
        r = seed.client.get("/v1/memories", headers=seed.headers, params={"path": bad})
        seed.reject(r, 422, "invalid_input", "path", f"list {case}")

    ok = seed.client.post("/v1/memories", headers=seed.headers,
                          json=one(path="users." + "a" * 255))
    assert ok.status_code == 200, ok.text


def test_unknown_enum_values(seed):
    """Given a seeded memory
    When kind/on_conflict in a body, or kind/status in a list query, is not a known value
    Then 422 naming the field, nothing changes; known values are accepted (control)."""
    mid, v = seed.id, seed.version
    c, h = seed.client, seed.headers
    cases = [
        ("create kind", c.post("/v1/memories", headers=h, json=one(kind="opinion")),
         "memories[0].kind"),
        ("create kind case", c.post("/v1/memories", headers=h, json=one(kind="Fact")),
         "memories[0].kind"),
        ("on_conflict", c.post("/v1/memories", headers=h, json={**one(), "on_conflict": "merge"}),
         "on_conflict"),
        ("patch kind", c.patch(f"/v1/memories/{mid}", headers=h,
                               json={"expected_version": v, "kind": "rumour"}), "kind"),
        ("query kind", c.get("/v1/memories", headers=h, params={"kind": "opinion"}), "kind"),
        ("query kind in list", c.get("/v1/memories", headers=h, params={"kind": "fact,opinion"}),
         "kind"),
        ("query kind repeated", c.get("/v1/memories", headers=h,
                                      params=[("kind", "fact"), ("kind", "nope")]), "kind"),
        ("query status", c.get("/v1/memories", headers=h, params={"status": "deleted"}),
         "status"),
        ("query status mixed", c.get("/v1/memories", headers=h,
                                     params={"status": "active,forgotten"}), "status"),
        ("query status all+x", c.get("/v1/memories", headers=h, params={"status": "all,active"}),
         "status"),
    ]
    for case, r, field in cases:
        seed.reject(r, 422, "invalid_input", field, case)

    ok = c.get("/v1/memories", headers=h, params={"kind": "fact", "status": "active"})
    assert ok.status_code == 200 and [m["id"] for m in ok.json()["items"]] == [mid], ok.text


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_bad_cursors_and_limits(seed):
    """Given a seeded memory
    When a list request carries a cursor the server never issued, or a limit outside 1..200,
         or an unparseable valid_at
    Then 422 naming cursor / limit / valid_at, nothing changes; an issued cursor and limits
         1 and 200 work (control)."""
    c, h = seed.client, seed.headers
    cursors = {
        "garbage": "garbage!!",
        "not-json": _b64(b"hello"),
        "json-number": _b64(b"12"),
        "json-object": _b64(b'{"a": 1, "b": 2}'),
        "wrong-types": _b64(b"[1, 2]"),
        "three-parts": _b64(b'["2024-01-01T00:00:00+00:00", "x", "y"]'),
        "bad-date": _b64(b'["not-a-date", "00000000-0000-0000-0000-000000000000"]'),
        "bad-uuid": _b64(b'["2024-01-01T00:00:00+00:00", "nope"]'),
        "bad-utf8": _b64(b"\xff\xfe\xfd\xfc"),
        "nul": "\x00",
        "non-ascii": "ä",
        # A 5,000-deep JSON array used to exhaust the parser's recursion limit: a 500.
        "deep-json": _b64(b"[" * 5000 + b"]" * 5000),
        "shallow-deep": _b64(b"[" * 60 + b"]" * 60),
        "long": "A" * 5000,
    }
    for case, cur in cursors.items():
        r = c.get("/v1/memories", headers=h, params={"cursor": cur})
        seed.reject(r, 422, "invalid_input", "cursor", f"cursor {case}")
        r = c.get("/v1/review", headers=h, params={"cursor": cur})
        seed.reject(r, 422, "invalid_input", "cursor", f"review cursor {case}")
    # The audit chain's cursor is a sequence number: ASCII digits, not any Unicode digit.
    for bad in ["²", "٣", "-1", "1e3", "9" * 40]:
        r = c.get("/v1/audit", headers=h, params={"cursor": bad})
        seed.reject(r, 422, "invalid_input", "cursor", f"audit cursor {bad!r}")
    assert c.get("/v1/audit", headers=h, params={"cursor": "0"}).status_code == 200
    for bad in ["0", "-1", "201", "10000", "ten", "1.5", ""]:
        r = c.get("/v1/memories", headers=h, params={"limit": bad})
        seed.reject(r, 422, "invalid_input", "limit", f"limit {bad!r}")
    for bad in ["yesterday", "2024-13-01", "\x00"]:
        r = c.get("/v1/memories", headers=h, params={"valid_at": bad})
        seed.reject(r, 422, "invalid_input", "valid_at", f"valid_at {bad!r}")

    for limit in ("1", "200"):
        ok = c.get("/v1/memories", headers=h, params={"limit": limit})
        assert ok.status_code == 200 and len(ok.json()["items"]) == 1, ok.text
    r = c.post("/v1/memories", headers=h, json={"memories": [
        {"content": f"extra {i}", "path": ALICE} for i in range(2)]})
    assert r.status_code == 200, r.text
    first = c.get("/v1/memories", headers=h, params={"limit": 1}).json()
    assert first["next_cursor"]
    nxt = c.get("/v1/memories", headers=h, params={"limit": 1, "cursor": first["next_cursor"]})
    assert nxt.status_code == 200 and len(nxt.json()["items"]) == 1, nxt.text
    assert nxt.json()["items"][0]["id"] != first["items"][0]["id"]


ID_ROUTES = [
    ("GET", "/v1/memories/{}"),
    ("PATCH", "/v1/memories/{}"),
    ("DELETE", "/v1/memories/{}"),
    ("GET", "/v1/memories/{}/history"),
    ("POST", "/v1/memories/{}/restore"),
    ("POST", "/v1/memories/{}/forget"),
    ("GET", "/v1/memories/{}/related"),
]


def test_bad_uuids_in_path(seed):
    """Given a seeded memory
    When any id-addressed route gets an id that is not a UUID
    Then 422 naming memory_id, nothing changes; a well-formed unknown id is 404 (control)."""
    for method, tpl in ID_ROUTES:
        for bad in ["not-a-uuid", "1234", "00000000-0000-0000-0000-00000000000g",
                    seed.id + "0", "%00"]:
            body = {"expected_version": seed.version} if method == "PATCH" else None
            r = seed.client.request(method, tpl.format(bad), headers=seed.headers, json=body)
            seed.reject(r, 422, "invalid_input", "memory_id", f"{method} {tpl} {bad!r}")
        unknown = "00000000-0000-4000-8000-000000000000"
        body = {"expected_version": 1} if method == "PATCH" else None
        r = seed.client.request(method, tpl.format(unknown), headers=seed.headers, json=body)
        seed.reject(r, 404, "not_found", None, f"{method} {tpl} unknown")


@dataclass
class RawResponse:
    """Just enough of a response for ``check_error_body``."""

    status_code: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def raw_asgi(app, method: str, path: str, headers: list[tuple[bytes, bytes]],
             body: bytes = b"") -> RawResponse:
    """Send one request to the ASGI app with header bytes exactly as given (the test client
    re-encodes non-ASCII header bytes; a real server hands them over as latin-1)."""
    import asyncio

    sent: list[dict] = []
    received = False

    async def receive() -> dict:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return RawResponse(start["status"], text.decode())


def test_bad_if_match(seed, app):
    """Given a seeded memory at version 2
    When PATCH carries an If-Match that is not a version (and no expected_version), including
         non-ASCII "digits" such as superscript two sent as a raw latin-1 byte
    Then 422 naming If-Match, nothing changes; If-Match W/"2" succeeds (control)."""
    mid = seed.id
    for bad in [b"abc", b"*", b'"', b'W/"x"', b"", b"1.5", b"-1", b"2 3", b"1, 2", b"0x2"]:
        h = {**seed.headers, "If-Match": bad}
        r = seed.client.patch(f"/v1/memories/{mid}", headers=h, json={"importance": 0.1})
        seed.reject(r, 422, "invalid_input", "If-Match", f"If-Match {bad!r}")
    auth = seed.headers["Authorization"].encode()
    for bad in [b"\xb2", b"\xb9", b'W/"\xb3"', b"1\xbd"]:
        r = raw_asgi(app, "PATCH", f"/v1/memories/{mid}", [
            (b"authorization", auth), (b"content-type", b"application/json"),
            (b"if-match", bad)], b'{"importance": 0.1}')
        seed.reject(r, 422, "invalid_input", "If-Match", f"raw If-Match {bad!r}")

    h = {**seed.headers, "If-Match": 'W/"2"'}
    ok = seed.client.patch(f"/v1/memories/{mid}", headers=h, json={"importance": 0.1})
    assert ok.status_code == 200 and ok.json()["version"] == 3, ok.text


def test_nul_characters_everywhere(seed):
    """Given a seeded memory
    When NUL appears in content, meta (value or key, nested), tags, name, slot, a patch, or
         list query parameters
    Then 422 naming the field, nothing changes."""
    mid, v = seed.id, seed.version
    c, h = seed.client, seed.headers
    cases = [
        ("content", c.post("/v1/memories", headers=h, json=one(content="a\x00b")),
         "memories[0].content"),
        ("meta value", c.post("/v1/memories", headers=h, json=one(meta={"k": "a\x00"})),
         "memories[0].meta"),
        ("meta key", c.post("/v1/memories", headers=h, json=one(meta={"\x00": 1})),
         "memories[0].meta"),
        ("meta nested", c.post("/v1/memories", headers=h,
                               json=one(meta={"a": [{"b": ["ok", "\x00"]}]})), "memories[0].meta"),
        ("tag", c.post("/v1/memories", headers=h, json=one(tags=["ok", "x\x00"])),
         "memories[0].tags[1]"),
        ("name", c.post("/v1/memories", headers=h, json=one(name="n\x00")), "memories[0].name"),
        ("slot", c.post("/v1/memories", headers=h, json=one(slot="s\x00")), "memories[0].slot"),
        ("patch content", c.patch(f"/v1/memories/{mid}", headers=h,
                                  json={"expected_version": v, "content": "\x00 x"}), "content"),
        ("patch meta", c.patch(f"/v1/memories/{mid}", headers=h,
                               json={"expected_version": v, "meta": {"a": "\x00"}}), "meta"),
        ("patch tags", c.patch(f"/v1/memories/{mid}", headers=h,
                               json={"expected_version": v, "tags": ["\x00"]}), "tags[0]"),
        ("patch slot", c.patch(f"/v1/memories/{mid}", headers=h,
                               json={"expected_version": v, "slot": "a\x00"}), "slot"),
        ("query path", c.get("/v1/memories", headers=h, params={"path": "users\x00"}), "path"),
        ("query tags", c.get("/v1/memories", headers=h, params={"tags": "se\x00ed"}), "tags"),
        ("query kind", c.get("/v1/memories", headers=h, params={"kind": "fact\x00"}), "kind"),
        ("query status", c.get("/v1/memories", headers=h, params={"status": "\x00"}), "status"),
    ]
    for case, r, field in cases:
        seed.reject(r, 422, "invalid_input", field, case)


def test_lone_surrogates_are_refused(seed):
    """Given a seeded memory
    When a JSON string holds an unpaired UTF-16 surrogate (valid JSON, not encodable text) in
         content, tags, meta, name or slot
    Then 422 naming the field, nothing changes."""
    cases = {
        "content": ('"content": "x \\ud800 y"', "memories[0].content"),
        "tag": ('"content": "x y", "tags": ["\\udc00"]', "memories[0].tags[0]"),
        "meta": ('"content": "x y", "meta": {"k": "\\ud83d"}', "memories[0].meta"),
        "meta-key": ('"content": "x y", "meta": {"\\ud83d": 1}', "memories[0].meta"),
        "name": ('"content": "x y", "name": "\\ud800"', "memories[0].name"),
        "slot": ('"content": "x y", "slot": "\\ud800"', "memories[0].slot"),
    }
    for case, (fields, field) in cases.items():
        data = '{"memories": [{"path": "users.alice", ' + fields + "}]}"
        seed.reject(post_raw(seed, "/v1/memories", data), 422, "invalid_input", field, case)
    data = f'{{"expected_version": {seed.version}, "tags": ["\\ud800"]}}'
    seed.reject(post_raw(seed, f"/v1/memories/{seed.id}", data, "PATCH"), 422,
                "invalid_input", "tags[0]", "patch tag")
    # Control: a properly paired surrogate (an emoji) is fine.
    ok = post_raw(seed, "/v1/memories",
                  '{"memories": [{"path": "users.alice", "content": "party \\ud83c\\udf89"}]}')
    assert ok.status_code == 200, ok.text


def test_meta_must_be_an_object(seed):
    """Given a seeded memory
    When meta is a list, string, number or null on create or patch
    Then 422 naming meta, nothing changes."""
    for bad in [[], ["a"], "x", 5, True, None]:
        r = seed.client.post("/v1/memories", headers=seed.headers, json=one(meta=bad))
        seed.reject(r, 422, "invalid_input", "memories[0].meta", f"create meta={bad!r}")
        if bad is None:
            continue  # null in a PATCH means "leave as is"
        r = seed.client.patch(f"/v1/memories/{seed.id}", headers=seed.headers,
                              json={"expected_version": seed.version, "meta": bad})
        seed.reject(r, 422, "invalid_input", "meta", f"patch meta={bad!r}")


def test_instants_outside_the_storable_years_are_refused(seed):
    """Given a seeded memory
    When a create, a patch, an ingest message or a search carries a timestamp in year 1 or
         9999 (which used to end an ingest as db_write_failed)
    Then 422 naming the field, nothing changes; a date in 1850 is accepted (control)."""
    c, h, mid, v = seed.client, seed.headers, seed.id, seed.version
    for when in ("0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z"):
        seed.reject(c.post("/v1/memories", headers=h, json=one(valid_from=when)), 422,
                    "invalid_input", "memories[0].valid_from", f"create {when}")
        seed.reject(c.patch(f"/v1/memories/{mid}", headers=h,
                            json={"expected_version": v, "valid_from": when}),
                    422, "invalid_input", "valid_from", f"patch {when}")
        seed.reject(c.post("/v1/ingest", headers=h, json={"path": ALICE, "wait": True,
                                                           "messages": [{
                                                               "role": "user", "at": when,
                                                               "content": "I live in Rome"}]}),
                    422, "invalid_input", "messages[0].at", f"ingest {when}")
        seed.reject(c.post("/v1/search", headers=h, json={"query": "fact", "valid_at": when}),
                    422, "invalid_input", "valid_at", f"search {when}")
    old = c.post("/v1/memories", headers=h, json=one(content="The mill was built",
                                                     valid_from="1850-06-01T00:00:00Z"))
    assert old.status_code == 200 and old.json()["results"][0]["status"] == "inserted", old.text
    said = c.post("/v1/ingest", headers=h, json={"path": ALICE, "wait": True, "messages": [
        {"role": "user", "at": "1999-12-31T00:00:00Z", "content": "I live in Rome"}]})
    assert said.status_code == 200 and said.json()["status"] == "wrote", said.text


def test_valid_range_in_patch(seed):
    """Given a seeded memory valid from its creation (now)
    When a patch sets valid_to before or equal to valid_from (given in the patch, or the
         stored one), including timestamps without an offset
    Then 422 naming valid_to (never a 500), nothing changes; a proper range is accepted."""
    v = seed.version
    cases = {
        "before": {"valid_from": "2024-02-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"},
        "equal": {"valid_from": "2024-02-01T00:00:00Z", "valid_to": "2024-02-01T00:00:00Z"},
        "before-stored-from": {"valid_to": "2000-01-01T00:00:00Z"},
        "offsets": {"valid_from": "2024-02-01T10:00:00+02:00",
                    "valid_to": "2024-02-01T07:30:00Z"},
        "naive-to-before-stored": {"valid_to": "2000-01-01T00:00:00"},
        "naive-from-aware-to": {"valid_from": "2024-02-01T00:00:00",
                                "valid_to": "2024-01-01T00:00:00Z"},
        "aware-from-naive-to": {"valid_from": "2024-02-01T00:00:00Z",
                                "valid_to": "2024-01-01T00:00:00"},
    }
    for case, body in cases.items():
        r = seed.client.patch(f"/v1/memories/{seed.id}", headers=seed.headers,
                              json={"expected_version": v, **body})
        seed.reject(r, 422, "invalid_input", "valid_to", case)

    ok = seed.client.patch(f"/v1/memories/{seed.id}", headers=seed.headers, json={
        "expected_version": v, "valid_from": "2024-01-01T00:00:00",
        "valid_to": "2024-02-01T00:00:00Z"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["valid_from"].startswith("2024-01-01T00:00:00")
    assert ok.json()["valid_to"].startswith("2024-02-01T00:00:00")


def test_numbers_and_sizes_out_of_range(seed):
    """Given a seeded memory
    When importance/confidence lie outside [0, 1], a batch holds 501 items or none, or tags,
         names and slots exceed their limits
    Then 422 naming the field, nothing changes; 0, 1 and a 500-item batch are accepted."""
    mid, v = seed.id, seed.version
    c, h = seed.client, seed.headers
    item = one()["memories"][0]
    cases = [
        ("importance -0.1", c.post("/v1/memories", headers=h, json=one(importance=-0.1)),
         "memories[0].importance"),
        ("importance 1.01", c.post("/v1/memories", headers=h, json=one(importance=1.01)),
         "memories[0].importance"),
        ("patch importance 2", c.patch(f"/v1/memories/{mid}", headers=h,
                                       json={"expected_version": v, "importance": 2}),
         "importance"),
        ("patch confidence -1", c.patch(f"/v1/memories/{mid}", headers=h,
                                        json={"expected_version": v, "confidence": -1}),
         "confidence"),
        ("empty batch", c.post("/v1/memories", headers=h, json={"memories": []}), "memories"),
        ("501 items", c.post("/v1/memories", headers=h, json={"memories": [
            {**item, "content": f"fact {i}"} for i in range(501)]}), "memories"),
        ("33 tags", c.post("/v1/memories", headers=h, json=one(tags=[f"t{i}" for i in range(33)])),
         "memories[0].tags"),
        ("long tag", c.post("/v1/memories", headers=h, json=one(tags=["x" * 65])),
         "memories[0].tags[0]"),
        ("empty tag", c.post("/v1/memories", headers=h, json=one(tags=[""])),
         "memories[0].tags[0]"),
        ("long name", c.post("/v1/memories", headers=h, json=one(name="n" * 201)),
         "memories[0].name"),
        ("empty name", c.post("/v1/memories", headers=h, json=one(name="")), "memories[0].name"),
        ("empty slot", c.post("/v1/memories", headers=h, json=one(slot="")), "memories[0].slot"),
        # meta is for filters and small annotations: a 10 MB one used to be accepted.
        ("huge meta", c.post("/v1/memories", headers=h, json=one(meta={"blob": "x" * 70_000})),
         "memories[0].meta"),
        ("patch huge meta", c.patch(f"/v1/memories/{mid}", headers=h, json={
            "expected_version": v, "meta": {f"k{i}": "y" * 1000 for i in range(80)}}), "meta"),
    ]
    for case, r, field in cases:
        seed.reject(r, 422, "invalid_input", field, case)

    near_limit = c.post("/v1/memories", headers=h, json=one(
        content="a fact with a big meta", meta={"blob": "x" * 60_000}))
    assert near_limit.status_code == 200, near_limit.text
    ok = c.post("/v1/memories", headers=h, json={"memories": [
        {**item, "content": f"edge {i}", "importance": i % 2} for i in range(500)]})
    assert ok.status_code == 200, ok.text
    assert [r["status"] for r in ok.json()["results"]] == ["inserted"] * 500
    seed.assert_seed_unchanged("500-item control")


# How clients label a JSON body they did not mark as JSON: curl -d, fetch() with a string,
# a form post, a multipart one, an unknown type, and none at all.
NON_JSON_TYPES = [None, "application/x-www-form-urlencoded", "text/plain; charset=utf-8",
                  "multipart/form-data; boundary=x", "application/xml", "application/octet-stream"]


def test_json_body_whatever_its_content_type(seed):
    """Given a seeded memory
    When a well-formed JSON body is sent with each content type a client may put on it
    (none, form, text, multipart, xml, octet-stream)
    Then it is read as JSON and stored (curl -d, the README's first example, works); the
    same body as application/json is the control."""
    c, h = seed.client, seed.headers
    for i, ctype in enumerate([*NON_JSON_TYPES, "application/json"]):
        headers = {**h, **({"Content-Type": ctype} if ctype else {})}
        content = f"Content type case {i} is stored"
        r = c.post("/v1/memories", headers=headers, content=json.dumps(one(content=content)))
        assert r.status_code == 200, f"{ctype}: {r.status_code} {r.text[:300]}"
        got = c.get(f"/v1/memories/{r.json()['results'][0]['id']}", headers=h).json()
        assert got["content"] == content, ctype


def test_a_body_past_the_byte_bound_is_refused_before_it_is_read(seed, db, embedder, settings):
    """Given a server whose body bound is 64 KiB (STRATA_MAX_BODY_BYTES)
    When a batch of memories over it is posted with its Content-Length, and again chunked
    (no Content-Length), to every route that takes a body
    Then each is 413 payload_too_large naming `body`, and nothing stored changed; a body of
    the same items just under the bound is stored (control: the bound is in bytes, not items)."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app

    limit = 64 * 1024
    app = create_app(db=db, embedder=embedder, settings=settings.model_copy(
        update={"max_body_bytes": limit, "rate_limit": False}))

    def batch(n: int) -> bytes:
        return json.dumps({"memories": [
            {"content": f"Bulk fact number {i}: " + "lorem ipsum " * 80, "path": ALICE}
            for i in range(n)]}).encode()

    n = 1
    while len(batch(n + 1)) <= limit:
        n += 1
    under, over = batch(n), batch(n + 1)
    assert len(under) <= limit < len(over) and n >= 10
    with TestClient(app, raise_server_exceptions=False) as c:
        h = {**seed.headers, "Content-Type": "application/json"}
        for method, url in _json_body_operations(app):
            for body in (over, iter([over[:limit // 2], over[limit // 2:]])):
                r = c.request(method, url, content=body, headers=h)
                err = r.json().get("error", {})
                assert (r.status_code, err.get("code"), err.get("field")) == (
                    413, "payload_too_large", "body"), (method, url, r.status_code, r.text[:200])
        seed.assert_unchanged("an oversized body")
        r = c.post("/v1/memories", content=under, headers=h)
        assert r.status_code == 200 and len(r.json()["results"]) == n, r.text[:300]


def _json_body_operations(app) -> list[tuple[str, str]]:
    """Every (method, path) of the app whose route takes a JSON body, ids filled in."""
    from fastapi.routing import APIRoute

    from strata.api.openapi import flat_routes

    ops = []
    for route in flat_routes(app.routes):
        route = getattr(route, "original_route", route)
        if isinstance(route, APIRoute) and route.body_field is not None:
            path = route.path_format.replace("{memory_id}", "00000000-0000-4000-8000-000000000000")
            ops += [(m, path) for m in sorted(route.methods)]
    return ops


def test_malformed_json_is_400_whatever_its_content_type(seed, app):
    """Given a seeded memory
    When a malformed JSON body goes to every route that takes a body, under each content type
    Then each answers 400 invalid_json saying the body is not valid JSON, and nothing stored
    changes. Control: the routes exist and a JSON type changes nothing about the answer."""
    ops = _json_body_operations(app)
    assert len(ops) >= 8, ops  # create, patch, search, ingest, review, keys, grants, ...
    for method, path in ops:
        for ctype in [*NON_JSON_TYPES, "application/json"]:
            headers = {**seed.headers, **({"Content-Type": ctype} if ctype else {})}
            r = seed.client.request(method, path, headers=headers, content=b'{"memories": [')
            case = f"{method} {path} as {ctype}"
            err = seed.reject(r, 400, "invalid_json", None, case)
            assert "not valid JSON" in err["message"], case


# --------------------------------------------------------------------------------------
# Fuzz: random JSON-ish input, bounded, seeded
# --------------------------------------------------------------------------------------


def _rand_scalar(rng: random.Random) -> Any:
    pick = rng.randrange(10)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, 1, -1, 2**31, 2**63, -(2**70), 10**30])
    if pick == 3:
        return rng.choice([0.5, -0.0, 1e-300, 1e300, 0.9999999])
    if pick == 4:
        return rng.choice(["", " ", "\x00", "\ud800", "ä", "a..b", "users.alice", "users.bob.x",
                           "fact", "active", "all", "W/\"1\"", "NaN", "2024-01-01T00:00:00Z",
                           "2024-01-01", "00000000-0000-0000-0000-000000000000", "é" * 20000])
    alphabet = string.printable + "äé€😀\u2028\x00\x7f"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))


def _rand_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(6 if depth < 3 else 3)
    if pick < 3:
        return _rand_scalar(rng)
    if pick < 5:
        return {str(_rand_scalar(rng))[:20]: _rand_value(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    return [_rand_value(rng, depth + 1) for _ in range(rng.randrange(4))]


ITEM_KEYS = ["content", "path", "kind", "slot", "valid_from", "importance", "tags", "meta", "name"]
PATCH_KEYS = ["expected_version", "content", "path", "kind", "slot", "importance", "confidence",
              "pinned", "tags", "meta", "valid_from", "valid_to"]


def _mutate(rng: random.Random, base: dict[str, Any], keys: list[str]) -> Any:
    body = dict(base)
    for _ in range(rng.randrange(0, 3)):
        op = rng.randrange(4)
        if op == 0:
            body[rng.choice(keys)] = _rand_value(rng)
        elif op == 1 and body:
            body.pop(rng.choice(list(body)))
        elif op == 2:
            body[str(_rand_scalar(rng))[:15] or "x"] = _rand_value(rng)
        else:
            return _rand_value(rng)
    return body


def test_fuzz_never_500(seed):
    """Given a seeded memory and a separate fuzz target memory
    When ~200 random JSON-ish creates, patches (of the target), restores and list queries
         are sent (fixed RNG seed, so reproducible)
    Then no answer is a 5xx, every 4xx has the error shape, and the seed is unchanged."""
    c, h = seed.client, seed.headers
    r = c.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Fuzz target memory", "path": "users.fuzz"}]})
    target = r.json()["results"][0]["id"]
    rng = random.Random(20240601)
    base_item = {"path": "users.fuzz"}
    statuses: dict[int, int] = {}
    for n in range(200):
        kind = rng.randrange(5)
        if kind <= 1:
            items = [_mutate(rng, {**base_item, "content": f"Fuzzed fact {n}.{i}"}, ITEM_KEYS)
                     for i in range(rng.randrange(1, 4))]
            body: Any = {"memories": items}
            if rng.random() < 0.3:
                body["on_conflict"] = _rand_scalar(rng)
            if rng.random() < 0.1:
                body = _rand_value(rng)
            req = ("POST", "/v1/memories", body, {})
        elif kind == 2:
            body = _mutate(rng, {"expected_version": rng.randrange(0, 4)}, PATCH_KEYS)
            extra = {"If-Match": rng.choice(["1", '"2"', "x", 'W/"3"'])} if rng.random() < .3 \
                else {}
            req = ("PATCH", f"/v1/memories/{target}", body, extra)
        elif kind == 3:
            body = rng.choice([None, {}, {"version": _rand_scalar(rng)}, _rand_value(rng)])
            req = ("POST", f"/v1/memories/{target}/restore", body, {})
        else:
            # A URL cannot carry unpaired surrogates: what a client could send is the rest.
            params = {k: str(_rand_scalar(rng))[:300].encode(errors="replace").decode()
                      for k in rng.sample(["path", "kind", "status", "tags", "valid_at",
                                           "cursor", "limit"], rng.randrange(1, 4))}
            if rng.random() < 0.3:
                params = {"path": "users", "kind": "fact,event", "limit": "5"}
            req = ("GET", "/v1/memories", params, {})
        method, url, payload, extra = req
        headers = {**h, **extra}
        if method == "GET":
            resp = c.get(url, headers=headers, params=payload)
        else:
            try:
                data = json.dumps(payload, allow_nan=True).encode()
            except (UnicodeEncodeError, ValueError):
                data = json.dumps(payload, ensure_ascii=True).encode()
            resp = c.request(method, url, headers={**headers, "Content-Type": "application/json"},
                             content=data)
        statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
        case = f"fuzz #{n} {method} {url} {str(payload)[:300]!r}"
        assert resp.status_code < 500, f"{case}: {resp.status_code} {resp.text[:300]}"
        if resp.status_code >= 400:
            check_error_body(resp, case, any_field=True)
    seed.assert_seed_unchanged("fuzz")
    # The loop must exercise both sides, or it proves nothing.
    assert statuses.get(200, 0) >= 10 and sum(
        v for k, v in statuses.items() if 400 <= k < 500) >= 50, statuses


@pytest.mark.parametrize("url,field,control", [
    ("/v1/memories?status=", "status", "/v1/memories?status=active"),
    ("/v1/memories?kind=%20,", "kind", "/v1/memories?kind=fact,"),
    ("/v1/memories?tags=,", "tags", "/v1/memories?tags=x,"),
    ("/v1/memories?status=active&status=", "status", "/v1/memories?status=active&status=superseded"),
    ("/v1/ingest?status=", "status", "/v1/ingest?status=wrote"),
])
def test_a_list_filter_that_names_nothing_is_refused(client, tenant, url, field, control):
    """Given a list filter given empty (`?status=`, `?kind= ,`, `?tags=,`), which would filter
    by nothing (`?status=` used to answer every status), and which the schema's pattern refuses
    When it is sent
    Then 422 names the field (control: the same filter naming a value answers 200)."""
    r = client.get(url, headers=tenant.headers)
    assert r.status_code == 422 and r.json()["error"]["field"] == field, r.text
    assert client.get(control, headers=tenant.headers).status_code == 200, control
