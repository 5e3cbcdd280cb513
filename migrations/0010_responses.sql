-- Stored Responses API responses (`POST /v1/responses` with `store` left true): operational state, not a projection
-- (money moves through the ledger's events; a response holds the conversation, never a key or a price). Owned by the
-- account that made it; deleted by the retention sweep at `expires_at` (30 days unless the operator says otherwise).
--   request      the client's settings for the turn (its body without `input`)
--   input_items  everything the model was given, with ids: the history a `previous_response_id` named, then the
--                turn's own input. Copied per response so that a conversation is rebuilt with one read.
--   response     the Response object as the gateway answered it, encrypted reasoning included (shown to a client
--                only when it asks with `include`)
CREATE TABLE responses (
  id                   text        PRIMARY KEY,
  account_id           uuid        NOT NULL,
  key_id               uuid        NOT NULL,
  model                text        NOT NULL,
  status               text        NOT NULL,
  previous_response_id text,
  created_at           timestamptz NOT NULL,
  expires_at           timestamptz NOT NULL,
  request              jsonb       NOT NULL,
  input_items          jsonb       NOT NULL,
  response             jsonb       NOT NULL
);
CREATE INDEX responses_account ON responses (account_id, created_at);
CREATE INDEX responses_expires_at ON responses (expires_at);

-- Every item a stored response named (its output and its turn's input), by id, for the `item_reference` input items
-- clients send back instead of the whole item (the Vercel AI SDK does with `store` on).
CREATE TABLE response_items (
  account_id  uuid NOT NULL,
  item_id     text NOT NULL,
  response_id text NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
  item        jsonb NOT NULL,
  PRIMARY KEY (account_id, item_id)
);
CREATE INDEX response_items_response ON response_items (response_id);
