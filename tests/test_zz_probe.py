import json, time
from datetime import UTC, datetime, timedelta
from fastapi.testclient import TestClient
from support import bearer

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

def test_probe(app, tenant):
    with TestClient(app, raise_server_exceptions=False) as c:
        h = bearer(tenant.key)
        for n in range(4):
            t = time.perf_counter()
            outs = []
            for text, w in (("I prefer MongoDB", 0), ("Actually I've switched to PostgreSQL", 3), ("I've gone back to MongoDB", 6)):
                r = c.post("/v1/ingest", headers=h, json={"path": f"users.alice.c{n}", "messages": [{"role": "user", "content": text, "at": (T0 + timedelta(weeks=w)).isoformat()}], "wait": True})
                outs.append(r.json()["items"][0]["outcome"])
            print(outs, time.perf_counter() - t)
        rr = c.get("/v1/review", headers=h)
        print("review", [(m["id"], m["path"]) for m in rr.json()["items"]])
