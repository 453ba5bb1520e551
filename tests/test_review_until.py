"""Time-boxed suppression: reject with {"suppress": true, "until": <instant>} blocks the value
until then; after it the value may be proposed again, as a candidate for review. Through
HTTP (and the MCP tool's argument), on the real write gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BACK = "I've gone back to MongoDB"


def say(client, h, text: str, at: datetime) -> list[dict]:
    r = client.post("/v1/ingest", headers=h, json={"path": "users.alice", "wait": True,
                                                   "messages": [{"role": "user", "content": text,
                                                                 "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def candidate(client, h) -> str:
    """MongoDB, then PostgreSQL, then a change back to MongoDB: held for review."""
    say(client, h, "I prefer MongoDB", T0)
    say(client, h, "Actually I've switched to PostgreSQL", T0 + timedelta(days=3))
    items = say(client, h, BACK, T0 + timedelta(days=6))
    assert [i["outcome"] for i in items] == ["candidate"], items
    return items[0]["memory_id"]


def reject(client, h, mid: str, **body):
    return client.post(f"/v1/review/{mid}/reject", headers=h, json=body)


def test_suppression_until_the_future_blocks_and_until_the_past_lets_it_back(client,
                                                                             make_tenant):
    """Given two tenants with the same candidate (a change back to MongoDB)
    When one reviewer suppresses it until tomorrow, the other until yesterday, and the user
    says it again
    Then the first is blocked (naming the rejection's tombstone), the second comes back as a
    candidate for review, never straight to active; the tombstone records its until."""
    outcomes = {}
    for label, until in (("future", datetime.now(UTC) + timedelta(days=1)),
                         ("past", datetime.now(UTC) - timedelta(days=1))):
        t = make_tenant()
        mid = candidate(client, t.headers)
        r = reject(client, t.headers, mid, suppress=True, until=until.isoformat())
        assert r.status_code == 200 and r.json()["status"] == "rejected", r.text
        again = say(client, t.headers, BACK, T0 + timedelta(days=9))
        outcomes[label] = again[0]
        listed = client.get("/v1/review", headers=t.headers).json()["items"]
        outcomes[label + "_queue"] = [c["id"] for c in listed]
    assert outcomes["future"]["outcome"] == "blocked", outcomes
    assert "rejected" in outcomes["future"]["reason"], outcomes
    assert outcomes["future_queue"] == []
    assert outcomes["past"]["outcome"] == "candidate", outcomes
    assert outcomes["past_queue"] == [outcomes["past"]["memory_id"]]


def test_suppression_for_good_still_blocks(client, tenant):
    """Control: suppress without until blocks the value after any time."""
    mid = candidate(client, tenant.headers)
    assert reject(client, tenant.headers, mid, suppress=True).status_code == 200
    again = say(client, tenant.headers, BACK, T0 + timedelta(days=400))
    assert again[0]["outcome"] == "blocked", again


def test_until_without_suppress_or_malformed_is_a_422_and_changes_nothing(client, tenant):
    mid = candidate(client, tenant.headers)
    for body in ({"until": "2030-01-01T00:00:00Z"}, {"suppress": True, "until": "soon"},
                 {"suppress": True, "until": "2030-13-01T00:00:00Z"}):
        r = reject(client, tenant.headers, mid, **body)
        assert r.status_code == 422 and r.json()["error"]["field"] == "until", (body, r.text)
    got = client.get(f"/v1/memories/{mid}", headers=tenant.headers).json()
    assert got["status"] == "candidate"
