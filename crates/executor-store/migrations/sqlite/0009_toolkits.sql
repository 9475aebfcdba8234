-- Toolkits (spec §1.9): named allow-lists of tools, each its own MCP endpoint. Owned like
-- connections; a toolkit's policies and connection patterns live under its tenant and go with it.
CREATE TABLE toolkit (
    row_id     INTEGER PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    owner      TEXT    NOT NULL CHECK (owner IN ('org', 'user')),
    subject    TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    slug       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (tenant, id),
    UNIQUE (tenant, owner, subject, slug)
);

-- One table for both kinds of a toolkit's entries: `policy` rows carry an action, `connection`
-- rows (the allow-list) do not.
CREATE TABLE toolkit_entry (
    row_id     INTEGER PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    toolkit_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('policy', 'connection')),
    id         TEXT    NOT NULL,
    pattern    TEXT    NOT NULL,
    action     TEXT,
    position   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (tenant, id),
    CHECK ((kind = 'policy') = (action IS NOT NULL))
);
CREATE INDEX toolkit_entry_by_toolkit ON toolkit_entry (tenant, toolkit_id, kind, position);
