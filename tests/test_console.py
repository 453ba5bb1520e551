"""The console in a real browser (headless Debian chromium through Playwright) against the
real app under uvicorn (the ``server`` fixture) on a real database.

What a reviewer does, end to end: sign in with a key, find a candidate in the review queue,
open its evidence and the memory it contradicts, promote it, and see the memory it
supersedes change on that memory's timeline. Beside it: a key reading one path sees only
that path's tree (the owner, the control, sees both); memory content that is markup is
shown as text and never runs, and so is a memory's context (on a hit, in the list, on its
page and in its history); the key is in no URL the browser loads; the receipts page
tells a kept item from a not-kept one and says why. And the page reads for people: a
memory's life as a timeline of its versions beside its valid-time span, ids shortened to 8
characters (the whole id on hover, a button to copy it), evidence as sentences, each hit's
score breakdown behind a toggle (three hits fit a screen), the key named by its prefix, and
tree counts that match the list.

Chromium is Debian's (/usr/bin/chromium), never downloaded. Without it these tests skip
locally and fail under CI (env CI set), where .ci/run installs it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from support import bearer

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SCRIPT = "<script>window.__pwned = 'script'</script> Alice's note"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
IMAGE = "<img src=x onerror=\"window.__pwned = 'img'\"> Alice's other note"


def chromium() -> str | None:
    """Debian's chromium; CONSOLE_TEST_CHROMIUM names another binary (or, naming none that
    exists, shows what happens on a machine without one)."""
    chosen = os.environ.get("CONSOLE_TEST_CHROMIUM")
    if chosen is not None:
        return chosen if os.access(chosen, os.X_OK) else None
    return CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator:
    executable = chromium()
    if executable is None:
        message = f"no chromium at {CHROMIUM} (Debian: apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=ARGS)
        yield browser
        browser.close()


class Session:
    """One browser context (its own sessionStorage) on the console, recording every URL it
    requests and every dialog a page opens."""

    def __init__(self, browser, base: str, **context) -> None:
        self.base = base
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append((r.url, r.headers)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def sign_in(self, key: str) -> None:
        page = self.page
        page.goto(f"{self.base}/console")
        page.locator("#key").fill(key)
        page.locator("#signin button[type=submit]").click()
        page.locator("#nav").wait_for(state="visible")

    def open(self, hash_: str) -> None:
        self.page.evaluate("h => { location.hash = h; }", hash_)

    def search(self, query: str, memory_id: str):
        """Search the console for ``query``; the hit of ``memory_id``, once it is shown."""
        self.open("#/search")
        self.page.locator("#search-form input[name=query]").fill(query)
        self.page.locator("#search-form button[type=submit]").click()
        hit = self.page.locator(f"#search-results article.hit[data-id='{memory_id}']")
        hit.wait_for()
        return hit

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def api(server, tenant) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, headers=tenant.headers, timeout=30) as client:
        yield client


def ingest(api: httpx.Client, path: str, *texts: str, weeks: int = 0) -> dict:
    at = T0 + timedelta(weeks=weeks)
    r = api.post("/v1/ingest", json={"path": path, "wait": True, "messages": [
        {"role": "user", "content": t, "at": (at + timedelta(minutes=i)).isoformat()}
        for i, t in enumerate(texts)]})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def store(api, tenant) -> dict:
    """users.alice: MongoDB, then PostgreSQL (which supersedes it), then "gone back to
    MongoDB", held as a candidate contradicting PostgreSQL; two memories whose content is
    markup; users.bob: one memory. And a key that reads users.alice only."""
    ingest(api, "users.alice", "I prefer MongoDB")
    switched = ingest(api, "users.alice", "I've switched to PostgreSQL", weeks=3)
    back = ingest(api, "users.alice", "I've gone back to MongoDB", weeks=6)
    assert [i["outcome"] for i in back["items"]] == ["candidate"], back
    r = api.post("/v1/memories", json={"memories": [
        {"content": SCRIPT, "path": "users.alice"}, {"content": IMAGE, "path": "users.alice"},
        {"content": "Bob keeps falcons", "path": "users.bob"}]})
    assert r.status_code == 200 and [x["status"] for x in r.json()["results"]] == ["inserted"] * 3
    r = api.post("/v1/keys", json={"principal_id": str(tenant.principal_id), "name": "alice reader",
                                   "ceiling": [{"path": "users.alice", "level": "read"}]})
    assert r.status_code == 201, r.text
    return {"postgres": switched["items"][0]["memory_id"],
            "candidate": back["items"][0]["memory_id"], "candidate_receipt": back["id"],
            "alice_key": r.json()["key"]}


def test_a_reviewer_promotes_a_candidate_and_sees_the_superseded_memorys_timeline(
        browser, server, tenant, store):
    """Given a candidate "gone back to MongoDB" contradicting the active PostgreSQL
    preference
    When a reviewer signs in with the owner key, opens the PostgreSQL memory (active, valid
    until now), finds the candidate in the review queue, opens its evidence and sees the
    memory it contradicts, and promotes it
    Then the queue is empty and the PostgreSQL memory's page shows it superseded: its valid
    time closed, and a timeline entry naming the memory that superseded it, the reason and
    the principal who decided; the key was sent only as a header, never in a URL."""
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    assert tenant.key not in page.url
    assert page.evaluate("() => sessionStorage.getItem('strata.console.key')") == tenant.key

    s.open(f"#/memory/{store['postgres']}")
    page.locator("#timeline").wait_for()
    assert "PostgreSQL" in page.locator("#memory-content").inner_text()
    assert page.locator("#memory .badge").first.inner_text() == "active"
    assert "now (still true)" in page.locator(".validity").inner_text()
    assert "superseded by" not in page.locator("#timeline").inner_text()
    # What it superseded itself (MongoDB, by the rule that matched the slot) is there already.
    assert "reason:" in page.locator("#timeline li.supersedes").inner_text()

    s.open("#/review")
    card = page.locator(f"article.candidate[data-id='{store['candidate']}']")
    card.wait_for()
    assert "gone back to MongoDB" in card.locator("p.content").inner_text()
    card.locator("details.evidence summary").click()
    evidence = card.locator("details.evidence ol.evidence")
    evidence.wait_for(state="visible")
    # where the candidate came from, as a sentence: who said it, when, in which receipt
    assert evidence.inner_text().startswith("said by the user on 13 Apr 2026 09:00 UTC in receipt")
    receipt_link = evidence.locator(f"a[href='#/receipt/{store['candidate_receipt']}']")
    assert receipt_link.count() == 1  # the evidence leads to the receipt that held it back
    contradicted = card.locator(f".contradicts li[data-target='{store['postgres']}']")
    assert "PostgreSQL" in contradicted.inner_text()

    card.locator("button.promote").click()
    page.locator("#flash.ok").wait_for()
    assert "promote: done" in page.locator("#flash").inner_text()
    page.get_by_text("No candidates waiting.").wait_for()

    s.open(f"#/memory/{store['postgres']}")
    page.locator("#timeline li.superseded-by").wait_for()
    assert page.locator("#memory .badge").first.inner_text() == "superseded"
    assert "now (still true)" not in page.locator(".validity").inner_text()
    event = page.locator("#timeline li.superseded-by").inner_text()
    assert "superseded by" in event
    assert "promoted on review" in event
    # The owner may name principals: the name shown, the principal's id on hover.
    assert "decided by admin" in event and "principal:" not in event
    decider = page.locator("#timeline li.superseded-by .who")
    assert decider.get_attribute("title") == f"principal:{tenant.principal_id}"
    link = page.locator("#timeline li.superseded-by a.memory-link")
    assert link.get_attribute("href") == f"#/memory/{store['candidate']}"
    assert "stopped being valid" in page.locator("#timeline").inner_text()
    # No id is printed whole on the page (the contradiction's reason names a tombstone, the
    # edges a principal and memories): each is 8 characters, the whole id on hover.
    assert re.search(UUID, page.locator("#view").inner_text()) is None
    titles = page.locator("#view [title]").evaluate_all("els => els.map(e => e.title)")
    assert any(re.fullmatch(UUID, t) for t in titles)  # control: the ids are there, on hover
    assert "tombstone " in page.locator("table.relations").inner_text()

    api_calls = [(u, h) for u, h in s.requests if "/v1/" in u]
    assert any(h.get("authorization") == f"Bearer {tenant.key}" for _, h in api_calls)  # control
    assert not [u for u, _ in s.requests if tenant.key in u]
    assert not s.errors, s.errors
    s.close()


def test_a_key_reading_one_path_sees_only_that_paths_tree(browser, server, tenant, store):
    """Given memories in users.alice and users.bob
    When the owner and then a key reading only users.alice open the memories view
    Then the owner's tree holds both paths (the control), the clamped key's holds
    users.alice only, and nothing of users.bob's memory shows anywhere on its page, also
    when it asks for that path directly."""
    owner = Session(browser, server)
    owner.sign_in(tenant.key)
    owner.page.locator("#path-tree a[data-path='users.alice']").wait_for()
    assert owner.page.locator("#path-tree a[data-path='users.bob']").count() == 1
    owner.open("#/memories?path=users.bob")
    owner.page.get_by_text("Bob keeps falcons").wait_for()
    owner.close()

    alice = Session(browser, server)
    page = alice.page
    alice.sign_in(store["alice_key"])
    page.locator("#path-tree a[data-path='users.alice']").wait_for()
    page.locator("#memory-list article.memory").first.wait_for()
    assert page.locator("#path-tree a[data-path='users.bob']").count() == 0
    assert "bob" not in page.locator("#path-tree").inner_text()
    assert "falcons" not in page.content()
    alice.open("#/memories?path=users.bob&status=all")
    page.get_by_text("No memories match.").wait_for()
    assert "falcons" not in page.content()
    assert page.locator("#nav-admin").is_hidden()  # a read key holds no owner pages
    alice.close()


def test_memory_content_that_is_markup_is_shown_as_text_and_never_runs(browser, server, tenant, store):
    """Given memories whose content is a <script> element and an <img onerror> handler
    When they are listed and opened in the console
    Then both are shown as the text they are, no element of theirs exists in the page, and
    neither script ran (no global set, no dialog, no page error)."""
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/memories?path=users.alice&status=all")
    page.locator("#memory-list article.memory").first.wait_for()
    listing = page.locator("#memory-list").inner_text()
    assert SCRIPT in listing and IMAGE in listing
    assert page.locator("#memory-list script, #memory-list img").count() == 0
    card = page.locator("#memory-list article.memory", has_text="Alice's other note")
    card.locator("a.memory-link").click()
    page.locator("#memory-content").wait_for()
    assert page.locator("#memory-content").inner_text() == IMAGE
    assert page.locator("#memory img").count() == 0
    page.wait_for_timeout(300)  # an onerror would have fired by now
    assert page.evaluate("() => window.__pwned") is None
    assert not s.dialogs and not s.errors, (s.dialogs, s.errors)
    s.close()


def test_the_receipts_page_tells_kept_from_not_kept_and_a_quiet_run_from_a_broken_one(
        browser, server, tenant, api, db):
    """Given a receipt with a kept statement and a question not kept, a receipt of a
    question alone (a quiet run), and one whose pipeline failed (a broken run)
    When the receipts page is opened
    Then the first shows its kept item with the memory's content and its not-kept clause
    with the reason; the quiet run and the broken run are told apart, the broken one with
    its error."""
    mixed = ingest(api, "users.alice", "I drive a Volvo", "What time is it?")
    assert [i["outcome"] for i in mixed["items"]] == ["created"], mixed
    quiet = ingest(api, "users.alice", "Is it raining?")
    assert quiet["status"] == "meaningful_no_write"
    # A broken run as the pipeline records one (strata.ingest.pipeline: status and error).
    broken = ingest(api, "users.alice", "Is it snowing?")
    with db.transaction() as cur:
        cur.execute("UPDATE ingest_receipts SET status = 'llm_failed', error = %s WHERE id = %s",
                    ("extractor unavailable: timeout", broken["id"]))

    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/receipts")
    card = page.locator(f"article.receipt[data-id='{mixed['id']}']")
    card.wait_for()
    kept = card.locator("li.item.kept")
    assert kept.count() == 1 and "drives a Volvo" in kept.inner_text()  # the memory as kept
    not_kept = card.locator("li.item.not-kept")
    assert not_kept.count() == 1
    assert "What time is it?" in not_kept.inner_text() and "reason: question" in not_kept.inner_text()

    quiet_card = page.locator(f"article.receipt[data-id='{quiet['id']}']")
    broken_card = page.locator(f"article.receipt[data-id='{broken['id']}']")
    assert "quiet" in quiet_card.get_attribute("class")
    assert "nothing worth keeping" in quiet_card.inner_text()
    assert "broken" in broken_card.get_attribute("class")
    assert "FAILED" in broken_card.inner_text()
    assert "extractor unavailable: timeout" in broken_card.inner_text()
    assert "FAILED" not in quiet_card.inner_text()
    assert not s.errors, s.errors
    s.close()


def test_an_owner_sees_keys_and_audit_status_and_revokes_a_key(browser, server, tenant, store, api):
    """Given the owner key and the key reading users.alice
    When the owner opens keys and audit, verifies the chain, mints a key clamped to read
    users.alice and revokes the other key
    Then the audit status shows the head, a verification walks the chain and says it
    verifies, the minted key is shown once and holds the clamp, and the revoked key is
    refused by the API from then on (control: it worked before)."""
    other = bearer(store["alice_key"])
    assert api.get("/v1/me", headers=other).status_code == 200
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/admin")
    page.locator("#audit-status").wait_for()
    assert "seq" in page.locator("#audit-status").inner_text()
    page.locator("#verify-now").click()
    page.get_by_text("Verified:").wait_for()
    form = page.locator("#mint-form")
    form.locator("input[name=name]").fill("console minted")
    form.locator("input[name=ceiling]").fill("users.alice:read")
    form.locator("button[type=submit]").click()
    minted = page.locator("#new-key")
    minted.wait_for()
    new_key = minted.input_value()
    assert new_key.startswith("sk_")
    access = api.get("/v1/me", headers=bearer(new_key)).json()["access"]
    assert access == [{"path": "users.alice", "level": "read"}]
    assert page.locator("table.keys tr", has_text="console minted").count() == 1
    assert not [u for u, _ in s.requests if new_key in u]
    row = page.locator("table.keys tr", has_text="alice reader")
    row.get_by_role("button", name="Revoke").click()
    page.locator("#flash.ok", has_text="revoked").wait_for()
    assert api.get("/v1/me", headers=other).status_code == 401
    assert not s.errors, s.errors
    s.close()


def test_search_explains_each_score_and_a_memory_is_restored_from_its_history(
        browser, server, tenant, api):
    """Given a memory edited once (version 1 said "Tuesdays", version 2 "Wednesdays")
    When the console searches for it and then opens it and restores version 1
    Then the hit carries its score breakdown (the vector and the text arm's ranks and
    scores), and after the restore the memory reads as version 1 did again, with the
    rollback in its history; deleted, its page says so and brings it back."""
    made = api.post("/v1/memories", json={"memories": [
        {"content": "The team ships releases on Tuesdays", "path": "agents.release"}]}).json()
    memory_id = made["results"][0]["id"]
    r = api.patch(f"/v1/memories/{memory_id}", json={
        "expected_version": 1, "content": "The team ships releases on Wednesdays"})
    assert r.status_code == 200, r.text

    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    hit = s.search("when does the team ship releases", memory_id)
    hit.locator("details.explain summary").click()
    table = hit.locator("table.explain").inner_text()
    assert "vector" in table and "text (BM25)" in table
    assert "score" in hit.locator("p.meta").inner_text()
    assert "Wednesdays" in hit.locator("p.content").inner_text()

    hit.locator("a.memory-link").click()
    page.locator("#memory-content").wait_for()
    assert "Wednesdays" in page.locator("#memory-content").inner_text()
    page.get_by_role("button", name="Restore version 1").click()
    page.locator("#flash.ok").wait_for()
    assert "Tuesdays" in page.locator("#memory-content").inner_text()
    assert "memory.restore" in page.locator("table.history").inner_text()
    assert api.get(f"/v1/memories/{memory_id}").json()["content"].endswith("Tuesdays")

    # Deleted, it is still there through its history, and comes back from there.
    assert api.delete(f"/v1/memories/{memory_id}").status_code == 200
    s.open("#/search")
    s.open(f"#/memory/{memory_id}")
    page.get_by_text("This memory was deleted.").wait_for()
    assert "Tuesdays" in page.locator("#memory-content").inner_text()
    page.get_by_role("button", name="Restore it").click()
    page.locator("#flash.ok", has_text="Restored").wait_for()
    assert api.get(f"/v1/memories/{memory_id}").json()["status"] == "active"
    assert not s.errors, s.errors
    s.close()


def test_a_refused_key_does_not_sign_in_and_filters_narrow_the_list(browser, server, tenant, store):
    """Given a key that does not exist and the owner key
    When the first is used to sign in, then the owner filters users.alice by kind and status
    Then the first is refused and nothing is kept in the session; the owner sees the
    superseded preference (MongoDB) under status superseded and kind preference, and not
    the active facts, which status active and kind fact list instead (the control)."""
    s = Session(browser, server)
    page = s.page
    page.goto(f"{server}/console")
    page.locator("#key").fill("sk_nothere_" + "x" * 40)
    page.locator("#signin button[type=submit]").click()
    page.get_by_text("That key was refused.").wait_for()
    assert page.locator("#nav").is_hidden()
    assert page.evaluate("() => sessionStorage.getItem('strata.console.key')") is None

    s.sign_in(tenant.key)
    s.open("#/memories?path=users.alice")
    page.locator("#memory-list article.memory").first.wait_for()
    form = page.locator("#memory-filters")
    form.locator("select[name=status]").select_option("superseded")
    form.locator("select[name=kind]").select_option("preference")
    form.locator("button[type=submit]").click()
    page.wait_for_function("() => location.hash.includes('kind=preference')")
    page.locator("#memory-list article.memory").first.wait_for()
    listing = page.locator("#memory-list").inner_text()
    assert "MongoDB" in listing and "Alice's note" not in listing
    s.open("#/memories?path=users.alice&status=active&kind=fact")
    page.get_by_text("Alice's note").first.wait_for()
    assert "MongoDB" not in page.locator("#memory-list").inner_text()
    s.close()


def test_a_reviewer_suppresses_one_candidate_and_merges_another(browser, server, tenant, api):
    """Given two candidates (a change back in users.carol and one in users.dave)
    When the reviewer rejects the first with suppression and merges the second into the
    memory it contradicts
    Then the queue is empty, the first is rejected and its value blocked from then on (the
    same change back ingested again is blocked), and the second is rejected with a
    DUPLICATE_OF edge to the memory it was merged into."""
    held = {}
    for path in ("users.carol", "users.dave"):
        ingest(api, path, "I prefer MongoDB")
        switched = ingest(api, path, "I've switched to PostgreSQL", weeks=3)
        back = ingest(api, path, "I've gone back to MongoDB", weeks=6)
        held[path] = (back["items"][0]["memory_id"], switched["items"][0]["memory_id"])
    carol, dave = held["users.carol"], held["users.dave"]

    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/review")
    page.locator(f"article.candidate[data-id='{carol[0]}'] button.suppress").click()
    page.locator("#flash.ok", has_text="suppress").wait_for()
    card = page.locator(f"article.candidate[data-id='{dave[0]}']")
    assert card.locator("select[name=into]").input_value() == dave[1]
    card.locator("button.merge").click()
    page.locator("#flash.ok", has_text="merge").wait_for()
    page.get_by_text("No candidates waiting.").wait_for()

    assert api.get(f"/v1/memories/{carol[0]}").json()["status"] == "rejected"
    again = ingest(api, "users.carol", "I've gone back to MongoDB", weeks=8)
    assert [i["outcome"] for i in again["items"]] == ["blocked"], again
    assert api.get(f"/v1/memories/{dave[0]}").json()["status"] == "rejected"
    edges = api.get(f"/v1/memories/{dave[0]}/related").json()["items"]
    assert {(e["type"], e["other_id"]) for e in edges} >= {("DUPLICATE_OF", dave[1])}
    assert not s.errors, s.errors
    s.close()


def test_a_suppression_until_a_past_instant_lets_the_value_come_back_for_review(
        browser, server, tenant, api):
    """Given a change back held for review in users.erin
    When the reviewer suppresses it until an instant already past (the until field filled)
    Then the candidate is rejected, and the same change back said again comes back as a
    candidate, not blocked (control: the for-good suppression in the test above blocks it)."""
    ingest(api, "users.erin", "I prefer MongoDB")
    ingest(api, "users.erin", "I've switched to PostgreSQL", weeks=3)
    back = ingest(api, "users.erin", "I've gone back to MongoDB", weeks=6)["items"][0]["memory_id"]
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/review")
    card = page.locator(f"article.candidate[data-id='{back}']")
    card.locator("input[name=until]").fill("2020-01-01T00:00")
    card.locator("button.suppress").click()
    page.locator("#flash.ok", has_text="suppress").wait_for()
    assert api.get(f"/v1/memories/{back}").json()["status"] == "rejected"
    again = ingest(api, "users.erin", "I've gone back to MongoDB", weeks=8)
    assert [i["outcome"] for i in again["items"]] == ["candidate"], again
    assert not s.errors, s.errors
    s.close()


def test_an_owner_sets_and_removes_a_memory_rule_and_a_write_obeys_it(browser, server, tenant,
                                                                      api):
    """Given the owner key in the console
    When the owner sets a rule at users excluding health (and a bad pattern), then removes it
    Then the rule is listed and the API blocks a health statement naming it while a
    preference is kept (control); the bad pattern is refused with the field named; after the
    removal the list is empty and the same health statement is stored."""
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    s.open("#/admin")
    form = page.locator("#rule-form")
    form.wait_for()
    form.locator("input[name=path]").fill("users")
    form.locator("input[name=exclude][value=health]").check()
    form.locator("button[type=submit]").click()
    page.locator("#flash.ok", has_text="set (version 1)").wait_for()
    row = page.locator("table.rules tr", has_text="users")
    assert "health" in row.inner_text()
    [rule] = api.get("/v1/rules").json()["items"]
    results = api.post("/v1/memories", json={"memories": [
        {"content": "I was diagnosed with asthma", "path": "users.alice"},
        {"content": "I prefer tea", "path": "users.alice"}]}).json()["results"]
    assert [(r["status"], r.get("rule_id")) for r in results] == [("blocked", rule["id"]),
                                                                  ("inserted", None)]

    form = page.locator("#rule-form")
    form.locator("input[name=path]").fill("shared")
    form.locator("textarea[name=patterns]").fill("/(a+)+/")
    form.locator("button[type=submit]").click()
    page.locator("#flash.error", has_text="exclude_patterns[0]").wait_for()

    page.locator("table.rules tr", has_text="users").get_by_role("button", name="Remove").click()
    page.locator("#flash.ok", has_text="Rule removed").wait_for()
    assert api.get("/v1/rules").json()["items"] == []
    [again] = api.post("/v1/memories", json={"memories": [
        {"content": "I was diagnosed with asthma", "path": "users.alice"}]}).json()["results"]
    assert again["status"] == "inserted"
    assert not s.errors, s.errors
    s.close()


def test_a_memorys_context_is_shown_as_text_where_the_memory_is(browser, server, tenant, api):
    """Given a memory stored with a context (the message it answers) that holds markup, and
    one stored without a context (the control)
    When the console searches by a word only the context holds, lists the path, opens the
    memory, and the context is then changed
    Then the hit, the list and the memory's page show the context as the text it is (no
    element of it exists, nothing runs), the control shows none, and the history row of the
    first version shows the context it had."""
    context = ("Bob asked: how long have you been married? "
               "<img src=x onerror=\"window.__pwned = 'context'\">")
    made = api.post("/v1/memories", json={"memories": [
        {"content": "Five years already!", "context": context, "path": "users.carol"},
        {"content": "Carol keeps bees on the roof", "path": "users.carol"}]})
    assert made.status_code == 200, made.text
    with_ctx, control = (r["id"] for r in made.json()["results"])

    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    hit = s.search("how long married", with_ctx)
    assert hit.locator("p.context").inner_text() == "context: " + context
    assert page.locator("#search-results img").count() == 0

    s.open("#/memories?path=users.carol")
    card = page.locator(f"#memory-list article.memory[data-id='{with_ctx}']")
    card.wait_for()
    assert card.locator("p.context").inner_text() == "context: " + context
    other = page.locator(f"#memory-list article.memory[data-id='{control}']")
    assert other.locator("p.content").inner_text() == "Carol keeps bees on the roof"
    assert other.locator("p.context").count() == 0

    r = api.patch(f"/v1/memories/{with_ctx}", json={
        "expected_version": 1, "context": "Bob asked: since when are you married?"})
    assert r.status_code == 200, r.text
    s.open(f"#/memory/{with_ctx}")
    page.locator("#memory-context").wait_for()
    assert page.locator("#memory-context").inner_text() == "Bob asked: since when are you married?"
    assert page.locator("table.history").inner_text().count(context) == 1
    assert page.locator("#memory img, table.history img").count() == 0
    s.open(f"#/memory/{control}")
    page.locator(f"#memory[data-id='{control}']").wait_for()
    assert page.locator("#memory-context").count() == 0
    page.wait_for_timeout(300)  # an onerror would have fired by now
    assert page.evaluate("() => window.__pwned") is None
    assert not s.dialogs and not s.errors, (s.dialogs, s.errors)
    s.close()


def png_height(png: bytes) -> int:
    """A PNG's height in pixels (its IHDR chunk): how tall a screenshot came out."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[20:24], "big")


