-- A session is named by its owner and its id together: a client chooses its session ids, so
-- two keys may choose the same one, and neither may see or block the other's. Everything that
-- names a session (its messages, runs, inbox) names its owner too, in the foreign key, so a
-- deleted session takes all of it along. The owner is `''` without auth rather than NULL: a
-- key column cannot be NULL, and a NULL in a foreign key would switch the key off.
--
-- SQLite cannot change a primary or foreign key in place, so the tables are built anew and
-- filled from the old ones, the same way on both databases. The old tables are dropped
-- children first, so dropping one cascades to nothing; the new ones then take the old names
-- (renaming a table updates the foreign keys that name it).

CREATE TABLE sessions_new (
    owner                TEXT NOT NULL,
    id                   TEXT NOT NULL,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    schema_state         TEXT,
    shared_state         TEXT,
    shared_state_version BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, id)
);
INSERT INTO sessions_new (owner, id, created_at, updated_at, schema_state, shared_state,
                          shared_state_version)
SELECT COALESCE(owner, ''), id, created_at, updated_at, schema_state, shared_state,
       shared_state_version
FROM sessions;

CREATE TABLE messages_new (
    owner       TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    position    BIGINT NOT NULL,
    message_id  TEXT,
    message     TEXT NOT NULL,
    input_of    TEXT,
    PRIMARY KEY (owner, session_id, position),
    FOREIGN KEY (owner, session_id) REFERENCES sessions_new (owner, id)
        ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO messages_new (owner, session_id, position, message_id, message, input_of)
SELECT s.owner, m.session_id, m.position, m.message_id, m.message, m.input_of
FROM messages m JOIN sessions_new s ON s.id = m.session_id;

-- A run's owner is its session's (the foreign key says so); a run without a session has one too.
CREATE TABLE runs_new (
    id           TEXT PRIMARY KEY,
    session_id   TEXT,
    owner        TEXT NOT NULL,
    agent        TEXT NOT NULL,
    node         TEXT NOT NULL,
    status       TEXT NOT NULL,
    awaiting     TEXT,
    state        TEXT,
    usage        TEXT,
    error        TEXT,
    status_seq   BIGINT NOT NULL,
    last_seq     BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    compacted    BIGINT NOT NULL DEFAULT 0,
    seq_reserved BIGINT NOT NULL DEFAULT 0,
    checkpoint   TEXT,
    FOREIGN KEY (owner, session_id) REFERENCES sessions_new (owner, id)
        ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO runs_new (id, session_id, owner, agent, node, status, awaiting, state, usage, error,
                      status_seq, last_seq, created_at, updated_at, compacted, seq_reserved,
                      checkpoint)
SELECT r.id, r.session_id, COALESCE(s.owner, r.owner, ''), r.agent, r.node, r.status,
       r.awaiting, r.state, r.usage, r.error, r.status_seq, r.last_seq, r.created_at,
       r.updated_at, r.compacted, r.seq_reserved, r.checkpoint
FROM runs r LEFT JOIN sessions_new s ON s.id = r.session_id;

CREATE TABLE event_batches_new (
    run_id     TEXT NOT NULL REFERENCES runs_new (id) ON DELETE CASCADE,
    last_seq   BIGINT NOT NULL,
    first_seq  BIGINT NOT NULL,
    events     TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
INSERT INTO event_batches_new (run_id, last_seq, first_seq, events)
SELECT run_id, last_seq, first_seq, events FROM event_batches;

CREATE TABLE inputs_new (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs_new (id) ON DELETE CASCADE,
    message     TEXT NOT NULL,
    answer      TEXT,
    created_at  BIGINT NOT NULL
);
INSERT INTO inputs_new (id, run_id, message, answer, created_at)
SELECT id, run_id, message, answer, created_at FROM inputs;

CREATE TABLE session_inputs_new (
    owner             TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    client_message_id TEXT NOT NULL,
    position          BIGINT NOT NULL,
    agent             TEXT NOT NULL,
    mode              TEXT NOT NULL,
    message           TEXT NOT NULL,
    outcome           TEXT NOT NULL,
    run_id            TEXT,
    step              BIGINT,
    reason            TEXT,
    rollback_of       TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    PRIMARY KEY (owner, session_id, client_message_id),
    FOREIGN KEY (owner, session_id) REFERENCES sessions_new (owner, id)
        ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO session_inputs_new (owner, session_id, client_message_id, position, agent, mode,
                                message, outcome, run_id, step, reason, rollback_of, created_at,
                                updated_at)
SELECT s.owner, i.session_id, i.client_message_id, i.position, i.agent, i.mode, i.message,
       i.outcome, i.run_id, i.step, i.reason, i.rollback_of, i.created_at, i.updated_at
FROM session_inputs i JOIN sessions_new s ON s.id = i.session_id;

DROP TABLE session_inputs;
DROP TABLE inputs;
DROP TABLE event_batches;
DROP TABLE messages;
DROP TABLE runs;
DROP TABLE sessions;

ALTER TABLE sessions_new RENAME TO sessions;
ALTER TABLE messages_new RENAME TO messages;
ALTER TABLE runs_new RENAME TO runs;
ALTER TABLE event_batches_new RENAME TO event_batches;
ALTER TABLE inputs_new RENAME TO inputs;
ALTER TABLE session_inputs_new RENAME TO session_inputs;

CREATE INDEX sessions_by_owner_updated ON sessions (owner, updated_at, id);
CREATE INDEX sessions_by_updated ON sessions (updated_at);
CREATE INDEX runs_by_session ON runs (owner, session_id);
CREATE INDEX runs_by_node_status ON runs (node, status);
CREATE INDEX runs_to_compact ON runs (updated_at) WHERE compacted = 0;
CREATE INDEX runs_without_session ON runs (updated_at) WHERE session_id IS NULL;
CREATE UNIQUE INDEX session_inputs_in_order ON session_inputs (owner, session_id, position);
CREATE INDEX session_inputs_by_outcome ON session_inputs (outcome, updated_at);
