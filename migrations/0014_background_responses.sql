-- Background responses (`background: true`) as durable work: the response row is the task. Any instance's worker
-- claims a queued one (or one whose lease ran out) under a lease it renews while the call runs; a cancel from any
-- instance moves the status, and the worker running it sees that at its next renewal.
--   run          what the worker needs to make the call: the request as the model is to be given it, and the key it
--                was made with (its id, account, model list, spend limit and rate limits; never the secret)
--   lease_owner  the instance running it; lease_until: when another instance may take it over
--   attempts     how many times a worker started it
ALTER TABLE responses ADD COLUMN background boolean NOT NULL DEFAULT false;
ALTER TABLE responses ADD COLUMN run jsonb;
ALTER TABLE responses ADD COLUMN lease_owner text;
ALTER TABLE responses ADD COLUMN lease_until timestamptz;
ALTER TABLE responses ADD COLUMN attempts integer NOT NULL DEFAULT 0;
CREATE INDEX responses_background_live ON responses (created_at) WHERE background AND status IN ('queued', 'in_progress');

-- The events a background response streamed, in order, for `GET /v1/responses/{id}?stream=true&starting_after=N`
-- (a client resuming a stream, or reading a running response from another instance). Appended in batches.
CREATE TABLE response_events (
  response_id text    NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
  seq         integer NOT NULL,
  event       jsonb   NOT NULL,
  PRIMARY KEY (response_id, seq)
);
