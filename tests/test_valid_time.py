"""Issue 34: valid time when it is explicit.

When two statements of one slot both give their start explicitly (a ``valid_from`` in the
request, a date the extractor reads: "since May 2025") and the starts differ, the earlier
start is history, closed at the later one's start, whichever was written or said first. When
a start is only the time something was said, the statement said later wins, as before.

Generated pairs go through the real write path (``POST /v1/memories`` and ``POST /v1/ingest``
with the rule extractor) into a real PostgreSQL; assertions read the HTTP answers and the
rows. Each property has its control: the same pairs without explicit starts keep assertion
order.
"""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings, strategies as st

from support import create_ok

from strata.maintenance import transfer

SLOT = "user.preferred_shell"
SHELLS = ["bash", "zsh", "fish", "nushell", "tcsh", "ksh"]
CITIES = ["Lyon", "Porto", "Berlin", "Paris", "Munich", "Hamburg", "Madrid", "Vienna"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
T = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)

SLOW = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def rows(db, tenant_id, path: str) -> dict[str, dict[str, Any]]:
    with db.connection() as conn:
        return {r["id"]: r for r in conn.execute(
            "SELECT id::text AS id, slot, value, status::text AS status, valid,"
            " valid_from_explicit FROM memories WHERE tenant_id = %s AND path = %s::ltree",
            (tenant_id, path)).fetchall()}


def supersedes(db, tenant_id, source: str, target: str) -> bool:
    with db.connection() as conn:
        return conn.execute(
            "SELECT 1 FROM memory_relationships WHERE tenant_id = %s AND source_id = %s"
            " AND target_id = %s AND type = 'SUPERSEDES'", (tenant_id, source, target)
        ).fetchone() is not None


def shell(client, h, path: str, value: str, start: datetime | None) -> dict:
    item: dict[str, Any] = {"content": f"The preferred shell is {value}", "path": path,
                            "slot": SLOT, "value": value, "kind": "preference"}
    if start is not None:
        item["valid_from"] = start.isoformat()
    [res] = create_ok(client, h, item)
    return res


