"""The OpenAPI document tells a reader, and a client generated from it, the whole truth: every
operation is summarised and described, every property and parameter says what it is, every
answer has a schema (no bare ``object``), the document is valid OpenAPI 3.1, and it is the same
document whichever of the API's routers the serving app includes (on AWS one function serves
it for all). tests/test_schemathesis.py holds the live server to it; tests/test_docs_browser.py
renders it in /docs and /redoc.

Everything here walks the document as built, so an operation, a schema or a field added later
is held to the same rules without this file naming it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from strata.api.app import ROUTERS, UNDOCUMENTED, create_app
from strata.foundation.config import Settings

SETTINGS = Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"), rate_limit=False)


@pytest.fixture(scope="module")
def document() -> dict:
    return create_app(settings=SETTINGS).openapi()


def operations(document: dict):
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            yield f"{method.upper()} {path}", op


def properties(schema: dict, where: str):
    """(where, property) for each property of a schema and of the schemas nested in it."""
    for name, prop in schema.get("properties", {}).items():
        yield f"{where}.{name}", prop
        yield from properties(prop, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from properties(schema[key], f"{where}[]")
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            yield from properties(branch, where)


def undocumented(op: dict) -> list[str]:
    """What an operation lacks: a summary of its own (FastAPI's default is the function's
    name, title-cased, as in the operationId), a description saying more, a tag."""
    lacks = []
    summary = op.get("summary", "")
    if not summary or (summary == summary.title() and op["operationId"].startswith(
            summary.replace(" ", "_").lower() + "_")):
        lacks.append("summary")
    if len(op.get("description", "")) <= len(summary):
        lacks.append("description")
    if not op.get("tags"):
        lacks.append("tags")
    return lacks


def test_every_operation_has_a_summary_and_a_description(document):
    """Given the document
    Then every operation has a summary (from its docstring's first paragraph, not FastAPI's
         title-cased function name), a description that says more than the summary, and a
         tag (control: a route with no docstring is caught)."""
    ops = dict(operations(document))
    assert len(ops) >= 28
    assert {label: undocumented(op) for label, op in ops.items() if undocumented(op)} == {}

    from fastapi import FastAPI

    from strata.api import openapi

    bare = FastAPI()

    @bare.get("/v1/undocumented")
    def undocumented_thing() -> dict:
        return {}

    openapi.install(bare)
    assert undocumented(bare.openapi()["paths"]["/v1/undocumented"]["get"]) == [
        "summary", "description", "tags"]


def test_every_schema_property_and_parameter_is_described(document):
    """Given the document
    Then every property of every component schema (nested ones too) and every parameter has a
         description (control: the walk finds the properties, well over the 178 the issue
         counted, and a model field without one is caught)."""
    found, missing = 0, []
    for name, schema in document["components"]["schemas"].items():
        for where, prop in properties(schema, name):
            found += 1
            if not prop.get("description"):
                missing.append(where)
    for label, op in operations(document):
        for parameter in op.get("parameters", []):
            found += 1
            if not parameter.get("description"):
                missing.append(f"{label} {parameter['in']} {parameter['name']}")
    assert not missing, missing
    assert found > 200

    from pydantic import BaseModel, Field

    class Bare(BaseModel):
        said: int = Field(description="said")
        unsaid: int

    schema = Bare.model_json_schema()
    assert [w for w, p in properties(schema, "Bare") if not p.get("description")] == ["Bare.unsaid"]


def test_every_answer_has_a_schema_and_no_body_is_a_bare_object(document):
    """Given the document
    Then every response of every operation has a JSON schema that is a reference to a named
         component or one (no untyped `object`, the shape a generated client cannot use), and
         every error status answers the error body (control: the schemas are resolved)."""
    schemas = document["components"]["schemas"]
    for label, op in operations(document):
        assert any(s.startswith("2") for s in op["responses"]), label
        for status, response in op["responses"].items():
            schema = response["content"]["application/json"]["schema"]
            assert set(schema) == {"$ref"}, (label, status, schema)
            target = schema["$ref"].rsplit("/", 1)[-1]
            assert target in schemas, (label, status)
            if status[0] in "45":
                assert target == "Error", (label, status)
            else:
                assert schemas[target].get("properties"), (label, status)
                assert schemas[target].get("additionalProperties") is not True, (label, status)


def test_ingest_documents_both_of_its_success_answers(document):
    """Given POST /v1/ingest
    Then 202 (still processing) is its documented status, and 200 (already finished) is
         documented too, with when it is answered; both carry the receipt."""
    op = document["paths"]["/v1/ingest"]["post"]
    receipt = {"$ref": "#/components/schemas/Receipt"}
    for status in ("200", "202"):
        assert op["responses"][status]["content"]["application/json"]["schema"] == receipt
    assert "wait" in op["responses"]["200"]["description"]
    assert "202" in op["description"] and "200" in op["description"]


def test_request_bodies_have_examples_and_every_example_is_valid(document):
    """Given every operation that takes a JSON body, and every schema that gives examples
    Then each body's schema has at least one example, and every example of every schema
         (the error body's too) validates against it (schemathesis sends the request examples
         too: test_schemathesis.py holds the server to accepting them). Control: an example
         with a field its schema does not allow is refused."""
    import jsonschema

    schemas = document["components"]["schemas"]

    def check(name: str, example: object) -> None:
        schema = {"components": {"schemas": schemas}, **schemas[name]}
        jsonschema.validate(example, schema, cls=jsonschema.Draft202012Validator)

    bodies = set()
    for label, op in operations(document):
        body = op.get("requestBody")
        if body is None:
            continue
        ref = body["content"]["application/json"]["schema"]
        ref = ref.get("$ref") or next(b["$ref"] for b in ref["anyOf"] if "$ref" in b)
        bodies.add(ref.rsplit("/", 1)[-1])
    assert len(bodies) >= 10
    assert [name for name in sorted(bodies) if not schemas[name].get("examples")] == []
    checked = 0
    for name, schema in schemas.items():
        for example in schema.get("examples", []):
            check(name, example)
            checked += 1
    assert checked > len(bodies) and schemas["Error"]["examples"]
    with pytest.raises(jsonschema.ValidationError):
        check("SearchRequest", {**schemas["SearchRequest"]["examples"][0], "unknown": 1})


def test_every_operation_has_a_named_unique_camel_case_operation_id(document):
    """Given every operation of the document
    Then each has an operationId that is camelCase (a generated client's function name,
         read as words: createMemories, searchMemories), unique across the document, and not
         FastAPI's default (function name, path and method: create_v1_memories_post).
         Control: FastAPI's default id of the same route fails the same check."""
    import re

    from fastapi.routing import APIRoute
    from fastapi.utils import generate_unique_id

    camel = re.compile(r"[a-z]+(?:[A-Z][a-z]+)*")
    ids = {label: op.get("operationId") for label, op in operations(document)}
    assert len(ids) >= 40
    assert [label for label, name in ids.items() if not name or not camel.fullmatch(name)] == []
    assert len(set(ids.values())) == len(ids)
    assert ids["POST /v1/memories"] == "createMemories"
    assert ids["POST /v1/search"] == "searchMemories"
    assert ids["GET /v1/memories"] == "listMemories"
    assert ids["GET /v1/memories/{memory_id}"] == "getMemory"
    from strata.api.routes.memories import router

    route = next(r for r in router.routes
                 if isinstance(r, APIRoute) and r.path == "/v1/memories" and "POST" in r.methods)
    assert not camel.fullmatch(generate_unique_id(route))


