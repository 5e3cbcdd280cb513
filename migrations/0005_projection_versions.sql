-- The version of each projection the rows were last built by. At start, a projection whose code version is higher
-- (or that has no row while events exist) is rebuilt in place from the events once, and its row moved up in the same
-- transaction as the rebuild.
CREATE TABLE projection_versions (
  name       text        PRIMARY KEY,
  version    integer     NOT NULL,
  rebuilt_at timestamptz NOT NULL
);
