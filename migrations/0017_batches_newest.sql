-- Every account's batches newest first, for the operator (`GET /admin/batches`, `tollgate batches list`): without it
-- a page of the whole table is a scan and a sort of every batch ever kept. One account's page keeps `batches_account`.
CREATE INDEX batches_newest ON batches (created_at DESC, id DESC);
