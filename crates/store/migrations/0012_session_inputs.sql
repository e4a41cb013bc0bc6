-- A session's inbox: the messages a client sent into the session while it was busy, in the
-- order they came, and what became of each. A queued message waits here for the session's run
-- to end; the node that starts its run claims the row first (`starting`), so a message starts
-- one run at most, whichever node sees the session free. A steer is given to the run going on
-- (`steering`) and settles as that run reports it. Named by the client, so a retry is harmless.
CREATE TABLE session_inputs (
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    client_message_id TEXT NOT NULL,
    position          BIGINT NOT NULL,
    agent             TEXT NOT NULL,
    mode              TEXT NOT NULL,
    message           TEXT NOT NULL,
    -- queued | starting | steering | delivered | not_delivered
    outcome           TEXT NOT NULL,
    run_id            TEXT,
    step              BIGINT,
    reason            TEXT,
    -- For a rollback: the run whose messages leave the history before this message runs.
    rollback_of       TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    PRIMARY KEY (session_id, client_message_id)
);
CREATE UNIQUE INDEX session_inputs_in_order ON session_inputs (session_id, position);
CREATE INDEX session_inputs_by_outcome ON session_inputs (outcome, updated_at);
