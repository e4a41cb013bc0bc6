-- The store's tables. The same SQL runs on SQLite and PostgreSQL (TEXT, BIGINT and foreign keys
-- with ON DELETE CASCADE mean the same on both). Messages and events are kept as the JSON the
-- wire carries, so a replay sends them without building them again; nothing queries inside it.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    owner       TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE messages (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    message_id  TEXT,
    message     TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    session_id  TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    owner       TEXT,
    agent       TEXT NOT NULL,
    node        TEXT NOT NULL,
    status      TEXT NOT NULL,
    awaiting    TEXT,
    state       TEXT,
    usage       TEXT,
    error       TEXT,
    -- The seq of the run_status event the status columns come from: an older one never
    -- overwrites them (a retried batch).
    status_seq  BIGINT NOT NULL,
    last_seq    BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE INDEX runs_by_session ON runs (session_id);
CREATE INDEX runs_by_node_status ON runs (node, status);

CREATE TABLE events (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    event   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
