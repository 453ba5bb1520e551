"""Assertions shared by the HTTP test modules."""

from __future__ import annotations


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_error(resp, status: int, code: str, field: str | None = None) -> dict:
    """The contract's error body: {"error": {"code", "message", "field"?}} with a fitting
    status; ``field`` is checked when given."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert err["code"] == code, body
    assert isinstance(err["message"], str) and err["message"], body
    if field is not None:
        assert err.get("field") == field, body
    return err
