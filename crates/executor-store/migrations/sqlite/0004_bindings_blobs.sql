-- How a tool is called (plugin-private JSON: an OpenAPI operation, a GraphQL field), stored next
-- to the schemas so a call needs one read.
ALTER TABLE tool ADD COLUMN binding TEXT;

-- Content-addressed documents (OpenAPI spec texts, GraphQL schema snapshots), keyed by the
-- sha256 of their bytes within a tenant.
CREATE TABLE blob (
    tenant     TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    value      BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, hash)
) WITHOUT ROWID;
