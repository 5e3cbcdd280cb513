-- The Conversations API: a conversation is an ordered list of items owned by one account, which responses made with
-- `conversation` read as their history and extend with their turn and output. Operational state, like responses.
CREATE TABLE conversations (
  id          text        PRIMARY KEY,
  account_id  uuid        NOT NULL,
  metadata    jsonb       NOT NULL,
  created_at  timestamptz NOT NULL,
  next_position bigint    NOT NULL DEFAULT 0
);
CREATE INDEX conversations_account ON conversations (account_id, created_at);

--   position  the item's place in the conversation (increasing; gaps where items were deleted)
CREATE TABLE conversation_items (
  conversation_id text        NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  position        bigint      NOT NULL,
  item_id         text        NOT NULL,
  item            jsonb       NOT NULL,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (conversation_id, position)
);
CREATE UNIQUE INDEX conversation_items_id ON conversation_items (conversation_id, item_id);
