"""Memory rules: set through the API (versioned, audited, owner-managed), resolved by the most
specific path, and obeyed by the write path on every entry point: direct create, ingest (rule
extractor and scripted model), MCP remember; retention through lifecycle. Every exclusion test
asserts its control: the statement the rule does not touch is kept."""

from __future__ import annotations

import pytest

from strata.rules.categories import classify


def put_rule(client, h, **body):
    r = client.put("/v1/rules", headers=h, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def create(client, h, path, *contents):
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"path": path, "content": c} for c in contents]})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def ingest(client, h, path, *said):
    r = client.post("/v1/ingest", headers=h, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": s} for s in said]})
    assert r.status_code == 200, r.text
    return r.json()


# --------------------------------------------------------------------------------------
# The classifier
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,category", [
    ("I was told last week that I have type 2 diabetes", "health"),
    ("My doctor put me on antidepressants", "health"),
    ("I'm recovering from knee surgery", "health"),
    ("She said my blood pressure is high", "health"),
    ("I have a therapy session every Thursday", "health"),
    ("My salary went up to 95k this year", "finances"),
    ("I still owe 20,000 on my student loan", "finances"),
    ("I keep most of my savings in index funds", "finances"),
    ("My login for the intranet is jdoe42", "credentials"),
    ("The wifi password is hunter2", "credentials"),
    ("My sister lives with her husband in Leeds", "other_people"),
    ("My manager wants the report by Friday", "other_people"),
    ("I live in Rotterdam, near the harbour", "location"),
    ("We relocated to Austin in March", "location"),
    ("My home address is 12 Elm Street", "location"),
])
def test_the_classifier_names_the_category_of_statements_in_many_phrasings(text, category):
    assert category in classify(text)


@pytest.mark.parametrize("text", [
    "I prefer tea", "I use vim for editing", "I like dark mode", "Python is my favourite "
    "language", "I enjoy reading science fiction", "I write tests before code",
])
def test_the_classifier_leaves_plain_preferences_alone(text):
    assert classify(text) == []


# --------------------------------------------------------------------------------------
# Storage and API
# --------------------------------------------------------------------------------------

def test_a_rule_is_set_versioned_listed_read_deleted_and_audited_without_its_text(
        client, tenant, db):
    """Given an owner
    When it sets a rule at users, sets it again, reads, lists, deletes it
    Then each set is the next version, the history holds every version and the delete, the
    list shows it while it exists, and the audit entries carry the rule id and no
    instructions or pattern text."""
    h = tenant.headers
    first = put_rule(client, h, path="users", exclude_categories=["health"],
                     exclude_patterns=["project zephyr", "/\\bcodename\\s+\\w+/"],
                     instructions="Remember dietary choices carefully")
    assert first["version"] == 1 and first["capture"] == "on"
    second = put_rule(client, h, path="users", capture="review_only", expected_version=1)
    assert (second["id"], second["version"]) == (first["id"], 2)
    assert second["exclude_categories"] == [] and second["instructions"] is None
    stale = client.put("/v1/rules", headers=h, json={"path": "users", "expected_version": 1})
    assert stale.status_code == 409 and stale.json()["error"]["field"] == "expected_version"

    assert client.get(f"/v1/rules/{first['id']}", headers=h).json()["version"] == 2
    assert [r["id"] for r in client.get("/v1/rules", headers=h).json()["items"]] == [first["id"]]
    assert client.delete(f"/v1/rules/{first['id']}", headers=h).json()["deleted"] is True
    assert client.get(f"/v1/rules/{first['id']}", headers=h).status_code == 404
    assert client.get("/v1/rules", headers=h).json()["items"] == []
    history = client.get(f"/v1/rules/{first['id']}/history", headers=h).json()["items"]
    assert [(v["version"], v["operation"]) for v in history] == [(1, "set"), (2, "set"),
                                                                 (2, "delete")]
    assert history[0]["snapshot"]["instructions"] == "Remember dietary choices carefully"

    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM audit_log WHERE tenant_id = %s AND operation LIKE"
                            " 'rule.%%' ORDER BY seq", (tenant.tenant_id,)).fetchall()
    assert [r["operation"] for r in rows][:3] == ["rule.set", "rule.set", "rule.set"]
    assert {str(m) for r in rows for m in r["memory_ids"]} == {first["id"]}
    flat = repr(rows)
    assert "dietary" not in flat and "zephyr" not in flat and "codename" not in flat