def say(client, h, text: str, *, at: datetime, path: str) -> dict:
    r = client.post("/v1/ingest", headers=h, json={
        "path": path, "wait": True,
        "messages": [{"role": "user", "content": text, "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert len(receipt["items"]) == 1, receipt
    return receipt["items"][0]


def fresh_path() -> str:
    return f"users.vt.p{uuid.uuid4().hex[:12]}"


def assert_history(db, tenant_id, path: str, later: str, earlier: str,
                   later_start: datetime) -> None:
    """``later`` is the one active holder of the slot, ``earlier`` superseded with its validity
    closed at ``later_start``, and a SUPERSEDES edge records it."""
    by_id = rows(db, tenant_id, path)
    assert by_id[later]["status"] == "active", by_id
    assert by_id[later]["valid"].lower == later_start, by_id[later]
    assert by_id[earlier]["status"] == "superseded", by_id
    assert by_id[earlier]["valid"].upper == later_start, by_id[earlier]
    assert [i for i, r in by_id.items() if r["status"] == "active"] == [later], by_id
    assert supersedes(db, tenant_id, later, earlier)


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

# Whole seconds, in the past of every request (a start is when something became true).
starts = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2025, 12, 31),
                      timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0))


@st.composite
def pairs(draw, values: list[str]):
    """Two different values, two different starts, and which of them is written first."""
    a, b = draw(st.lists(st.sampled_from(values), min_size=2, max_size=2, unique=True))
    sa, sb = draw(st.lists(starts, min_size=2, max_size=2, unique=True))
    return (a, sa), (b, sb)


@st.composite
def month_pairs(draw):
    """Two cities and two different months for "Since <month> <year> I live in <city>"."""
    a, b = draw(st.lists(st.sampled_from(CITIES), min_size=2, max_size=2, unique=True))
    months = st.tuples(st.integers(2015, 2025), st.integers(1, 12))
    ma, mb = draw(st.lists(months, min_size=2, max_size=2, unique=True))
    return (a, ma), (b, mb)


# --------------------------------------------------------------------------------------
# Direct writes
# --------------------------------------------------------------------------------------


@SLOW
@given(pair=pairs(SHELLS))
@example(pair=(("zsh", datetime(2026, 5, 1, tzinfo=UTC)), ("bash", datetime(2025, 5, 1, tzinfo=UTC))))
@example(pair=(("bash", datetime(2025, 5, 1, tzinfo=UTC)), ("zsh", datetime(2026, 5, 1, tzinfo=UTC))))
def test_two_explicit_starts_end_with_the_later_start_active(client, tenant, db, pair):
    """Given a preferred shell written with an explicit valid_from
    When another shell is written after it with another explicit valid_from
    Then whichever order they were written in, the one with the later start is the active
         holder and the other is superseded, its validity closed at the later start, with a
         SUPERSEDES edge from the later to the earlier: written second with the earlier
         start it is stored as history (``stored_as_superseded``), with the later start it
         supersedes the holder."""
    h = tenant.headers
    path = fresh_path()
    (first, first_start), (second, second_start) = pair
    one = shell(client, h, path, first, first_start)
    assert one["status"] == "inserted", one
    two = shell(client, h, path, second, second_start)
    if second_start > first_start:
        assert two["status"] == "superseded_existing", two
        later, earlier, start = two["id"], one["id"], second_start
    else:
        assert two["status"] == "inserted" and "older" in two["reason"], two
        later, earlier, start = one["id"], two["id"], first_start
    assert_history(db, tenant.tenant_id, path, later, earlier, start)
    assert all(r["valid_from_explicit"] for r in rows(db, tenant.tenant_id, path).values())


@SLOW
@given(values=st.lists(st.sampled_from(SHELLS), min_size=2, max_size=2, unique=True))
def test_control_starts_that_are_only_when_it_was_said_keep_assertion_order(client, tenant,
                                                                            db, values):
    """Given a preferred shell written without a valid_from (its start is the request's time)
    When another shell is written after it, also without one
    Then the one written later supersedes the first, whose validity closes at the new one's
         start; neither start is explicit."""
    h = tenant.headers
    path = fresh_path()
    one = shell(client, h, path, values[0], None)
    two = shell(client, h, path, values[1], None)
    assert (one["status"], two["status"]) == ("inserted", "superseded_existing"), (one, two)
    by_id = rows(db, tenant.tenant_id, path)
    assert_history(db, tenant.tenant_id, path, two["id"], one["id"],
                   by_id[two["id"]]["valid"].lower)
    assert not any(r["valid_from_explicit"] for r in by_id.values())


@SLOW
@given(pair=pairs(SHELLS), explicit_first=st.booleans())
def test_control_one_explicit_start_is_ordered_by_when_it_was_said(client, tenant, db, pair,
                                                                   explicit_first):
    """Given a shell written with an explicit (past) start and another written without one,
         in either order
    When the second is written
    Then it supersedes the first: only one start is explicit, so when each was said decides
         ("I live in Berlin", then "actually I moved to Paris last month")."""
    h = tenant.headers
    path = fresh_path()
    (first, start), (second, _) = pair
    one = shell(client, h, path, first, start if explicit_first else None)
    two = shell(client, h, path, second, None if explicit_first else start)
    assert (one["status"], two["status"]) == ("inserted", "superseded_existing"), (one, two)
    by_id = rows(db, tenant.tenant_id, path)
    assert by_id[two["id"]]["status"] == "active" and by_id[one["id"]]["status"] == "superseded"
    assert [by_id[one["id"]]["valid_from_explicit"], by_id[two["id"]]["valid_from_explicit"]] \
        == [explicit_first, not explicit_first]


# --------------------------------------------------------------------------------------
# Ingest: dates the rule extractor reads
# --------------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pair=month_pairs(), gap=st.sampled_from([-30, -7, -1, 1, 7, 30]))
@example(pair=(("Porto", (2025, 3)), ("Lyon", (2024, 5))), gap=7)
@example(pair=(("Lyon", (2024, 5)), ("Porto", (2025, 3))), gap=-7)
def test_ingested_explicit_starts_end_with_the_later_start_active(client, tenant, db, pair, gap):
    """Given "Since <month> <year> I live in <city>" ingested (said at T)
    When "Since <another month> I live in <another city>" is ingested after it, said
         ``gap`` days before or after T
    Then the city with the later start is the active location and the other is superseded,
         closed at the later start, whichever was ingested first and whichever was said
         first; both starts are stored as explicit."""
    h = tenant.headers
    path = fresh_path()
    (city1, (y1, m1)), (city2, (y2, m2)) = pair
    start1, start2 = datetime(y1, m1, 1, tzinfo=UTC), datetime(y2, m2, 1, tzinfo=UTC)
    one = say(client, h, f"Since {MONTHS[m1 - 1]} {y1} I live in {city1}", at=T, path=path)
    assert one["outcome"] == "created", one
    two = say(client, h, f"Since {MONTHS[m2 - 1]} {y2} I live in {city2}",
              at=T + timedelta(days=gap), path=path)
    if start2 > start1:
        assert two["outcome"] == "superseded_existing", two
        later, earlier, start = two["memory_id"], one["memory_id"], start2
    else:
        assert two["outcome"] == "stored_as_superseded", two
        later, earlier, start = one["memory_id"], two["memory_id"], start1
    assert_history(db, tenant.tenant_id, path, later, earlier, start)
    by_id = rows(db, tenant.tenant_id, path)
    assert {r["value"] for r in by_id.values()} == {city1.lower(), city2.lower()}
    assert all(r["valid_from_explicit"] for r in by_id.values())


@settings(max_examples=10, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cities=st.lists(st.sampled_from(CITIES), min_size=2, max_size=2, unique=True),
       gap=st.sampled_from([-30, -7, 7, 30]))
def test_control_ingested_statements_without_dates_keep_assertion_order(client, tenant, db,
                                                                        cities, gap):
    """Given "I live in <city>" ingested, said at T
    When "I live in <another city>" is ingested after it, said ``gap`` days before or after T
    Then the one said later is the active location (the other is superseded, and stored as
         history when it was said earlier but ingested later); neither start is explicit."""
    h = tenant.headers
    path = fresh_path()
    one = say(client, h, f"I live in {cities[0]}", at=T, path=path)
    two = say(client, h, f"I live in {cities[1]}", at=T + timedelta(days=gap), path=path)
    by_id = rows(db, tenant.tenant_id, path)
    if gap > 0:
        assert two["outcome"] == "superseded_existing", two
        later, earlier = two["memory_id"], one["memory_id"]
    else:
        assert two["outcome"] == "stored_as_superseded", two
        later, earlier = one["memory_id"], two["memory_id"]
    assert by_id[later]["status"] == "active" and by_id[earlier]["status"] == "superseded"
    assert by_id[earlier]["valid"].upper == by_id[later]["valid"].lower
    assert not any(r["valid_from_explicit"] for r in by_id.values())


# --------------------------------------------------------------------------------------
# Edits, restore, export and import keep what was explicit
# --------------------------------------------------------------------------------------


def test_a_patched_start_is_explicit_and_restore_and_import_keep_the_flag(
        client, tenant, make_tenant, db, embedder):
    """Given "bash" written without a start (not explicit), then PATCHed with valid_from
         2026-05 (explicit)
    When "zsh" is written with valid_from 2025-05, after it
    Then zsh is history, closed at bash's patched start; restoring bash's version 1 makes
         its start not explicit again (the version it restores said so); an export and an
         import into another tenant carry each memory's flag (control: zsh's stays explicit,
         bash's not)."""
    h = tenant.headers
    path = fresh_path()
    bash = shell(client, h, path, "bash", None)["id"]
    assert rows(db, tenant.tenant_id, path)[bash]["valid_from_explicit"] is False
    may_2026 = datetime(2026, 5, 1, tzinfo=UTC)
    r = client.patch(f"/v1/memories/{bash}", headers=h,
                     json={"valid_from": may_2026.isoformat(), "expected_version": 1})
    assert r.status_code == 200, r.text
    assert rows(db, tenant.tenant_id, path)[bash]["valid_from_explicit"] is True

    zsh = shell(client, h, path, "zsh", datetime(2025, 5, 1, tzinfo=UTC))
    assert zsh["status"] == "inserted" and "older" in zsh["reason"], zsh
    assert_history(db, tenant.tenant_id, path, bash, zsh["id"], may_2026)

    r = client.post(f"/v1/memories/{bash}/restore", headers=h, json={"version": 1})
    assert r.status_code == 200, r.text
    by_id = rows(db, tenant.tenant_id, path)
    assert (by_id[bash]["valid_from_explicit"], by_id[zsh["id"]]["valid_from_explicit"]) == (
        False, True)

    out = io.StringIO()
    transfer.export(db, tenant.tenant_id, out)
    dest = make_tenant()
    transfer.import_lines(db, dest.tenant_id, out.getvalue().splitlines(), embedder)
    imported = {(r["value"], r["status"]): r["valid_from_explicit"]
                for r in rows(db, dest.tenant_id, path).values()}
    assert imported == {("bash", "active"): False, ("zsh", "superseded"): True}, imported
