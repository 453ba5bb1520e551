-- Webhooks over the event outbox (0025): an owner's endpoint for the events of its paths,
-- delivered per Standard Webhooks by the dispatcher (strata.events.dispatch), in seq order
-- (so in order per memory), at least once.
--
-- Each webhook keeps its own cursor: the last event delivered (a 2xx answer). A failed
-- delivery leaves it, counts a failure and waits a backoff before the same event is sent
-- again (same webhook-id, so a receiver can drop a repeat); after max failures in a row the
-- webhook is disabled until an owner replays it. A dispatcher holds a webhook by a lease, not
-- a transaction, so no transaction stays open across an HTTP call, and two dispatchers never
-- deliver one webhook's events at once.
--
-- The secret signs deliveries (HMAC-SHA256), so it is stored as it is: it is shown once, at
-- registration and at rotation, and never read back by the API.
CREATE TABLE webhooks (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url             text NOT NULL,
    paths           ltree[] NOT NULL CHECK (cardinality(paths) > 0),
    types           text[],  -- NULL: every type
    secret          text NOT NULL,
    created_by      uuid,
    -- The key that registered (or last replayed) it: deliveries stop, and the webhook is
    -- disabled, once that key is no longer live or no longer owns every path.
    registered_by   uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    after_seq       bigint NOT NULL DEFAULT 0,
    failures        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    disabled_at     timestamptz,
    disabled_reason text
);
CREATE INDEX webhooks_due_idx ON webhooks (next_attempt_at) WHERE disabled_at IS NULL;
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at);

CREATE TABLE webhook_deliveries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id  uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL,
    seq         bigint NOT NULL,
    attempt     integer NOT NULL,
    status      integer,  -- the receiver's HTTP status; NULL when none answered
    error       text,     -- why it failed, without the body
    ok          boolean NOT NULL,
    duration_ms integer NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- On AWS the drain function also puts every event on the stack's EventBridge bus
-- (strata.events.bridge): one cursor per tenant, the last seq the bus accepted.
CREATE TABLE event_bus_cursors (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    after_seq bigint NOT NULL DEFAULT 0
);
