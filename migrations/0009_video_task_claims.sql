-- Which upstream (its name under `upstreams:`) took a task, recorded with its dispatch: a worker claims a dispatched
-- task only when its own catalog has the task's model on that upstream, so instances with different catalogs on one
-- database leave each other's tasks alone. NULL for a task not dispatched yet, or dispatched before this was recorded
-- (such a task is claimed by its model alone).
ALTER TABLE video_tasks ADD COLUMN upstream_name text;

-- Consecutive polls the upstream answered 404 for the task: a vendor may not see a task it just created for a while,
-- so a 404 fails the task only after a few in a row (VideoTasks.ts); any answer about the task resets it.
ALTER TABLE video_task_leases ADD COLUMN missing_polls integer NOT NULL DEFAULT 0;
