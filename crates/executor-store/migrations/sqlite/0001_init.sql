-- Executor store, schema version 1.
-- Timestamps are epoch milliseconds. JSON columns hold serialized JSON text.
-- Owned tables carry (tenant, owner, subject): `org` rows have subject '' and are visible to the
-- whole tenant; `user` rows carry the subject and are visible only to it.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

CREATE TABLE integration (
    row_id            INTEGER PRIMARY KEY,
    tenant            TEXT    NOT NULL,
    slug              TEXT    NOT NULL,
    plugin_id         TEXT    NOT NULL,
    name              TEXT,
    description       TEXT,
    config            TEXT    NOT NULL DEFAULT '{}',
    health_check      TEXT,
    config_revised_at INTEGER,
    can_remove        INTEGER NOT NULL DEFAULT 1,
    can_refresh       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (tenant, slug)
);

CREATE TABLE connection (
    row_id             INTEGER PRIMARY KEY,
    tenant             TEXT    NOT NULL,
    owner              TEXT    NOT NULL CHECK (owner IN ('org', 'user')),
    subject            TEXT    NOT NULL,
    integration        TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    template           TEXT    NOT NULL,
    provider           TEXT    NOT NULL,
    item_ids           TEXT    NOT NULL DEFAULT '{}',
    identity_label     TEXT,
    description        TEXT,
    last_health        TEXT,
    tools_synced_at    INTEGER,
    oauth_client       TEXT,
    oauth_client_owner TEXT,
    refresh_item_id    TEXT,
    expires_at         INTEGER,
    oauth_scope        TEXT,
    oauth_token_url    TEXT,
    provider_state     TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    CHECK ((owner = 'org' AND subject = '') OR (owner = 'user' AND subject <> '')),
    UNIQUE (tenant, integration, owner, subject, name)
);

-- The summary columns come first and the (possibly large) schemas last, so that the list query,
-- which never selects the schemas, does not have to walk their overflow pages.
CREATE TABLE tool (
    row_id        INTEGER PRIMARY KEY,
    tenant        TEXT NOT NULL,
    integration   TEXT NOT NULL,
    owner         TEXT NOT NULL CHECK (owner IN ('org', 'user')),
    subject       TEXT NOT NULL,
    connection    TEXT NOT NULL,
    name          TEXT NOT NULL,
    plugin_id     TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    annotations   TEXT,
    input_schema  TEXT,
    output_schema TEXT,
    UNIQUE (tenant, integration, owner, subject, connection, name)
);

CREATE TABLE definition (
    row_id      INTEGER PRIMARY KEY,
    tenant      TEXT NOT NULL,
    integration TEXT NOT NULL,
    owner       TEXT NOT NULL CHECK (owner IN ('org', 'user')),
    subject     TEXT NOT NULL,
    connection  TEXT NOT NULL,
    name        TEXT NOT NULL,
    schema      TEXT NOT NULL,
    UNIQUE (tenant, integration, owner, subject, connection, name)
);

-- Provisional plaintext secret table; replaced by the encrypted vault later.
CREATE TABLE secret (
    tenant     TEXT    NOT NULL,
    item_id    TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, item_id)
) WITHOUT ROWID;
