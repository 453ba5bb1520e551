"""/v1/webhooks: register, list, rotate, replay and delete webhooks, and read their
delivery log (strata.events.webhooks)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from strata.api.deps import DB, CallerDep
from strata.api.openapi import Items, answers
from strata.events import webhooks as core
from strata.events.webhook_models import Delivery, Replay, Webhook, WebhookIn, WebhookSecret

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

WebhookId = Annotated[uuid.UUID, Path(description="The webhook's id.")]


@router.post("", operation_id="createWebhook", status_code=201)
def register(body: WebhookIn, request: Request, db: DB, caller: CallerDep) -> WebhookSecret:
    """Register a webhook

    Deliveries of the events of memories under `paths` (owner access on each required),
    from the next change to commit on, signed per Standard Webhooks with the secret
    answered here, once. A URL that is not http(s), or whose host resolves to a loopback,
    link-local or private address, is refused (422 naming `url`).
    """
    settings = request.app.state.runtime.settings
    return core.register(db, caller, body, allow_private=settings.webhooks_allow_private)


@router.get("", operation_id="listWebhooks")
def list_webhooks(db: DB, caller: CallerDep) -> Items[Webhook]:
    """List webhooks

    The webhooks on paths the key owns, each with where its deliveries stand. Never the
    secret.
    """
    return {"items": core.list_webhooks(db, caller)}


@router.delete("/{webhook_id}", operation_id="deleteWebhook")
def delete(webhook_id: WebhookId, db: DB, caller: CallerDep) -> Webhook:
    """Delete a webhook

    Nothing more is delivered to it; its delivery log goes with it.
    """
    return core.delete(db, caller, webhook_id)


@router.post("/{webhook_id}/rotate", operation_id="rotateWebhookSecret")
def rotate(webhook_id: WebhookId, db: DB, caller: CallerDep) -> WebhookSecret:
    """Rotate a webhook's secret

    A new secret, answered once; deliveries from now on are signed with it alone.
    """
    return core.rotate(db, caller, webhook_id)


@router.post("/{webhook_id}/replay", operation_id="replayWebhook")
def replay(webhook_id: WebhookId, body: Replay, db: DB, caller: CallerDep) -> Webhook:
    """Replay a webhook from a cursor

    Delivers again every matching event after `after` (still kept), and enables a webhook
    that was disabled after repeated failures.
    """
    return core.replay(db, caller, webhook_id, int(body.after))


@router.get("/{webhook_id}/deliveries", operation_id="listWebhookDeliveries",
            responses=answers(404))
def deliveries(
    webhook_id: WebhookId, db: DB, caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="The most attempts listed.")] = 100,
) -> Items[Delivery]:
    """A webhook's delivery log

    The latest delivery attempts, newest first: which event, which attempt, the receiver's
    status, and why a failure failed.
    """
    return {"items": core.deliveries(db, caller, webhook_id, limit=limit)}
