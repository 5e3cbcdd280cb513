-- Usage per day, account, key and model: the sums of every settled call's metrics and charge, written in the same
-- transaction as the ledger events it folds (UsageRecalculated, OverageCharged). Replay rebuilds it from the events.
-- A call without a key or model is grouped under the nil uuid / the empty string (primary keys cannot be null).
CREATE TABLE usage_daily (
  day           date   NOT NULL,
  account_id    uuid   NOT NULL,
  key_id        uuid   NOT NULL,
  model         text   NOT NULL,
  requests      bigint NOT NULL,
  input_tokens  bigint NOT NULL,
  output_tokens bigint NOT NULL,
  images        bigint NOT NULL,
  video_seconds bigint NOT NULL,
  cost          bigint NOT NULL,
  PRIMARY KEY (account_id, day, key_id, model)
);
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
