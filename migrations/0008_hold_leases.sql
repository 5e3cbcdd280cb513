-- Holds in use by a request that has lived longer than one renewal interval (streams, slow calls). The instance that
-- serves the request renews `lease_until` while the request is alive and records what it has delivered so far
-- (`cost`, in micro-dollars, and the usage it was priced from). The expiry sweep releases only holds whose request
-- is gone: no lease and past their expiry, or a lease nobody renewed; an orphan with progress is settled at it.
-- Operational state, not a projection: nothing here is derived from events, and replay leaves it alone.
CREATE TABLE hold_leases (
  hold_id     uuid        PRIMARY KEY,
  account_id  uuid        NOT NULL,
  lease_until timestamptz NOT NULL,
  cost        bigint      NOT NULL DEFAULT 0,
  usage       jsonb,
  renewed_at  timestamptz NOT NULL
);
CREATE INDEX hold_leases_lease_until ON hold_leases (lease_until);
