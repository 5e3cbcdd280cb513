-- The append-only event store. Nothing here is ever updated or deleted; corrections are new events.
CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The writing transaction: catch-up readers order by (transaction_id, global_position) and stop below the oldest
  -- running transaction, so an event from a transaction that commits late is never skipped.
  transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
  stream_name     text        NOT NULL,
  stream_position bigint      NOT NULL,
  event_id        uuid        NOT NULL UNIQUE,
  event_type      text        NOT NULL,
  schema_version  smallint    NOT NULL DEFAULT 1,
  data            jsonb       NOT NULL,
  metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  recorded_at     timestamptz NOT NULL,
  UNIQUE (stream_name, stream_position)
);
CREATE INDEX events_catch_up ON events (transaction_id, global_position);

-- One row per stream: its current version. Appends lock this row (SELECT … FOR UPDATE) and move it with a
-- compare-and-set, which is both the expected-version check and the serialization point of a hot stream.
CREATE TABLE streams (
  stream_name text   PRIMARY KEY,
  version     bigint NOT NULL
);

-- Idempotent command records: the key, a hash of the input and the stored result, written in the same transaction
-- as the events the command appended.
CREATE TABLE idempotency_records (
  scope        text        NOT NULL,
  key          text        NOT NULL,
  request_hash text        NOT NULL,
  status       integer     NOT NULL,
  response     jsonb       NOT NULL,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
