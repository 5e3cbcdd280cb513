-- Read models of the ledger, written in the same transaction as the events they fold. `POST /admin/replay` rebuilds
-- each of them from the events alone into a scratch schema and compares row by row.
CREATE TABLE accounts (
  id         uuid        PRIMARY KEY,
  name       text        NOT NULL,
  created_at timestamptz NOT NULL,
  deposited  bigint      NOT NULL,
  captured   bigint      NOT NULL,
  held       bigint      NOT NULL,
  version    bigint      NOT NULL,
  CHECK (deposited - captured - held >= 0),
  CHECK (held >= 0)
);
CREATE INDEX accounts_name ON accounts (lower(name));

CREATE TABLE deposits (
  account_id uuid        NOT NULL,
  reference  text        NOT NULL,
  amount     bigint      NOT NULL,
  at         timestamptz NOT NULL,
  PRIMARY KEY (account_id, reference)
);

CREATE TABLE holds (
  hold_id     uuid        PRIMARY KEY,
  account_id  uuid        NOT NULL,
  key_id      uuid,
  amount      bigint      NOT NULL,
  status      text        NOT NULL,
  captured    bigint      NOT NULL,
  refunded    bigint      NOT NULL,
  model       text,
  plugin      text,
  request_id  text,
  expires_at  timestamptz,
  placed_at   timestamptz NOT NULL,
  resolved_at timestamptz,
  CHECK (captured >= 0 AND refunded >= 0 AND refunded <= amount)
);
CREATE INDEX holds_pending_expiry ON holds (expires_at) WHERE status = 'pending';
CREATE INDEX holds_account ON holds (account_id);

-- API keys: only a SHA-256 hash of the secret is stored. `spent`/`held` are folded from the account's ledger events;
-- `last_used_at` is operational metadata (not an event) and is left out of replay comparisons.
CREATE TABLE api_keys (
  id           uuid        PRIMARY KEY,
  account_id   uuid        NOT NULL,
  name         text        NOT NULL,
  prefix       text        NOT NULL,
  key_hash     bytea       NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz,
  models       text[],
  spend_limit  bigint,
  spent        bigint      NOT NULL DEFAULT 0,
  held         bigint      NOT NULL DEFAULT 0,
  revoked_at   timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- Small facts about this installation (first-start marker of the embedded demo).
CREATE TABLE installation (
  key   text PRIMARY KEY,
  value jsonb NOT NULL
);
