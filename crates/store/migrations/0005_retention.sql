-- Retention (`Store::compact_runs`, `Store::delete_before`). `compacted` is 1 once compaction
-- has looked at an ended run: its log is then one `event_batches` row holding the compact form
-- (a JSON object where batches are arrays), or, if it could not be folded exactly, left as it
-- was. Each index serves one retention query and holds only the rows that query looks for.
ALTER TABLE runs ADD COLUMN compacted BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_to_compact ON runs (updated_at) WHERE compacted = 0;
CREATE INDEX runs_without_session ON runs (updated_at) WHERE session_id IS NULL;
CREATE INDEX sessions_by_updated ON sessions (updated_at);
