"""Memory changes as events (docs/events.md).

- The outbox (migrations 0025): the write path's triggers append one event per change to a
  memory, in the transaction of the change, numbered per tenant in commit order (``seq``).
- :mod:`.feed`: ``GET /v1/events``, a tenant's events after a cursor at paths the key can
  read (the filter every read of memories uses, and none of a memory that lives now where
  the key cannot read), so a consumer resumes where it stopped and misses nothing that
  committed. Events older than ``STRATA_EVENT_RETENTION_DAYS`` (30) are pruned by the
  lifecycle job.
- :mod:`.webhooks` and :mod:`.dispatch`: an owner's endpoints, delivered per Standard
  Webhooks (migration 0026); :mod:`.targets`: where a webhook may deliver.
- :mod:`.bridge`: on AWS, every event onto the stack's EventBridge bus.

Events carry no content: a consumer reads the memory through the API with its own key, so
access rules and forgets apply to what it reads. ``models`` and ``webhook_models`` import
pydantic and the standard library only (the client loads them); nothing here is imported
by this package itself, so importing a shape does not load the server.
"""
