-- Tool policies (approve / require_approval / block), owned like connections.
CREATE TABLE tool_policy (
    row_id     INTEGER PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    owner      TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    pattern    TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    position   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (tenant, id)
);
CREATE INDEX tool_policy_by_owner ON tool_policy (tenant, owner, subject, position);
