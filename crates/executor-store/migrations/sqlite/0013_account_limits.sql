-- Schema version 13: limits of the team server's public doors, kept in the database so that
-- replicas on one PostgreSQL share them (issue #39). Each admitted attempt (a sign-in, a
-- client registration, a device-code guess) holds one row per limit it counts against,
-- reserved before the work it guards; `limit_key` is the SHA-256 (hex) of the limit's name, so a
-- huge email or address cannot grow a row.
CREATE TABLE account_attempt (
    attempt_id TEXT    NOT NULL,
    limit_key  TEXT    NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX account_attempt_key ON account_attempt (limit_key, at);
CREATE INDEX account_attempt_id ON account_attempt (attempt_id);
CREATE INDEX account_attempt_at ON account_attempt (at);

-- API keys carry a scope: `agent` (MCP, executions, the tool API) or `workspace` (the whole
-- workspace API the member's role allows). Keys made before scopes keep working for agents.
UPDATE account_token SET scope = 'agent' WHERE kind = 'api_key' AND scope IS NULL;

CREATE INDEX account_token_client ON account_token (client_id);
CREATE INDEX account_grant_client ON account_grant (client_id, status);
