"""Webhooks: an owner registers an endpoint for the events of paths it owns; the dispatcher
(:mod:`strata.events.dispatch`) delivers them. Every operation here needs owner access on
each of the webhook's paths, so an owner of users.alice manages the webhooks of users.alice
and no other; a webhook on paths a key reads but does not own is 403 for it, one where it
cannot read 404 (as memory rules)."""

from __future__ import annotations

import base64
import secrets
import uuid
from typing import Any

from strata.audit import audited
from strata.auth import Caller, Level
from strata.db import Database
from strata.events.targets import check_url
from strata.events.webhook_models import Delivery, Webhook, WebhookIn, WebhookSecret
from strata.foundation.errors import Forbidden, NotFound
from strata.foundation.paths import validate_path

__all__ = ["deliveries", "delete", "list_webhooks", "register", "replay", "rotate"]

_COLUMNS = """id, url, paths::text[] AS paths, types, created_at, after_seq, failures,
              next_attempt_at, disabled_at, disabled_reason"""


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def _model(row: dict[str, Any], cls=Webhook, **extra: Any):
    return cls(**{k: v for k, v in row.items() if k != "after_seq"},
               after=str(row["after_seq"]), **extra)


def _owns(caller: Caller, paths: list[str]) -> bool:
    return all(caller.can(p, Level.owner) for p in paths)


def _require_owner(caller: Caller, row: dict[str, Any] | None, webhook_id: uuid.UUID) -> None:
    """As for memory rules: a webhook on paths the key reads but does not own is 403, one
    on a path it cannot read (or none) 404."""
    if row is None or not all(caller.can(p, Level.read) for p in row["paths"]):
        raise NotFound("webhook", webhook_id)
    if not _owns(caller, row["paths"]):
        raise Forbidden("owner access on every path of the webhook is required", field=None)


def register(db: Database, caller: Caller, body: WebhookIn, *, allow_private: bool) -> WebhookSecret:
    """A new webhook, delivering from the next event to commit; its secret, once."""
    for i, path in enumerate(body.paths):
        validate_path(path, field=f"paths.{i}", allow_root=True)
        caller.require(path, Level.owner, field=f"paths.{i}")
    check_url(body.url, allow_private=allow_private)
    secret = new_secret()
    with audited(db, caller, "admin", "webhook.create") as event:
        with db.transaction(cause="webhook.create", actor=caller.actor) as cur:
            row = cur.execute(
                f"""INSERT INTO webhooks (tenant_id, url, paths, types, secret, created_by,
                                          registered_by, after_seq)
                    VALUES (%(tenant)s, %(url)s, %(paths)s::ltree[], %(types)s, %(secret)s,
                            %(by)s, %(key)s, COALESCE((SELECT seq FROM event_heads
                                              WHERE tenant_id = %(tenant)s), 0))
                    RETURNING {_COLUMNS}""",
                {"tenant": caller.tenant_id, "url": body.url, "paths": body.paths,
                 "types": body.types, "secret": secret, "by": caller.principal_id,
                 "key": caller.key_id},
            ).fetchone()
        event.count = 1
    return _model(row, WebhookSecret, secret=secret)


def list_webhooks(db: Database, caller: Caller) -> list[Webhook]:
    with db.connection() as conn:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM webhooks WHERE tenant_id = %s"
                            " ORDER BY created_at, id", (caller.tenant_id,)).fetchall()
    return [_model(r) for r in rows if _owns(caller, r["paths"])]


def _change(db: Database, caller: Caller, webhook_id: uuid.UUID, operation: str,
            statement: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """Lock the webhook, check the caller owns its paths, run ``statement`` on it."""
    with audited(db, caller, "admin", operation) as event:
        with db.transaction(cause=operation, actor=caller.actor) as cur:
            row = cur.execute("SELECT paths::text[] AS paths FROM webhooks"
                              " WHERE tenant_id = %s AND id = %s FOR UPDATE",
                              (caller.tenant_id, webhook_id)).fetchone()
            _require_owner(caller, row, webhook_id)
            out = cur.execute(statement, {"id": webhook_id, **params}).fetchone()
        event.count = 1
    return out


def delete(db: Database, caller: Caller, webhook_id: uuid.UUID) -> Webhook:
    row = _change(db, caller, webhook_id, "webhook.delete",
                  f"DELETE FROM webhooks WHERE id = %(id)s RETURNING {_COLUMNS}", {})
    return _model(row)


def rotate(db: Database, caller: Caller, webhook_id: uuid.UUID) -> WebhookSecret:
    """A new secret, in force for the next delivery; the old one signs nothing more."""
    secret = new_secret()
    row = _change(db, caller, webhook_id, "webhook.rotate",
                  f"UPDATE webhooks SET secret = %(secret)s WHERE id = %(id)s"
                  f" RETURNING {_COLUMNS}", {"secret": secret})
    return _model(row, WebhookSecret, secret=secret)


def replay(db: Database, caller: Caller, webhook_id: uuid.UUID, after: int) -> Webhook:
    """Deliver again from ``after``, now; a disabled webhook is enabled again, and the
    replaying key answers for it from now on (its access is what deliveries need)."""
    row = _change(db, caller, webhook_id, "webhook.replay",
                  "UPDATE webhooks SET after_seq = %(after)s, failures = 0,"
                  " next_attempt_at = now(), disabled_at = NULL, disabled_reason = NULL,"
                  " registered_by = %(key)s"
                  f" WHERE id = %(id)s RETURNING {_COLUMNS}", {"after": after, "key": caller.key_id})
    return _model(row)


def deliveries(db: Database, caller: Caller, webhook_id: uuid.UUID, *,
               limit: int = 100) -> list[Delivery]:
    """The latest attempts, newest first."""
    with db.connection() as conn:
        row = conn.execute("SELECT paths::text[] AS paths FROM webhooks"
                           " WHERE tenant_id = %s AND id = %s",
                           (caller.tenant_id, webhook_id)).fetchone()
        _require_owner(caller, row, webhook_id)
        rows = conn.execute(
            "SELECT seq::text AS seq, attempt, status, ok, error, duration_ms, at"
            " FROM webhook_deliveries WHERE webhook_id = %s ORDER BY id DESC LIMIT %s",
            (webhook_id, limit)).fetchall()
    return [Delivery(**r) for r in rows]
