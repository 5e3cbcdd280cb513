-- Tamper evidence. Each event's hash is SHA-256 over the previous event's hash in its stream and the event's own
-- canonical content (src/adapters/store/EventHash.ts), so editing, inserting or deleting an event breaks the chain
-- from that point; `streams.head_hash` is the hash of the stream's last event, so a deleted tail shows too. Events
-- written before this migration are sealed once at start (their chain starts from that moment).
ALTER TABLE events ADD COLUMN hash bytea;
ALTER TABLE streams ADD COLUMN head_hash bytea;

-- Checkpoints of the global chain: SHA-256 over every event hash in commit order (transaction id, global position),
-- recorded periodically and by each verification. An auditor may copy `chain_hash` elsewhere; a later verification
-- recomputes the chain through every checkpoint.
CREATE TABLE audit_checkpoints (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  bigint      NOT NULL,
  global_position bigint      NOT NULL,
  events          bigint      NOT NULL,
  chain_hash      bytea       NOT NULL,
  recorded_at     timestamptz NOT NULL
);
