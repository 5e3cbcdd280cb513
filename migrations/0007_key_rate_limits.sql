-- Per-key rate limits, set when the key is created (KeyCreated.rateLimits): requests per minute, tokens per minute
-- and requests in flight. NULL = the operator's default (and no limit when that is unset too).
ALTER TABLE api_keys ADD COLUMN rpm integer, ADD COLUMN tpm integer, ADD COLUMN concurrency integer;
