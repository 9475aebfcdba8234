-- Schema version 14: each tool's definition fingerprint (SHA-256 of the canonical JSON of its
-- name, description, schemas and annotations), the fingerprint a person last accepted, the
-- change a person must accept before the tool runs without asking, and the changes seen between
-- two listings of a connection's tools (issue #39: a tool changed upstream went unnoticed).
ALTER TABLE tool ADD COLUMN fingerprint TEXT;
ALTER TABLE tool ADD COLUMN approved_fingerprint TEXT;
ALTER TABLE tool ADD COLUMN pending_change TEXT;

CREATE TABLE tool_change (
    id                  TEXT    PRIMARY KEY NOT NULL,
    tenant              TEXT    COLLATE "C" NOT NULL,
    integration         TEXT    COLLATE "C" NOT NULL,
    owner               TEXT    NOT NULL CHECK (owner IN ('org', 'user')),
    subject             TEXT    COLLATE "C" NOT NULL,
    connection          TEXT    COLLATE "C" NOT NULL,
    tool                TEXT    COLLATE "C" NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('added', 'removed', 'changed')),
    -- JSON array of the changed fields (`description`, `inputSchema`, `outputSchema`, `annotations`).
    fields              TEXT    NOT NULL,
    -- The definitions before and after (JSON): no `before` for an added tool, no `after` for a removed one.
    before_definition   TEXT,
    after_definition    TEXT,
    before_fingerprint  TEXT,
    after_fingerprint   TEXT,
    escalated           BIGINT NOT NULL DEFAULT 0,
    requires_acceptance BIGINT NOT NULL DEFAULT 0,
    detected_at         BIGINT NOT NULL,
    accepted_at         BIGINT,
    accepted_by         TEXT
);

CREATE INDEX tool_change_by_time ON tool_change (tenant, detected_at);
