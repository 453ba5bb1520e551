"""What the conversation-reading tests share: invented names (so nothing but the message can
put a value in a memory), a fresh path per case, one user message ingested, what is active,
what a search ranks first, and whole-word matching."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

ONSETS = ["k", "v", "z", "dr", "th", "br", "m", "gr", "pl"]
VOWELS = ["a", "o", "e", "ui", "y"]
CODAS = ["rv", "x", "ld", "nth", "sk", "rn", "lt"]
WORD = st.lists(st.tuples(st.sampled_from(ONSETS), st.sampled_from(VOWELS),
                          st.sampled_from(CODAS)).map("".join),
                min_size=2, max_size=3).map("".join)
NAME = WORD.map(str.capitalize)
# No shrinking: each example is a few ingests on a real database, and a failing one is
# printed as it was drawn.
CASES = settings(max_examples=5, deadline=None, derandomize=True,
                 phases=(Phase.explicit, Phase.reuse, Phase.generate),
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])
T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)


def fresh_path() -> str:
    return f"users.t{uuid.uuid4().hex[:12]}"


def ingest(client, h, path: str, text: str, when: datetime = T0) -> None:
    r = client.post("/v1/ingest", headers=h, json={
        "path": path, "wait": True,
        "messages": [{"role": "user", "content": text, "at": when.isoformat()}]})
    assert r.status_code == 200, r.text


def active(client, h, path: str) -> list[str]:
    r = client.get("/v1/memories", headers=h,
                   params={"path": path, "status": "active", "limit": 200})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def first_hit(client, h, path: str, query: str) -> str:
    r = client.post("/v1/search", headers=h, json={"query": query, "paths": [path], "limit": 5})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]["content"]


def has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.I) is not None


def say(client, headers, *texts: str, at: datetime, path: str = "users.alice") -> dict:
    """The user's ``texts`` as one conversation, a minute apart from ``at``."""
    messages = [{"role": "user", "content": t, "at": (at + timedelta(minutes=i)).isoformat()}
                for i, t in enumerate(texts)]
    r = client.post("/v1/ingest", headers=headers,
                    json={"path": path, "messages": messages, "wait": True})
    assert r.status_code == 200, r.text
    return r.json()


def active_items(client, headers, path: str = "users.alice") -> list[dict]:
    r = client.get("/v1/memories", headers=headers, params={"path": path, "status": "active"})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def holding(items: list[dict], *words: str) -> list[str]:
    return [m["content"] for m in items
            if all(w.lower() in m["content"].lower() for w in words)]


def send(client, h, path: str, *turns: tuple[str, str]) -> None:
    """One conversation of ``(role, text)`` turns, ingested and waited for."""
    messages = [{"role": role, "content": text} for role, text in turns]
    r = client.post("/v1/ingest", headers=h, json={"path": path, "wait": True,
                                                   "messages": messages})
    assert r.status_code == 200, r.text


def stored(client, h, path: str) -> list[str]:
    """Every memory of ``path`` (any status), as its content."""
    r = client.get("/v1/memories", headers=h, params={"path": path, "limit": 200})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def talk(client, h, path: str, *turns: tuple[str, str]) -> list[str]:
    """``turns`` sent as one conversation; what ``path`` then holds."""
    send(client, h, path, *turns)
    return stored(client, h, path)
