-- Input for a run that another node executes (PostgreSQL): the node that received it writes it
-- here and notifies; the run's node gives it to the run and writes the run's answer back.
CREATE TABLE inputs (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    message     TEXT NOT NULL,
    -- NULL until the run's node answers: `{}` when the run took it, else `{"code", "message"}`.
    answer      TEXT,
    created_at  BIGINT NOT NULL
);
