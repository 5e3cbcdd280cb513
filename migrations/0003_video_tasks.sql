-- The video task read model: one row per task, the fold of its stream `video-<id>`, written in the same transaction
-- as the task's events. Replay rebuilds it from the events alone.
CREATE TABLE video_tasks (
  id                 text        PRIMARY KEY,
  account_id         uuid        NOT NULL,
  key_id             uuid,
  model              text        NOT NULL,
  plugin             text        NOT NULL,
  hold_id            uuid        NOT NULL,
  status             text        NOT NULL,
  progress           integer     NOT NULL,
  prompt             text        NOT NULL,
  seconds            integer     NOT NULL,
  resolution         text        NOT NULL,
  ratio              text        NOT NULL,
  input_type         text        NOT NULL,
  images             jsonb       NOT NULL,
  videos             jsonb       NOT NULL,
  held               bigint      NOT NULL,
  estimated_tokens   bigint      NOT NULL,
  upstream_task_id   text,
  upstream_index     integer,
  tokens             bigint,
  tokens_reported    boolean,
  cost               bigint,
  content            jsonb,
  error_reason       text,
  error_code         text,
  error_message      text,
  idempotency_key    text,
  request_hash       text        NOT NULL,
  request_id         text,
  created_at         timestamptz NOT NULL,
  deadline_at        timestamptz NOT NULL,
  completed_at       timestamptz,
  failed_at          timestamptz,
  expires_at         timestamptz,
  content_expired_at timestamptz,
  updated_at         timestamptz NOT NULL,
  version            bigint      NOT NULL
);
CREATE INDEX video_tasks_account ON video_tasks (account_id, created_at DESC, id DESC);
CREATE INDEX video_tasks_live ON video_tasks (created_at) WHERE status IN ('queued', 'in_progress');
CREATE INDEX video_tasks_content_expiry ON video_tasks (expires_at)
  WHERE status = 'completed' AND content_expired_at IS NULL;

-- Which gateway instance polls a task, and when it is next due. Operational state, not an event: a lease past
-- `lease_until` may be taken by any instance, so a crashed worker's tasks are picked up again.
CREATE TABLE video_task_leases (
  task_id      text        PRIMARY KEY,
  owner        text        NOT NULL,
  lease_until  timestamptz NOT NULL,
  failures     integer     NOT NULL DEFAULT 0
);
