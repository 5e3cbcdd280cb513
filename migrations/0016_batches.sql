-- Files uploaded for batches (`POST /v1/files`, purpose `batch`) and the output and error files a batch writes when it
-- ends (purpose `batch_output`). One account's files are never visible to another's keys. JSONL is text.
CREATE TABLE batch_files (
  id          text        PRIMARY KEY,
  account_id  uuid        NOT NULL,
  purpose     text        NOT NULL,
  filename    text        NOT NULL,
  bytes       integer     NOT NULL,
  content     text        NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX batch_files_account ON batch_files (account_id, created_at DESC, id DESC);

-- The batch read model: one row per batch, the fold of its stream `batch-<id>`, written in the same transaction as
-- the batch's events (a line's result commits with the ledger command that bills or refunds it).
CREATE TABLE batches (
  id              text        PRIMARY KEY,
  account_id      uuid        NOT NULL,
  key_id          uuid,
  endpoint        text        NOT NULL,
  input_file_id   text        NOT NULL,
  status          text        NOT NULL,
  total           integer     NOT NULL,
  completed       integer     NOT NULL,
  failed          integer     NOT NULL,
  cost            bigint      NOT NULL,
  metadata        jsonb,
  output_file_id  text,
  error_file_id   text,
  errors          jsonb,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  in_progress_at  timestamptz,
  finalizing_at   timestamptz,
  completed_at    timestamptz,
  failed_at       timestamptz,
  expired_at      timestamptz,
  cancelling_at   timestamptz,
  cancelled_at    timestamptz,
  updated_at      timestamptz NOT NULL,
  version         bigint      NOT NULL
);
CREATE INDEX batches_account ON batches (account_id, created_at DESC, id DESC);
CREATE INDEX batches_live ON batches (created_at) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

-- Which gateway instance runs a batch's lines. Operational state, not an event: a lease past `lease_until` may be
-- taken by any instance, so a crashed worker's batch is picked up again where its events say it stopped.
CREATE TABLE batch_leases (
  batch_id     text        PRIMARY KEY,
  owner        text        NOT NULL,
  lease_until  timestamptz NOT NULL
);
