-- A session's shared state (issue 20): the JSON document its clients show and set and its runs'
-- tools change (the `state_snapshot` / `state_delta` events), as JSON text. A run's changes are
-- written in the group commit of the events that made them, a client's `PUT` or `PATCH` on its
-- own. NULL: none. The version counts the writes, so that a client's read-modify-write (a
-- `PATCH`) cannot lose a change made between its read and its write.
ALTER TABLE sessions ADD COLUMN shared_state TEXT;
ALTER TABLE sessions ADD COLUMN shared_state_version BIGINT NOT NULL DEFAULT 0;
