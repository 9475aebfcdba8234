-- OAuth clients (owner-scoped) and in-flight authorization-code sessions (spec §1.7).
-- Client secrets and tokens live in `secret` (sealed); these rows hold only their item ids.
CREATE TABLE oauth_client (
    row_id                INTEGER PRIMARY KEY,
    tenant                TEXT    NOT NULL,
    owner                 TEXT    NOT NULL CHECK (owner IN ('org', 'user')),
    subject               TEXT    NOT NULL,
    slug                  TEXT    NOT NULL,
    authorization_url     TEXT    NOT NULL,
    token_url             TEXT    NOT NULL,
    grant_type            TEXT    NOT NULL,
    client_id             TEXT    NOT NULL,
    client_secret_item_id TEXT,
    resource              TEXT,
    origin_kind           TEXT    NOT NULL DEFAULT 'manual',
    origin_integration    TEXT,
    origin_issuer         TEXT,
    origin_redirect_uri   TEXT,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    UNIQUE (tenant, owner, subject, slug)
);

CREATE TABLE oauth_session (
    state          TEXT    NOT NULL,
    tenant         TEXT    NOT NULL,
    owner          TEXT    NOT NULL CHECK (owner IN ('org', 'user')),
    subject        TEXT    NOT NULL,
    client_slug    TEXT    NOT NULL,
    client_owner   TEXT    NOT NULL,
    integration    TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    template       TEXT    NOT NULL,
    redirect_url   TEXT    NOT NULL,
    pkce_verifier  TEXT    NOT NULL,
    identity_label TEXT,
    payload        TEXT    NOT NULL DEFAULT '{}',
    expires_at     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant, state)
) WITHOUT ROWID;
