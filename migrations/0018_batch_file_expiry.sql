-- Batch files expire (`files.retentionDays` in the operator config, or the upload's own `expires_after`): the time is
-- fixed when the file is written and shown as the file object's `expires_at`. The batch worker deletes expired files
-- (at most hourly), except the input file of a batch still running. Files written before this migration have none and
-- are kept until deleted, as before; so is a message batch's own requests file, which goes with its batch.
ALTER TABLE batch_files ADD COLUMN expires_at timestamptz;
CREATE INDEX batch_files_expiry ON batch_files (expires_at) WHERE expires_at IS NOT NULL;