@pytest.mark.parametrize("body,field", [
    ({"path": "users", "exclude_patterns": ["ok", "/(unclosed/"]}, "exclude_patterns[1]"),
    ({"path": "users", "exclude_patterns": ["/(a+)+$/"]}, "exclude_patterns[0]"),
    ({"path": "users", "exclude_patterns": ["/(a|aa)*b/"]}, "exclude_patterns[0]"),
    ({"path": "users", "exclude_patterns": ["/a{99999999999}/"]}, "exclude_patterns[0]"),
    ({"path": "users", "exclude_patterns": ["x" * 201]}, "exclude_patterns[0]"),
    ({"path": "users", "exclude_patterns": [f"p{i}" for i in range(33)]}, "exclude_patterns"),
    ({"path": "users", "exclude_categories": ["religion"]}, "exclude_categories[0]"),
    ({"path": "users", "capture": "sometimes"}, "capture"),
    ({"path": "users", "retention_days": 0}, "retention_days"),
    ({"path": "users..x"}, "path"),
    ({"path": "users", "exclude_categories": ["health"], "include_categories": ["health"]},
     "include_categories"),
])
def test_a_bad_rule_is_a_422_naming_the_field(client, tenant, body, field):
    r = client.put("/v1/rules", headers=tenant.headers, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    # control: the same rule without the fault is accepted
    assert client.put("/v1/rules", headers=tenant.headers,
                      json={"path": "users"}).status_code == 200


def test_only_an_owner_of_the_path_sets_or_deletes_a_rule(client, tenant, make_tenant):
    """Given a key clamped to write on users.alice, and another tenant's owner
    When they set or delete rules
    Then the clamped key gets 403 (it reads the rule, but does not own the path) and the
    other tenant 404 for A's rule; the owner's own request is the control."""
    h = tenant.headers
    key = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users.alice", "level": "write"}]}).json()["key"]
    clamped = {"Authorization": f"Bearer {key}"}
    assert client.put("/v1/rules", headers=clamped,
                      json={"path": "users.alice"}).status_code == 403
    rule = put_rule(client, h, path="users.alice", capture="off")
    assert client.get(f"/v1/rules/{rule['id']}", headers=clamped).status_code == 200
    assert client.delete(f"/v1/rules/{rule['id']}", headers=clamped).status_code == 403
    other = make_tenant("other").headers
    assert client.get(f"/v1/rules/{rule['id']}", headers=other).status_code == 404
    assert client.delete(f"/v1/rules/{rule['id']}", headers=other).status_code == 404
    assert client.delete(f"/v1/rules/{rule['id']}", headers=h).status_code == 200


# --------------------------------------------------------------------------------------
# Enforcement: direct create
# --------------------------------------------------------------------------------------

def test_a_health_exclude_on_users_blocks_health_statements_on_create_naming_the_rule(
        client, tenant):
    """Given a rule at users excluding health
    When health statements and a preference are created under users.alice (and the same health
    statement under shared, outside the rule)
    Then each health statement is blocked with the rule named (id and reason); the preference
    and the statement outside the rule are inserted."""
    h = tenant.headers
    rule = put_rule(client, h, path="users", exclude_categories=["health"])
    results = create(client, h, "users.alice", "I was diagnosed with asthma",
                     "I take metformin for my diabetes", "I prefer tea")
    for blocked in results[:2]:
        assert blocked["status"] == "blocked" and blocked["id"] is None, blocked
        assert blocked["rule_id"] == rule["id"]
        assert blocked["reason"] == f"rule {rule['id']} at users: excluded (health)"
    assert results[2]["status"] == "inserted" and "rule_id" not in results[2]
    [outside] = create(client, h, "shared", "I was diagnosed with asthma")
    assert outside["status"] == "inserted"
    listed = client.get("/v1/memories?path=users", headers=h).json()["items"]
    assert [m["content"] for m in listed] == ["I prefer tea"]


def test_the_most_specific_rule_wins_without_merging(client, tenant):
    """Given users excluding health and users.alice with capture on and no exclusions
    When the same health statement is created under users.alice and users.bob
    Then users.bob's is blocked by the users rule and users.alice's is kept: the deeper rule
    replaced the one above it."""
    h = tenant.headers
    top = put_rule(client, h, path="users", exclude_categories=["health"])
    put_rule(client, h, path="users.alice")
    [alice] = create(client, h, "users.alice", "I was diagnosed with asthma")
    [bob] = create(client, h, "users.bob", "I was diagnosed with asthma")
    assert alice["status"] == "inserted"
    assert bob["status"] == "blocked" and bob["rule_id"] == top["id"]


def test_patterns_exclude_literals_and_regexes(client, tenant):
    h = tenant.headers
    rule = put_rule(client, h, path="users", exclude_patterns=["Project Zephyr", r"/\bAX-\d{3}\b/"])
    results = create(client, h, "users.alice", "I lead project zephyr at work",
                     "My ticket AX-123 is about the login page", "I lead the design team")
    assert [r["status"] for r in results] == ["blocked", "blocked", "inserted"]
    assert results[0]["reason"].endswith("excluded (exclude_patterns[0])")
    assert results[1]["reason"].endswith("excluded (exclude_patterns[1])")
    assert "zephyr" not in results[0]["reason"].lower()
    assert results[0]["rule_id"] == rule["id"]


def test_capture_off_stores_nothing_and_review_only_holds_candidates_on_create(client, tenant):
    """Given capture off at users.off and review_only at users.review
    When statements are created there (and under users.open, governed by no rule)
    Then nothing is stored under users.off (blocked, naming the rule); users.review's are
    held as candidates naming the rule; users.open's are inserted active."""
    h = tenant.headers
    off = put_rule(client, h, path="users.off", capture="off")
    review = put_rule(client, h, path="users.review", capture="review_only")
    blocked = create(client, h, "users.off", "I prefer tea", "I use vim")
    assert [(r["status"], r["rule_id"]) for r in blocked] == [("blocked", off["id"])] * 2
    assert blocked[0]["reason"] == f"rule {off['id']} at users.off: capture off"
    held = create(client, h, "users.review", "I prefer tea", "I use vim")
    assert [(r["status"], r["rule_id"]) for r in held] == [("held", review["id"])] * 2
    for r in held:
        m = client.get(f"/v1/memories/{r['id']}", headers=h).json()
        assert m["status"] == "candidate"
    queue = client.get("/v1/review?path=users.review", headers=h).json()["items"]
    assert {c["id"] for c in queue} == {r["id"] for r in held}
    assert [r["status"] for r in create(client, h, "users.open", "I prefer tea")] == ["inserted"]


def test_include_keeps_a_category_where_capture_is_off(client, tenant):
    h = tenant.headers
    rule = put_rule(client, h, path="users", capture="off", include_categories=["location"])
    moved, tea = create(client, h, "users.alice", "I moved to Lisbon in May", "I prefer tea")
    assert moved["status"] == "inserted" and moved["rule_id"] == rule["id"]
    assert "included (location)" in moved["reason"]
    assert tea["status"] == "blocked" and tea["rule_id"] == rule["id"]


# --------------------------------------------------------------------------------------
# Enforcement: ingest (rule extractor)
# --------------------------------------------------------------------------------------

def test_a_health_exclude_keeps_a_diagnosis_out_of_ingest_and_the_receipt_names_the_rule(
        client, tenant):
    """Given a rule at users excluding health
    When 'I was diagnosed with asthma' and 'I prefer tea' are ingested at users.alice
    Then the receipt's item for the diagnosis is blocked, naming the rule, and no memory
    holds it; the tea preference is created (the control)."""
    h = tenant.headers
    rule = put_rule(client, h, path="users", exclude_categories=["health"])
    receipt = ingest(client, h, "users.alice", "I was diagnosed with asthma", "I prefer tea")
    by_outcome = {i["outcome"]: i for i in receipt["items"]}
    assert set(by_outcome) == {"blocked", "created"}, receipt["items"]
    assert by_outcome["blocked"]["rule_id"] == rule["id"]
    assert by_outcome["blocked"]["reason"] == f"rule {rule['id']} at users: excluded (health)"
    kept = client.get(f"/v1/memories/{by_outcome['created']['memory_id']}", headers=h).json()
    assert "tea" in kept["content"].lower()
    listed = client.get("/v1/memories?path=users&status=all", headers=h).json()["items"]
    assert [m["id"] for m in listed] == [kept["id"]]


def test_capture_review_only_makes_every_new_ingested_memory_a_candidate(client, tenant):
    h = tenant.headers
    rule = put_rule(client, h, path="users.alice", capture="review_only")
    receipt = ingest(client, h, "users.alice", "I prefer tea", "I work at Acme",
                     "I live in Porto")
    assert len(receipt["items"]) == 3
    assert {(i["outcome"], i["rule_id"]) for i in receipt["items"]} == {("candidate", rule["id"])}
    statuses = {client.get(f"/v1/memories/{i['memory_id']}", headers=h).json()["status"]
                for i in receipt["items"]}
    assert statuses == {"candidate"}
    # control: the same conversation under a path no rule governs is stored active
    control = ingest(client, h, "users.bob", "I prefer tea", "I work at Acme", "I live in Porto")
    assert {i["outcome"] for i in control["items"]} == {"created"}

    # said again, nothing is queued twice; promoted, a held memory is active like any other
    again = ingest(client, h, "users.alice", "I prefer tea")
    [item] = again["items"]
    assert item["outcome"] == "skipped" and item["rule_id"] == rule["id"]
    assert item["memory_id"] in {i["memory_id"] for i in receipt["items"]}
    assert len(client.get("/v1/review?path=users.alice", headers=h).json()["items"]) == 3
    promoted = client.post(f"/v1/review/{item['memory_id']}/promote", headers=h)
    assert promoted.status_code == 200 and promoted.json()["status"] == "active"


# --------------------------------------------------------------------------------------
# Enforcement: ingest with the scripted model over the real openai client
# --------------------------------------------------------------------------------------

@pytest.fixture
def model_client(db, embedder, settings, fake_llm):
    from fastapi.testclient import TestClient

    from strata.api.app import create_app

    app = create_app(db=db, embedder=embedder, settings=fake_llm.settings(
        settings, llm_fallback="fail", llm_max_retries=0))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def scripted(fake_llm, *memories: dict) -> None:
    answer = {"memories": [{"confidence": 0.9, "asserts_change": False, "valid_from": None,
                            "slot": None, "value": None, "kind": "fact", **m}
                           for m in memories], "not_kept": []}
    fake_llm.fallback = lambda rec: ({"verdicts": []} if rec.schema_name == "JudgeAnswer"
                                     else answer)


def test_a_health_exclude_keeps_a_model_extracted_diagnosis_out_and_passes_instructions(
        model_client, fake_llm, tenant):
    """Given a rule at users excluding health, with instructions for the extractor
    When a conversation is ingested at users.alice and the model extracts the diagnosis and
    the tea preference
    Then the model's request carried the rule's instructions, the diagnosis is blocked naming
    the rule (no memory holds it) and the preference is created (the control)."""
    h = tenant.headers
    rule = put_rule(model_client, h, path="users", exclude_categories=["health"],
                    instructions="Keep only what helps plan meals; ignore travel plans.")
    scripted(fake_llm, {"content": "The user was diagnosed with asthma", "evidence": [0]},
             {"content": "The user prefers tea", "kind": "preference", "evidence": [1]})
    receipt = ingest(model_client, h, "users.alice", "I was diagnosed with asthma",
                     "I prefer tea")
    assert receipt["extractor"] == "llm:fake-model"
    [request] = [r for r in fake_llm.completions if r.schema_name == "Extraction"]
    assert "Keep only what helps plan meals; ignore travel plans." in request.prompt
    items = sorted(receipt["items"], key=lambda i: i["outcome"])
    assert [i["outcome"] for i in items] == ["blocked", "created"]
    assert items[0]["rule_id"] == rule["id"] and "excluded (health)" in items[0]["reason"]
    kept = model_client.get(f"/v1/memories/{items[1]['memory_id']}", headers=h).json()
    assert kept["content"] == "The user prefers tea"


def test_without_a_rule_the_model_gets_no_owner_instructions(model_client, fake_llm, tenant):
    h = tenant.headers
    put_rule(model_client, h, path="shared", instructions="Only project decisions.")
    scripted(fake_llm, {"content": "The user prefers tea", "kind": "preference",
                        "evidence": [0]})
    receipt = ingest(model_client, h, "users.alice", "I prefer tea")
    assert [i["outcome"] for i in receipt["items"]] == ["created"]
    [request] = [r for r in fake_llm.completions if r.schema_name == "Extraction"]
    assert "Only project decisions." not in request.prompt
    assert "owner of this memory store" not in request.prompt


def test_review_only_holds_model_extractions_as_candidates(model_client, fake_llm, tenant):
    h = tenant.headers
    rule = put_rule(model_client, h, path="users.alice", capture="review_only")
    scripted(fake_llm, {"content": "The user prefers tea", "kind": "preference",
                        "evidence": [0]},
             {"content": "The user works at Acme", "evidence": [0]})
    receipt = ingest(model_client, h, "users.alice", "I prefer tea and I work at Acme")
    assert [(i["outcome"], i["rule_id"]) for i in receipt["items"]] == [
        ("candidate", rule["id"])] * 2


# --------------------------------------------------------------------------------------
# Retention through lifecycle
# --------------------------------------------------------------------------------------

def test_a_retention_rule_expires_memories_through_lifecycle_with_history(
        client, tenant, db, settings):
    """Given retention_days 30 at users.alice, a deeper rule without retention at
    users.alice.keep, and memories under users.alice, users.alice.keep, users.bob (no rule)
    and a pinned one under users.alice
    When lifecycle runs 10 days on (nothing is old enough), then 31 days on
    Then the second run archives only the users.alice memory: the others stay active (the
    deeper rule decides for its subtree; no rule, no retention; a pin keeps its memory); the
    archived memory's history keeps its active state with the cause lifecycle.retention, and
    restore brings it back."""
    from datetime import UTC, datetime, timedelta

    from strata.maintenance.lifecycle import run_lifecycle

    h = tenant.headers
    put_rule(client, h, path="users.alice", retention_days=30)
    put_rule(client, h, path="users.alice.keep")
    ids = {path: create(client, h, path, f"I keep a notebook for {path}")[0]["id"]
           for path in ("users.alice", "users.alice.keep", "users.bob")}
    pinned = create(client, h, "users.alice", "I prefer tea")[0]["id"]
    assert client.patch(f"/v1/memories/{pinned}", headers=h,
                        json={"expected_version": 1, "pinned": True}).status_code == 200
    now = datetime.now(UTC)

    early = run_lifecycle(db, tenant_id=tenant.tenant_id, settings=settings,
                          now=now + timedelta(days=10))
    assert early["totals"]["retention_expired"] == 0
    report = run_lifecycle(db, tenant_id=tenant.tenant_id, settings=settings,
                           now=now + timedelta(days=31))
    assert report["totals"]["retention_expired"] == 1, report

    def status(memory_id):
        return client.get(f"/v1/memories/{memory_id}", headers=h).json()["status"]

    assert status(ids["users.alice"]) == "archived"
    assert [status(ids["users.alice.keep"]), status(ids["users.bob"]), status(pinned)] == [
        "active"] * 3
    history = client.get(f"/v1/memories/{ids['users.alice']}/history", headers=h).json()["items"]
    assert history[-1]["cause"] == "lifecycle.retention"
    assert history[-1]["snapshot"]["status"] == "active"
    back = client.post(f"/v1/memories/{ids['users.alice']}/restore", headers=h,
                       json={"version": history[-1]["version"]})
    assert back.status_code == 200 and back.json()["status"] == "active"


# --------------------------------------------------------------------------------------
# Enforcement: import
# --------------------------------------------------------------------------------------

def test_import_obeys_the_destinations_rules(client, db, make_tenant, embedder):
    """Given a source holding a diagnosis and a preference under users.alice, and a
    destination whose rule at users excludes health with review-only capture
    When the source's export is imported into the destination
    Then the diagnosis is blocked (the report names the rule, no tombstone) and the
    preference comes in held as a candidate (the control that the import ran)."""
    import io

    from strata.maintenance import transfer

    src, dest = make_tenant("source"), make_tenant("dest")
    create(client, src.headers, "users.alice", "I was diagnosed with asthma", "I prefer tea")
    rule = put_rule(client, dest.headers, path="users", exclude_categories=["health"],
                    capture="review_only")
    out = io.StringIO()
    transfer.export(db, src.tenant_id, out)
    report = transfer.import_lines(db, dest.tenant_id, out.getvalue().splitlines(), embedder)

    assert report["memories"]["blocked"] == 1 and report["memories"]["held_for_review"] == 1
    [blocked] = report["blocked"]
    assert blocked["rule_id"] == rule["id"] and blocked["tombstone_id"] is None
    assert blocked["reason"] == f"rule {rule['id']} at users: excluded (health)"
    items = client.get("/v1/memories?status=all", headers=dest.headers).json()["items"]
    assert [(m["content"], m["status"]) for m in items] == [("I prefer tea", "candidate")]


# --------------------------------------------------------------------------------------
# Enforcement: MCP remember
# --------------------------------------------------------------------------------------

def test_mcp_remember_obeys_the_rules_on_both_of_its_ways_in(server, tenant):
    """Given a rule at users excluding health
    When an agent remembers a diagnosis over MCP, as a statement stored as is and in
    messages, and a preference (the control)
    Then the statement is blocked naming the rule, the extracted diagnosis is a blocked item
    naming it, and the preference is kept."""
    import httpx

    from test_mcp import call, mcp_session, ok, run

    r = httpx.put(f"{server}/v1/rules", headers=tenant.headers,
                  json={"path": "users", "exclude_categories": ["health"]})
    rule = r.json()

    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as s:
            statement = ok(await call(s, "remember", statement="I was diagnosed with asthma",
                                      as_is=True, path="users.alice"))
            said = ok(await call(s, "remember", path="users.alice", wait=True, messages=[
                {"role": "user", "content": "I was diagnosed with asthma"},
                {"role": "user", "content": "I prefer tea"}]))
        return statement, said

    statement, said = run(go)
    [item] = statement["items"]
    assert (item["outcome"], item["rule_id"]) == ("blocked", rule["id"])
    assert statement["status"] == "meaningful_no_write" and "content" not in item
    assert f"rule {rule['id']} at users: excluded (health)" in statement["summary"]
    outcomes = sorted((i["outcome"], i.get("rule_id")) for i in said["items"])
    assert outcomes == [("blocked", rule["id"]), ("created", None)]


# --------------------------------------------------------------------------------------
# CLI and client
# --------------------------------------------------------------------------------------

def test_cli_sets_lists_and_deletes_rules_and_remember_obeys_them(server, tenant, monkeypatch,
                                                                  tmp_path, capsys):
    """Given a user's shell against a live server
    When `strata rules set users --exclude health --exclude-pattern /zephyr/` runs, then
    `remember` of a diagnosis and a preference, `rules list`, `rules delete`
    Then the rule is set (version 1) and listed, remember keeps the diagnosis out naming the
    rule while the preference is kept, a bad pattern is a message naming the field, and the
    delete leaves no rule."""
    import json

    from strata.cli.main import main

    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", tenant.key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))

    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    code, out, _ = run("rules", "set", "users", "--exclude", "health", "--exclude-pattern",
                       "/zephyr/", "--json")
    assert code == 0, out
    rule = json.loads(out)
    assert (rule["path"], rule["version"], rule["exclude_categories"]) == ("users", 1, ["health"])
    code, out, _ = run("rules", "list")
    assert code == 0 and rule["id"] in out and "excludes health" in out
    code, _, err = run("rules", "set", "users", "--exclude-pattern", "/(a+)+/")
    assert code != 0 and "exclude_patterns[0]" in err

    code, out, _ = run("remember", "I was diagnosed with asthma. I prefer tea.", "--path",
                       "users.alice", "--json")
    assert code == 0, out
    items = json.loads(out)["items"]
    assert sorted((i["outcome"], i.get("rule_id")) for i in items) == [
        ("blocked", rule["id"]), ("created", None)]

    code, out, _ = run("rules", "delete", rule["id"])
    assert code == 0 and "deleted" in out
    code, out, _ = run("rules", "list")
    assert out.strip() == "no rules"


def test_the_client_manages_rules(server, tenant):
    from strata.client import Client

    with Client(server, tenant.key) as c:
        rule = c.rules.set("users", capture="review_only", retention_days=30)
        assert (rule.capture, rule.retention_days, rule.version) == ("review_only", 30, 1)
        assert [r.id for r in c.rules.list()] == [rule.id]
        assert c.rules.get(rule.id).path == "users"
        assert c.rules.set("users", expected_version=1).version == 2
        assert [v.version for v in c.rules.history(rule.id)] == [1, 2]
        assert c.rules.delete(rule.id).deleted
        assert c.rules.list() == []


def test_mcp_set_rule_and_list_rules(server, tenant):
    """Given an agent over MCP
    When it sets a rule (and a bad one) and lists rules
    Then the rule is set and listed, and the bad pattern is an invalid_input tool error
    naming exclude_patterns[0]."""
    from test_mcp import assert_tool_error, call, mcp_session, ok, run

    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as s:
            made = ok(await call(s, "set_rule", path="users", capture="review_only",
                                 exclude_categories=["finances"]))
            bad = await call(s, "set_rule", path="users", exclude_patterns=["/(x+)*/"])
            listed = ok(await call(s, "list_rules"))
        return made, bad, listed

    made, bad, listed = run(go)
    assert (made["path"], made["capture"], made["version"]) == ("users", "review_only", 1)
    assert_tool_error(bad, "invalid_input", "exclude_patterns[0]")
    assert [r["id"] for r in listed["items"]] == [made["id"]]


def test_capture_off_sends_nothing_to_the_model_and_blocks_every_item(model_client, fake_llm,
                                                                       tenant):
    """Given capture off at users.alice and a scripted model
    When a conversation is ingested there, and the same one at users.bob (no rule)
    Then for users.alice the model receives no request, every item is blocked naming the rule
    and nothing is stored; for users.bob the model is asked and its memory is created."""
    h = tenant.headers
    rule = put_rule(model_client, h, path="users.alice", capture="off")
    scripted(fake_llm, {"content": "The user prefers tea", "kind": "preference",
                        "evidence": [0]})
    receipt = ingest(model_client, h, "users.alice", "I prefer tea")
    assert [r for r in fake_llm.completions if r.schema_name == "Extraction"] == []
    assert receipt["items"] and {(i["outcome"], i["rule_id"]) for i in receipt["items"]} == {
        ("blocked", rule["id"])}
    assert receipt["status"] == "meaningful_no_write"
    control = ingest(model_client, h, "users.bob", "I prefer tea")
    assert len([r for r in fake_llm.completions if r.schema_name == "Extraction"]) == 1
    assert [i["outcome"] for i in control["items"]] == ["created"]
