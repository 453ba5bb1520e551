def test_healthz_needs_no_key(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


def test_create_then_read_back(client, tenant):
    r = client.post(
        "/v1/memories", headers=tenant.headers,
        json={"memories": [{"content": "I prefer PostgreSQL", "path": "users.alice"}]},
    )
    assert r.status_code == 200, r.text
    [result] = r.json()["results"]
    assert result["status"] == "inserted"
    got = client.get(f"/v1/memories/{result['id']}", headers=tenant.headers)
    assert got.status_code == 200
    assert got.json()["content"] == "I prefer PostgreSQL"
    assert got.json()["version"] == 1