def test_a_memorys_life_is_a_timeline_with_short_ids_and_evidence_as_sentences(
        browser, server, tenant, api):
    """Given a memory written through the API and edited twice (versions 1, 2 and 3), and
    one ingested from a user's message
    When its page is opened, its id copied, and it is then deleted and opened again
    Then the timeline draws three versions in order, left to right, the first two ended by
    an update and the last current, beside an open valid-time span; deleted, the last is
    ended by the deletion. The id shows as 8 characters with the full id on hover, and the
    copy button puts the full id on the clipboard. Evidence reads as sentences: "written
    through the API by admin", "said by the user on 2 Mar 2026 ... in receipt <8 chars>"
    (linking the receipt); actors are named, their full id on hover, never printed."""
    made = api.post("/v1/memories", json={"memories": [
        {"content": "The team ships releases on Tuesdays", "path": "agents.release"}]}).json()
    memory_id = made["results"][0]["id"]
    for version, day in ((1, "Wednesdays"), (2, "Thursdays")):
        r = api.patch(f"/v1/memories/{memory_id}", json={
            "expected_version": version, "content": f"The team ships releases on {day}"})
        assert r.status_code == 200, r.text
    said = ingest(api, "users.zed", "I prefer MongoDB")
    ingested = said["items"][0]["memory_id"]

    s = Session(browser, server, permissions=["clipboard-read", "clipboard-write"])
    page = s.page
    s.sign_in(tenant.key)
    s.open(f"#/memory/{memory_id}")
    versions = page.locator("#life .version")
    versions.nth(2).wait_for()
    assert [versions.nth(i).get_attribute("data-version") for i in range(3)] == ["1", "2", "3"]
    assert [versions.nth(i).get_attribute("data-end") for i in range(3)] == [
        "updated", "updated", "current"]
    boxes = [versions.nth(i).bounding_box() for i in range(3)]
    chart = page.locator("#life").bounding_box()
    assert all(b["width"] > 40 for b in boxes)
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]
    assert boxes[1]["x"] + boxes[1]["width"] <= boxes[2]["x"]
    assert boxes[2]["x"] + boxes[2]["width"] <= chart["x"] + chart["width"]
    assert page.locator("#life .valid-span.open").count() == 1
    # A screenshot of the chart is one chart tall: the lanes sit beside their labels, not
    # wrapped below them.
    assert png_height(page.locator("#life").screenshot()) < 160

    heading = page.locator("#view h2 .short-id")
    assert heading.locator("code").inner_text() == memory_id[:8]
    assert heading.locator("code").get_attribute("title") == memory_id
    assert memory_id not in page.locator("#view h2").inner_text()
    heading.locator("button.copy").click()
    page.locator("#flash.ok", has_text="Copied").wait_for()
    assert page.evaluate("() => navigator.clipboard.readText()") == memory_id

    evidence = page.locator("ol.evidence li").first.inner_text()
    assert evidence.startswith("written through the API by admin on ")
    history = page.locator("table.history")
    assert "principal:" not in history.inner_text() and "admin" in history.inner_text()
    assert history.locator(".who").first.get_attribute("title") == f"principal:{tenant.principal_id}"

    assert api.delete(f"/v1/memories/{memory_id}").status_code == 200
    s.open(f"#/memory/{ingested}")
    page.locator(f"#memory[data-id='{ingested}']").wait_for()
    sentence = page.locator("ol.evidence li").first
    assert sentence.inner_text() == f"said by the user on 2 Mar 2026 09:00 UTC in receipt {said['id'][:8]}"
    assert sentence.locator(f"a[href='#/receipt/{said['id']}']").get_attribute("title") == said["id"]

    s.open(f"#/memory/{memory_id}")
    page.get_by_text("This memory was deleted.").wait_for()
    ends = page.locator("#life .version")
    assert [ends.nth(i).get_attribute("data-end") for i in range(ends.count())] == [
        "updated", "updated", "deleted"]
    # Its valid time read from the last snapshot (the row's range) still draws its span.
    assert page.locator("#life .valid-span.open").count() == 1
    assert "an unknown time" not in page.locator("#life").inner_text()
    assert not s.errors, s.errors
    s.close()


