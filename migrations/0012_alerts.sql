-- Alert webhooks. Operational state, not a projection: an alert says something happened, the ledger is what happened.
--
-- alert_endpoints: webhooks an operator registered for one account through the admin API (the operator config's
-- global ones live in the file). The secret signs each delivery (HMAC-SHA256), so it is kept; it is never shown
-- again after creation, never logged and never put in a delivery.
CREATE TABLE alert_endpoints (
  id            uuid        PRIMARY KEY,
  account_id    uuid        NOT NULL,
  url           text        NOT NULL,
  events        text[]      NOT NULL,
  secret        text        NOT NULL,
  balance_below bigint,
  created_at    timestamptz NOT NULL
);
CREATE INDEX alert_endpoints_account ON alert_endpoints (account_id);

-- The outbox: one row per event and endpoint, written where the event is noticed and delivered by whichever
-- instance's worker leases it first. (event_id, endpoint) is unique, so an event noticed twice (by two instances, or
-- again after a restart) is delivered once; a row is sent again only while no 2xx has acknowledged it.
--   endpoint   'config:<n>:<hash of its URL>' for the config file's n-th webhook, else the alert_endpoints id
--   status     pending, delivered, or failed (attempts exhausted, or the endpoint is gone)
CREATE TABLE alert_deliveries (
  id              uuid        PRIMARY KEY,
  event_id        text        NOT NULL,
  event_type      text        NOT NULL,
  endpoint        text        NOT NULL,
  account_id      uuid,
  url             text        NOT NULL,
  payload         jsonb       NOT NULL,
  status          text        NOT NULL,
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_owner     text,
  lease_until     timestamptz,
  last_status     integer,
  last_error      text,
  created_at      timestamptz NOT NULL,
  delivered_at    timestamptz,
  UNIQUE (event_id, endpoint)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_deliveries_created ON alert_deliveries (created_at);