def test_conditional_schemas_keep_their_meaning_without_restating_types(document):
    """Given the bodies whose rules are JSON Schema conditionals or a oneOf (tier and ttl,
    reject's until, reflect's seed_id or path), written without restating a type so ReDoc
    can merge them (test_docs_browser.py hears its warnings), and a context's pattern
    Then what the server accepts validates and what it refuses does not."""
    import jsonschema

    schemas = document["components"]["schemas"]

    def ok(name: str, body: dict) -> bool:
        schema = {"components": {"schemas": schemas}, **schemas[name]}
        return jsonschema.Draft202012Validator(schema).is_valid(body)

    memory = {"content": "I prefer tea"}
    assert ok("MemoryIn", {**memory, "tier": "short_term", "ttl": 3600})
    assert ok("MemoryIn", {**memory, "tier": "long_term", "ttl": None}) and ok("MemoryIn", memory)
    assert not ok("MemoryIn", {**memory, "tier": "short_term"})
    assert not ok("MemoryIn", {**memory, "tier": "short_term", "ttl": None})
    assert not ok("MemoryIn", {**memory, "tier": "long_term", "ttl": 3600})
    assert ok("RejectRequest", {"suppress": True, "until": "2099-01-01T00:00:00Z"})
    assert ok("RejectRequest", {"until": None})
    assert not ok("RejectRequest", {"until": "2099-01-01T00:00:00Z"})
    assert ok("ReflectRequest", {"path": "users.alice"})
    assert ok("ReflectRequest", {"path": "users.alice", "seed_id": None})
    assert not ok("ReflectRequest", {"path": "users.alice",
                                     "seed_id": "0b9e3c52-4a2d-4c55-9d1f-0d8f5f3c2a11"})
    assert not ok("ReflectRequest", {"path": None})
    # A blank context is refused (str.isspace() counts \x1e as whitespace); a word is kept.
    assert ok("MemoryIn", {**memory, "context": "Bob asked"})
    assert not ok("MemoryIn", {**memory, "context": "\x1e"})