def test_explain_is_behind_a_toggle_and_three_hits_fit_a_screen(browser, server, tenant, api):
    """Given four memories about the team's releases
    When the console searches for them in a 1280x720 window
    Then every hit's score breakdown is collapsed and the third hit ends inside the window;
    opening one hit's toggle shows its breakdown (vector and text arms), and its screenshot
    grows taller (the control that collapsing is what made them fit)."""
    made = api.post("/v1/memories", json={"memories": [
        {"content": text, "path": "agents.release"} for text in (
            "The team ships releases on Tuesdays", "Releases are shipped after the QA sign-off",
            "The team ships hotfix releases any day", "Release notes go out with each release")]})
    assert made.status_code == 200, made.text
    first = made.json()["results"][0]["id"]

    s = Session(browser, server, viewport={"width": 1280, "height": 720})
    page = s.page
    s.sign_in(tenant.key)
    hit = s.search("when does the team ship releases", first)
    hits = page.locator("#search-results article.hit")
    assert hits.count() >= 3
    assert page.locator("#search-results details.explain[open]").count() == 0
    assert not page.locator("#search-results table.explain").first.is_visible()
    third = hits.nth(2).bounding_box()
    assert third["y"] + third["height"] <= 720

    closed = png_height(hit.screenshot())
    hit.locator("details.explain summary").click()
    table = hit.locator("table.explain")
    table.wait_for(state="visible")
    assert "vector" in table.inner_text() and "text (BM25)" in table.inner_text()
    assert png_height(hit.screenshot()) > closed + 40
    assert not s.errors, s.errors
    s.close()


