-- Prompt-cache tokens in the usage report: of each group's input, what was read from and written to a vendor's cache
-- (`input_tokens` is the rest, as in the chat IR). Derived from the usage object every UsageRecalculated event records,
-- so the projection's version moves and its rows are rebuilt from the events at the next start (older events carry
-- the split too).
ALTER TABLE usage_daily ADD COLUMN cache_read_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0;