def test_the_document_is_valid_openapi(document):
    """Given the document
    Then openapi-spec-validator finds it valid OpenAPI 3.1 (control: a copy whose answer
         lacks the description OpenAPI requires is reported)."""
    assert document["openapi"].startswith("3.1")
    validate(copy.deepcopy(document))
    broken = copy.deepcopy(document)
    del broken["paths"]["/v1/search"]["post"]["responses"]["200"]["description"]
    with pytest.raises(OpenAPIValidationError):
        validate(broken)


def test_every_router_serves_the_whole_document(document):
    """Given an app with only the health and docs routers (the function that serves
    /openapi.json on AWS)
    Then its document is the full app's: every documented router's operations, not only its
         own (control: the full document has operations of every router)."""
    assert create_app(["health", "docs"], settings=SETTINGS).openapi() == document
    tags = {tag for _, op in operations(document) for tag in op["tags"]}
    assert tags == {r for r in ROUTERS if r not in UNDOCUMENTED}
    assert {t["name"] for t in document["tags"]} == tags


def asset_urls(html: str) -> list[str]:
    """Every URL a page loads or links: script src, link href, img src, and the document URL
    the viewer is told to fetch."""
    import re

    found = re.findall(r"""<(?:script|img)[^>]*\ssrc=["']([^"']+)""", html)
    found += re.findall(r"""<link[^>]*\shref=["']([^"']+)""", html)
    found += re.findall(r"""\b(?:url|spec-url)\s*[:=]\s*["']([^"']+)""", html)
    return found


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_everything_from_the_server_itself(client, page):
    """Given the app (no network needed)
    When /docs and /redoc are fetched
    Then every script, stylesheet, icon and the document each page names is a same-origin
         path (no scheme, no host: no CDN), and each answers 200 with its content type; the
         page's Content-Security-Policy allows this origin only
         (controls: the page names its viewer's bundle and /openapi.json; FastAPI's own page
         names a CDN, which the same scan finds)."""
    html = client.get(page)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    policy = html.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "connect-src 'self'" in policy
    assert "http" not in policy  # no other origin is allowed anything
    urls = asset_urls(html.text)
    bundle = {"/docs": "swagger-ui-bundle.js", "/redoc": "redoc.standalone.js"}[page]
    assert any(u.endswith(bundle) for u in urls) and "/openapi.json" in urls, urls
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert answer.headers["content-type"].split(";")[0] in (
            "text/javascript", "text/css", "image/png", "application/json"), url
        assert len(answer.content) > 1000, url

    from fastapi.openapi.docs import get_swagger_ui_html
    cdn = get_swagger_ui_html(openapi_url="/openapi.json", title="t").body.decode()
    assert any(u.startswith("https://") for u in asset_urls(cdn))


