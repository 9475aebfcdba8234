-- Schema version 10: agent MCP sessions, so one opened on a replica is served by another (its
-- `initialize` is replayed there). Written only when replicas share the database.
CREATE TABLE mcp_session (
    id         TEXT    PRIMARY KEY NOT NULL,
    -- SHA-256 of the bearer token that opened it: only that token may use it elsewhere.
    token_hash TEXT    NOT NULL,
    -- The endpoint it was opened on (`/mcp` or a toolkit's).
    resource   TEXT    NOT NULL,
    -- The client's `initialize` parameters (JSON).
    initialize TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
