-- Node leases (PostgreSQL, many nodes): a node holds its runs while its lease has not lapsed;
-- once it has, any other node ends them. `lease_until` is milliseconds since the epoch.
CREATE TABLE nodes (
    id          TEXT PRIMARY KEY,
    lease_until BIGINT NOT NULL
);
