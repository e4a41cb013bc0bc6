-- Webhooks: URLs told of runs' status changes (`webhook.rs`), and the queue of deliveries to
-- them. A delivery row is written in the transaction that stores the status change it reports
-- (the group commit), so a crash cannot lose one; it is retried until the receiver takes it.
CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    -- The key that created it: it hears of that key's runs (all of them, or `run_id`'s).
    owner       TEXT,
    -- One run's webhook (no foreign key: it is written before the run it waits for).
    run_id      TEXT,
    url         TEXT NOT NULL,
    -- The signing secret, `whsec_<base64>`.
    secret      TEXT NOT NULL,
    -- The statuses it hears of, one bit each (see `webhook::status_bit`).
    events      BIGINT NOT NULL,
    -- `standard` (Standard Webhooks) or `a2a` (an A2A push-notification config).
    format      TEXT NOT NULL,
    -- A2A: the config's own id and the token sent back in `X-A2A-Notification-Token`.
    config_id   TEXT,
    token       TEXT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX webhooks_by_owner ON webhooks (owner) WHERE run_id IS NULL;
CREATE INDEX webhooks_by_run ON webhooks (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE webhook_deliveries (
    -- `{webhook}:{run}:{seq}`: one per webhook and status change, so a retried commit adds none.
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL,
    -- The seq of the run's `run_status` event it reports.
    seq             BIGINT NOT NULL,
    status          TEXT NOT NULL,
    awaiting        TEXT,
    session_id      TEXT,
    agent           TEXT NOT NULL,
    -- When the status change was committed (milliseconds since the epoch).
    created_at      BIGINT NOT NULL,
    -- When it is next tried; while a node sends it, when that node's claim lapses.
    next_attempt_at BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    -- NULL until it is delivered or given up; then `outcome` says which.
    done_at         BIGINT,
    outcome         TEXT,
    last_error      TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE done_at IS NULL;
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (done_at) WHERE done_at IS NOT NULL;
