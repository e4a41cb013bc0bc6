-- The event log as batches: one row per run and group commit, holding its events as a JSON
-- array, instead of one row per event. Under load a row per streamed token was most of the
-- database's work; a batch costs one row however many deltas it carries. Keyed by its last
-- seq, so a replay from any point starts at the right row through the key.
CREATE TABLE event_batches (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    last_seq   BIGINT NOT NULL,
    first_seq  BIGINT NOT NULL,
    events     TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);

INSERT INTO event_batches (run_id, last_seq, first_seq, events)
SELECT run_id, seq, seq, '[' || event || ']' FROM events;

DROP TABLE events;