def test_swagger_ui_keeps_the_key_and_asks_no_validator(client):
    """Given /docs
    Then Swagger UI is told to persist the key typed into Authorize and to send the document to
         no validator; and an asset that is not one of the viewers' files is a 404 in the
         API's error shape (control: a real asset is a 200)."""
    html = client.get("/docs").text
    assert '"persistAuthorization": true' in html and '"validatorUrl": null' in html
    missing = client.get("/docs/assets/..%2Fcore.py")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert client.get("/docs/assets/swagger-ui.css").status_code == 200


# Pydantic's names for bounds it could not place in a schema (a constraint on a field whose
# type it cannot push it into): JSON Schema knows none of them, so a client never sees them.
PYDANTIC_ONLY = {"ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length"}


def untranslated(node: object, where: str = "") -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in PYDANTIC_ONLY and not where.endswith("/properties"):
                found.append(f"{where}/{key}")
            found += untranslated(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += untranslated(value, f"{where}/{i}")
    return found


def test_every_bound_is_stated_in_json_schema_words(document):
    """Given the document
    Then no schema carries a bound under pydantic's name (`ge`, `le`, ...) instead of JSON
         Schema's (`minimum`, `maximum`, ...), which validators and generators ignore
         (control: a field typed `Integer | None` with `Field(ge=60)`, how `ttl` was first
         written, is caught; a property named `ge` is not)."""
    assert untranslated(document) == []

    from pydantic import BaseModel, Field

    from strata.foundation.fields import Integer

    class Loose(BaseModel):
        ttl: Integer | None = Field(default=None, ge=60)
        ge: int = 0

    assert untranslated(Loose.model_json_schema()) == ["/properties/ttl/anyOf/0/ge"]


def test_an_empty_query_value_is_refused_exactly_where_the_schema_excludes_it(client, tenant):
    """Given every GET operation's string query parameters in the published document
    When each is sent empty (`?cursor=`), as the owner
    Then the server refuses it (422 naming the parameter) exactly when the parameter's
    schema excludes the empty string, and otherwise answers it: a client generated from the
    document is never refused a value the document allows (the first finding: an empty
    `cursor=` was refused while the schema allowed it). Control: at least one parameter
    is on each side."""
    from jsonschema import Draft202012Validator

    FORMATS = Draft202012Validator.FORMAT_CHECKER  # uuid, date-time, ...: what generators honour
    document = client.get("/openapi.json").json()
    checked = {"refused": [], "answered": []}
    mismatches = []
    for path, ops in document["paths"].items():
        op = ops.get("get")
        if op is None or path.startswith("/mcp"):
            continue
        url = path
        for p in op.get("parameters", []):
            if p["in"] == "path":
                fill = "00000000-0000-4000-8000-000000000000" if "uuid" in str(p["schema"]) else "users"
                url = url.replace("{" + p["name"] + "}", fill)
        for p in op.get("parameters", []):
            schema = p.get("schema", {})
            if p["in"] != "query" or "string" not in str(schema):
                continue
            allowed = Draft202012Validator(schema, format_checker=FORMATS).is_valid("")
            r = client.get(url, params={p["name"]: ""}, headers=tenant.headers)
            assert r.status_code < 500, (path, p["name"], r.status_code)
            refused = r.status_code == 422 and p["name"] in r.text
            checked["refused" if refused else "answered"].append(f"{path}?{p['name']}")
            if refused == allowed:
                mismatches.append((path, p["name"], "allowed" if allowed else "excluded", r.status_code))
    assert mismatches == [], mismatches
    assert checked["refused"] and checked["answered"], checked
    assert any(name.endswith("?cursor") for name in checked["refused"]), checked
