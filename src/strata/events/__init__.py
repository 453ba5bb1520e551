"""Memory changes as events: the feed over the transactional outbox (migration 0025).

The write path's triggers append one event per change to a memory, in the transaction of
the change, numbered per tenant in commit order (``seq``). The feed reads a tenant's events
after a cursor (the last ``seq`` seen), only those at paths the key can read -- the filter
every read of memories uses, and none of a memory that lives now where the key cannot read
-- so a consumer resumes where it stopped and misses nothing
that committed. Events carry no content: a consumer reads the memory through the API with
its own key, so access rules and forgets apply to what it reads.

Retention: events older than ``STRATA_EVENT_RETENTION_DAYS`` (default 30) are pruned by the
lifecycle job; a cursor older than that resumes at the oldest event kept.
"""