def test_the_header_names_the_key_by_its_prefix_and_path_counts_match_the_list(
        browser, server, tenant, store):
    """Given the store (users.alice: active memories, a superseded one and a candidate)
    When the owner signs in, opens the keys table and the memories of users.alice
    Then the header names the key by the prefix the keys table shows for "this key" (not its
    id); users.alice's count in the tree is the number of memories the list shows (active),
    with the other statuses as "+n" and split on hover; with status all, the count is the
    list's again (the control: the two counts differ)."""
    s = Session(browser, server)
    page = s.page
    s.sign_in(tenant.key)
    prefix = tenant.key.split("_")[1]
    assert page.locator("#whoami-key").inner_text() == prefix
    s.open("#/admin")
    row = page.locator("table.keys tr", has_text="this key")
    row.wait_for()
    assert row.locator("td code").first.inner_text() == prefix

    shown, other = {}, 0
    for status in ("active", "all"):
        s.open(f"#/memories?path=users.alice&status={status}")
        page.locator("#memory-list article.memory").first.wait_for()
        count = page.locator("#path-tree a[data-path='users.alice'] .count")
        shown[status] = page.locator("#memory-list article.memory").count()
        assert count.get_attribute("data-shown") == str(shown[status]), status
        if status == "active":
            split = count.get_attribute("title")
            assert "active" in split and "superseded" in split and "candidate" in split
            other = int(count.locator(".other").inner_text().strip(" +"))
    assert shown["all"] == shown["active"] + other and other >= 2
    assert not s.errors, s.errors
    s.close()
