-- How a client authenticates at the token endpoint (RFC 8414 `token_endpoint_auth_methods_supported`,
-- RFC 7591 `token_endpoint_auth_method`): `client_secret_basic`, `client_secret_post` or `none`.
-- NULL: not known (rows from older builds, servers without metadata); chosen at request time.
ALTER TABLE oauth_client ADD COLUMN token_endpoint_auth_method TEXT;
