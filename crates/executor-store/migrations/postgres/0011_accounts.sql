-- Schema version 11 (as migrations/sqlite/0011): the team server's accounts (issue #24). One organisation per instance, so
-- a user row is also its membership (`role`). Every token a request can carry (sessions, API
-- keys, OAuth access and refresh tokens) is one `account_token` row holding only its SHA-256.
CREATE TABLE account_user (
    id            TEXT COLLATE "C" PRIMARY KEY,
    tenant        TEXT    NOT NULL,
    -- Lower-cased; compared as stored.
    email         TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    -- argon2id PHC string.
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    -- 1 on the organisation's first account only: the unique index below lets exactly one
    -- sign-up without an invite win, however many race.
    first         BIGINT  NOT NULL DEFAULT 0,
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL,
    UNIQUE (tenant, email)
);
CREATE UNIQUE INDEX account_user_first ON account_user (tenant) WHERE first = 1;

CREATE TABLE account_token (
    id           TEXT COLLATE "C" PRIMARY KEY,
    token_hash   TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL CHECK (kind IN ('session', 'api_key', 'oauth_access', 'oauth_refresh')),
    tenant       TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    -- An API key's name, a session's client ("browser", "executor-cli").
    name         TEXT,
    -- The first characters of an API key, as listed.
    hint         TEXT,
    -- The OAuth client the token was issued to, the resource it is bound to (RFC 8707), its
    -- scope, and the grant its access and refresh tokens share (revoked together).
    client_id    TEXT,
    resource     TEXT,
    scope        TEXT,
    grant_id     TEXT,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    last_used_at BIGINT,
    expires_at   BIGINT,
    -- A refresh token is used once: set when it is exchanged.
    used_at      BIGINT
);
CREATE INDEX account_token_user ON account_token (user_id, kind);
CREATE INDEX account_token_grant ON account_token (grant_id);

CREATE TABLE account_invite (
    id            TEXT COLLATE "C" PRIMARY KEY,
    tenant        TEXT    NOT NULL,
    code          TEXT    NOT NULL UNIQUE,
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'member')),
    label         TEXT,
    created_by    TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    expires_at    BIGINT  NOT NULL,
    used_by       TEXT,
    used_by_email TEXT,
    used_at       BIGINT
);

-- Short-lived grants in progress: an MCP client's authorization request (then its code), a
-- CLI's device authorization.
CREATE TABLE account_grant (
    id         TEXT COLLATE "C" PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('authorization', 'device')),
    tenant     TEXT    NOT NULL,
    -- SHA-256 of the authorization code once issued, or of the device code.
    code_hash  TEXT    UNIQUE,
    user_code  TEXT    UNIQUE,
    client_id  TEXT    NOT NULL,
    user_id    TEXT,
    status     TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
    -- JSON: redirect URI, state, PKCE challenge, resource, scope.
    data       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    polled_at  BIGINT
);

-- MCP clients registered dynamically (RFC 7591): public clients, no secret.
CREATE TABLE account_client (
    client_id     TEXT COLLATE "C" PRIMARY KEY,
    tenant        TEXT    NOT NULL,
    client_name   TEXT    NOT NULL,
    -- JSON array of the exact redirect URIs allowed.
    redirect_uris TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL
);

-- Append-only: who changed what in the workspace, and every tool call of a signed-in user.
CREATE TABLE audit_event (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    at          BIGINT  NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('change', 'tool_call')),
    actor_id    TEXT,
    actor_email TEXT,
    via         TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target      TEXT,
    before      TEXT,
    after       TEXT,
    outcome     TEXT    NOT NULL,
    detail      TEXT
);
CREATE INDEX audit_event_tenant ON audit_event (tenant, id);
CREATE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_event is append-only';
END $$;
CREATE TRIGGER audit_event_no_change BEFORE UPDATE OR DELETE ON audit_event
    FOR EACH ROW EXECUTE FUNCTION audit_event_append_only();
