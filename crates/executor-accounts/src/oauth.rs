//! Executor as the OAuth 2.1 authorization server of its own `/mcp` (issue #24): dynamic
//! client registration (RFC 7591, public clients only), the authorization code flow with PKCE
//! S256 only, the `resource` bound into every token (RFC 8707), consent asked every time,
//! one-hour access tokens and refresh tokens that rotate (a used one presented again revokes
//! its whole grant), and revocation (RFC 7009).

use executor_core::now_ms;
use executor_store::{
    ClientRecord, GrantKind, GrantRecord, GrantStatus, StoreError, TokenKind, TokenRecord,
};
use serde_json::json;

use crate::{
    ACCESS_PREFIX, AccountError, AccountResult, Accounts, Identity, REFRESH_PREFIX, secrets,
};

const ACCESS_LIFETIME_SECS: i64 = 3600;
const REFRESH_LIFETIME_MS: i64 = 30 * 24 * 3600 * 1000;
/// How long a person has to consent, and a client to exchange its code.
const REQUEST_LIFETIME_MS: i64 = 10 * 60 * 1000;
/// Authorization requests waiting for their person, per client and in all (anyone may start
/// one; each is a row for its ten minutes).
const MAX_PENDING_PER_CLIENT: i64 = 20;
const MAX_PENDING: i64 = 1_000;
/// The one scope: using this person's Executor through MCP.
pub const SCOPE: &str = "mcp";

/// An RFC 6749 error answer: `{error, error_description}` with its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
    pub status: u16,
    /// Seconds for `Retry-After` (a limit's answer).
    pub retry_after_secs: Option<u64>,
}

impl OAuthError {
    fn new(error: &'static str, description: impl Into<String>) -> Self {
        let status = if error == "invalid_client" { 401 } else { 400 };
        OAuthError {
            error,
            description: description.into(),
            status,
            retry_after_secs: None,
        }
    }

    fn server_error() -> Self {
        OAuthError {
            error: "server_error",
            description: "The server could not complete the request.".to_owned(),
            status: 500,
            retry_after_secs: None,
        }
    }
}

impl From<StoreError> for OAuthError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "OAuth store failure");
        OAuthError::server_error()
    }
}

#[derive(Debug, Clone)]
pub struct RegisteredClient {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub issued_at: i64,
}

/// The query of `GET /api/auth/mcp/authorize`.
#[derive(Debug, Clone, Default)]
pub struct AuthorizeRequest {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub state: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

/// Where an authorization request goes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeRedirect {
    /// The console's consent page (a path on the base URL).
    Consent(String),
    /// Back to the client with an error (`…?error=…&state=…`).
    Client(String),
    /// No trustworthy redirect URI: shown to the person as a page, never redirected.
    Page(String),
}

/// What the consent page shows.
#[derive(Debug, Clone)]
pub struct ConsentView {
    pub client_name: String,
    pub client_id: String,
    pub redirect_origin: String,
    pub resource: String,
    pub scopes: Vec<(String, String)>,
}

/// The form of `POST /api/auth/mcp/token`.
#[derive(Debug, Clone, Default)]
pub struct TokenGrant {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub code_verifier: Option<String>,
    pub redirect_uri: Option<String>,
    pub client_id: Option<String>,
    pub refresh_token: Option<String>,
    pub resource: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TokenResponse {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    pub scope: String,
}

/// What `scope` asks, in plain words.
fn describe(scope: &str) -> String {
    match scope {
        SCOPE => "Use your Executor integrations and tools through MCP, as you, under your \
                  workspace's policies (calls that need approval still ask you)."
            .to_owned(),
        other => other.to_owned(),
    }
}

/// A redirect URI a client may register: https anywhere, http on loopback only, or a
/// private-use scheme of a native app (RFC 8252); never one that runs code.
fn acceptable_redirect(raw: &str) -> bool {
    let Ok(url) = url::Url::parse(raw) else {
        return false;
    };
    if url.fragment().is_some() {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => url.host().is_some_and(|h| match h {
            url::Host::Domain(d) => d == "localhost",
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        }),
        "javascript" | "data" | "file" | "vbscript" | "blob" | "ftp" | "ws" | "wss" => false,
        scheme => scheme.contains('.') || scheme.len() >= 3,
    }
}

/// Whether a redirect URI presented matches one registered: the same string, or (RFC 8252
/// §7.3) the same loopback URI on another port: a native app listens on whatever port the
/// system gives it, so `http://127.0.0.1/cb` or `http://localhost:1234/cb` registered matches
/// the same on any port (scheme, host, path and query still exact).
fn redirect_matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let (Ok(mut r), Ok(mut p)) = (url::Url::parse(registered), url::Url::parse(presented)) else {
        return false;
    };
    let loopback = |u: &url::Url| {
        u.scheme() == "http"
            && u.host().is_some_and(|h| match h {
                url::Host::Domain(d) => d == "localhost",
                url::Host::Ipv4(ip) => ip.is_loopback(),
                url::Host::Ipv6(ip) => ip.is_loopback(),
            })
    };
    if !loopback(&r) || !loopback(&p) || p.fragment().is_some() {
        return false;
    }
    if r.set_port(None).is_err() || p.set_port(None).is_err() {
        return false;
    }
    r == p
}

fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    match url::Url::parse(uri) {
        Ok(mut url) => {
            {
                let mut q = url.query_pairs_mut();
                for (k, v) in pairs {
                    q.append_pair(k, v);
                }
            }
            url.to_string()
        }
        Err(_) => uri.to_owned(),
    }
}

/// A token request may name the resource again (RFC 8707), but not another one.
fn same_resource(form: &TokenGrant, consented: &str) -> Result<(), OAuthError> {
    match form.resource.as_deref() {
        Some(r) if !r.is_empty() && r != consented => Err(OAuthError::new(
            "invalid_target",
            "The resource differs from the one consented to.",
        )),
        _ => Ok(()),
    }
}

impl Accounts {
    /// `/mcp` and each toolkit endpoint are resources of this server.
    pub fn known_resource(&self, resource: &str) -> bool {
        let base = format!("{}/mcp", self.base_url());
        resource == base
            || resource
                .strip_prefix(&format!("{base}/toolkits/"))
                .is_some_and(|slug| {
                    !slug.is_empty()
                        && slug
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                })
    }

    /// RFC 7591 registration from `address`: at most `REGISTRATIONS_PER_ADDRESS` a window
    /// (anyone may register; a client that never gets a token is purged after a day).
    pub async fn register_client(
        &self,
        client_name: Option<&str>,
        redirect_uris: &[String],
        address: Option<&str>,
    ) -> Result<RegisteredClient, OAuthError> {
        if redirect_uris.is_empty() || redirect_uris.len() > 10 {
            return Err(OAuthError::new(
                "invalid_redirect_uri",
                "Register 1 to 10 redirect URIs.",
            ));
        }
        if let Some(bad) = redirect_uris
            .iter()
            .find(|u| u.len() > 2000 || !acceptable_redirect(u))
        {
            return Err(OAuthError::new(
                "invalid_redirect_uri",
                format!(
                    "{bad:?} is not an acceptable redirect URI (https, http on loopback, or an app's own scheme)."
                ),
            ));
        }
        let name = client_name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("MCP client");
        if name.chars().count() > 200 {
            return Err(OAuthError::new(
                "invalid_client_metadata",
                "client_name is at most 200 characters.",
            ));
        }
        match self
            .reserve(&[(
                format!("register:address:{}", crate::limiter::source(address)),
                crate::limiter::REGISTRATIONS_PER_ADDRESS,
            )])
            .await
        {
            Ok(_) => {}
            Err(AccountError::TooManyAttempts { retry_after_secs }) => {
                return Err(OAuthError {
                    error: "too_many_requests",
                    description: format!(
                        "Too many registrations from this address. Try again in {retry_after_secs} s."
                    ),
                    status: 429,
                    retry_after_secs: Some(retry_after_secs),
                });
            }
            Err(e) => {
                tracing::error!(error = %e, "registration limit failed");
                return Err(OAuthError::server_error());
            }
        }
        let record = ClientRecord {
            client_id: secrets::new_id("mcpc"),
            tenant: self.tenant().to_owned(),
            client_name: name.to_owned(),
            redirect_uris: redirect_uris.to_vec(),
            created_at: now_ms(),
        };
        self.store().insert_client(&record).await?;
        Ok(RegisteredClient {
            client_id: record.client_id,
            client_name: record.client_name,
            redirect_uris: record.redirect_uris,
            issued_at: record.created_at / 1000,
        })
    }

    pub async fn authorize(&self, req: &AuthorizeRequest) -> AccountResult<AuthorizeRedirect> {
        let Some(client_id) = req.client_id.as_deref().filter(|c| !c.is_empty()) else {
            return Ok(AuthorizeRedirect::Page(
                "The request names no client_id.".to_owned(),
            ));
        };
        let Some(client) = self.store().get_client(client_id).await? else {
            return Ok(AuthorizeRedirect::Page(
                "This application is not registered with this Executor.".to_owned(),
            ));
        };
        let redirect = match req.redirect_uri.as_deref() {
            Some(uri)
                if client
                    .redirect_uris
                    .iter()
                    .any(|r| redirect_matches(r, uri)) =>
            {
                uri.to_owned()
            }
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            _ => {
                return Ok(AuthorizeRedirect::Page(
                    "The redirect URI does not match what this application registered.".to_owned(),
                ));
            }
        };
        let state = req.state.clone().unwrap_or_default();
        let back = |error: &str, description: &str| {
            let mut pairs = vec![("error", error), ("error_description", description)];
            if !state.is_empty() {
                pairs.push(("state", state.as_str()));
            }
            Ok(AuthorizeRedirect::Client(with_query(&redirect, &pairs)))
        };
        if req.response_type.as_deref() != Some("code") {
            return back(
                "unsupported_response_type",
                "Only response_type=code is supported.",
            );
        }
        let Some(challenge) = req
            .code_challenge
            .as_deref()
            .filter(|c| (43..=128).contains(&c.len()))
        else {
            return back(
                "invalid_request",
                "A PKCE code_challenge (S256) is required.",
            );
        };
        if req.code_challenge_method.as_deref() != Some("S256") {
            return back(
                "invalid_request",
                "Only code_challenge_method=S256 is supported.",
            );
        }
        let resource = match req.resource.as_deref() {
            None | Some("") => format!("{}/mcp", self.base_url()),
            Some(r) if self.known_resource(r) => r.to_owned(),
            Some(_) => {
                return back(
                    "invalid_target",
                    "The resource is not an MCP endpoint of this server.",
                );
            }
        };
        let scope = match req.scope.as_deref().map(str::trim) {
            None | Some("") => SCOPE.to_owned(),
            Some(s) if s.split_whitespace().all(|p| p == SCOPE) => SCOPE.to_owned(),
            Some(_) => return back("invalid_scope", "The only scope is \"mcp\"."),
        };
        let now = now_ms();
        let grant = GrantRecord {
            id: secrets::new_id("azr"),
            kind: GrantKind::Authorization,
            tenant: self.tenant().to_owned(),
            code_hash: None,
            user_code: None,
            client_id: client.client_id,
            user_id: None,
            status: GrantStatus::Pending,
            data: json!({
                "redirectUri": redirect,
                "state": state,
                "challenge": challenge,
                "resource": resource,
                "scope": scope,
            }),
            created_at: now,
            expires_at: now + REQUEST_LIFETIME_MS,
            polled_at: None,
        };
        if !self
            .store()
            .insert_grant(&grant, MAX_PENDING_PER_CLIENT, MAX_PENDING)
            .await?
        {
            return back(
                "temporarily_unavailable",
                "Too many authorization requests are waiting; try again in a few minutes.",
            );
        }
        Ok(AuthorizeRedirect::Consent(format!(
            "/oauth/consent?request={}",
            grant.id
        )))
    }

    async fn pending_request(&self, id: &str) -> AccountResult<(GrantRecord, ClientRecord)> {
        let grant = self
            .store()
            .get_grant(id)
            .await?
            .filter(|g| {
                g.kind == GrantKind::Authorization
                    && g.status == GrantStatus::Pending
                    && g.expires_at > now_ms()
                    && g.tenant == self.tenant()
            })
            .ok_or(AccountError::NotFound("authorization request"))?;
        let client = self
            .store()
            .get_client(&grant.client_id)
            .await?
            .ok_or(AccountError::NotFound("authorization request"))?;
        Ok((grant, client))
    }

    pub async fn consent_view(&self, id: &str) -> AccountResult<ConsentView> {
        let (grant, client) = self.pending_request(id).await?;
        let redirect = grant.data["redirectUri"].as_str().unwrap_or_default();
        let redirect_origin = url::Url::parse(redirect)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| redirect.to_owned());
        let scope = grant.data["scope"].as_str().unwrap_or(SCOPE);
        Ok(ConsentView {
            client_name: client.client_name,
            client_id: client.client_id,
            redirect_origin: if redirect_origin == "null" {
                redirect.to_owned()
            } else {
                redirect_origin
            },
            resource: grant.data["resource"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            scopes: scope
                .split_whitespace()
                .map(|s| (s.to_owned(), describe(s)))
                .collect(),
        })
    }

    /// The person's answer: where the browser goes next (the client's redirect URI with a
    /// code, or with `error=access_denied`).
    pub async fn answer_consent(
        &self,
        by: &Identity,
        id: &str,
        approve: bool,
    ) -> AccountResult<String> {
        crate::require_session(by)?;
        let (grant, client) = self.pending_request(id).await?;
        let redirect = grant.data["redirectUri"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let state = grant.data["state"].as_str().unwrap_or_default().to_owned();
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let code;
        if approve {
            let (minted, hash) = secrets::mint("exc_");
            code = minted;
            if !self
                .store()
                .answer_grant(id, GrantStatus::Approved, &by.user.id, Some(&hash))
                .await?
            {
                return Err(AccountError::NotFound("authorization request"));
            }
            pairs.push(("code", &code));
            self.audit(
                by,
                "oauth.consent",
                &client.client_id,
                None,
                Some(json!({ "client": client.client_name, "resource": grant.data["resource"] })),
            )
            .await;
        } else {
            if !self
                .store()
                .answer_grant(id, GrantStatus::Denied, &by.user.id, None)
                .await?
            {
                return Err(AccountError::NotFound("authorization request"));
            }
            pairs.push(("error", "access_denied"));
            pairs.push(("error_description", "The person declined."));
        }
        if !state.is_empty() {
            pairs.push(("state", &state));
        }
        Ok(with_query(&redirect, &pairs))
    }

    pub async fn exchange(&self, form: &TokenGrant) -> Result<TokenResponse, OAuthError> {
        match form.grant_type.as_deref() {
            Some("authorization_code") => self.exchange_code(form).await,
            Some("refresh_token") => self.exchange_refresh(form).await,
            _ => Err(OAuthError::new(
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token.",
            )),
        }
    }

    async fn exchange_code(&self, form: &TokenGrant) -> Result<TokenResponse, OAuthError> {
        let invalid = |why: &str| Err(OAuthError::new("invalid_grant", why));
        let (Some(code), Some(verifier), Some(client_id)) = (
            form.code.as_deref(),
            form.code_verifier.as_deref(),
            form.client_id.as_deref(),
        ) else {
            return Err(OAuthError::new(
                "invalid_request",
                "code, code_verifier and client_id are required.",
            ));
        };
        let Some(grant) = self
            .store()
            .get_grant_by_code(&secrets::token_hash(code))
            .await?
        else {
            return invalid("The code is unknown or was used.");
        };
        if grant.client_id != client_id {
            return invalid("The code was issued to another client.");
        }
        if grant.status == GrantStatus::Used {
            // A code presented twice: whoever has it, the tokens it gave are revoked.
            self.store().revoke_grant_tokens(&grant.id).await?;
            return invalid("The code was used already; its tokens are revoked.");
        }
        if grant.status != GrantStatus::Approved || grant.expires_at <= now_ms() {
            return invalid("The code expired.");
        }
        // The code is spent by this redemption, whatever it proves: a wrong verifier or
        // redirect URI cannot be retried (RFC 6749 §4.1.2: a code is used once).
        if !self.store().use_grant(&grant.id).await? {
            self.store().revoke_grant_tokens(&grant.id).await?;
            return invalid("The code was used already; its tokens are revoked.");
        }
        let redirect = grant.data["redirectUri"].as_str().unwrap_or_default();
        if form.redirect_uri.as_deref().is_some_and(|r| r != redirect) {
            return invalid("redirect_uri does not match the authorization request.");
        }
        let challenge = grant.data["challenge"].as_str().unwrap_or_default();
        if !secrets::pkce_matches(verifier, challenge) {
            return invalid("The code_verifier does not match the code_challenge.");
        }
        let resource = grant.data["resource"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        same_resource(form, &resource)?;
        let Some(user_id) = grant.user_id.clone() else {
            return invalid("The code has no user.");
        };
        if self
            .store()
            .get_user(self.tenant(), &user_id)
            .await?
            .is_none()
        {
            return invalid("The account is gone.");
        }
        self.issue(&user_id, client_id, &resource, &grant.id).await
    }

    async fn exchange_refresh(&self, form: &TokenGrant) -> Result<TokenResponse, OAuthError> {
        let (Some(token), Some(client_id)) =
            (form.refresh_token.as_deref(), form.client_id.as_deref())
        else {
            return Err(OAuthError::new(
                "invalid_request",
                "refresh_token and client_id are required.",
            ));
        };
        let hash = secrets::token_hash(token);
        let Some(record) = self.store().use_refresh_token(&hash, now_ms()).await? else {
            // Used before: a replay (or a thief). The whole grant goes.
            if let Some((used, _)) = self.store().find_token(&hash).await?
                && let Some(grant) = used.grant_id
            {
                self.store().revoke_grant_tokens(&grant).await?;
            }
            return Err(OAuthError::new(
                "invalid_grant",
                "The refresh token is unknown or was used; its grant is revoked.",
            ));
        };
        if record.client_id.as_deref() != Some(client_id) {
            return Err(OAuthError::new(
                "invalid_grant",
                "The refresh token was issued to another client.",
            ));
        }
        if record.expires_at.is_some_and(|at| at <= now_ms()) {
            return Err(OAuthError::new(
                "invalid_grant",
                "The refresh token expired.",
            ));
        }
        let resource = record.resource.clone().unwrap_or_default();
        same_resource(form, &resource)?;
        let grant = record.grant_id.clone().unwrap_or_default();
        self.issue(&record.user_id, client_id, &resource, &grant)
            .await
    }

    async fn issue(
        &self,
        user_id: &str,
        client_id: &str,
        resource: &str,
        grant: &str,
    ) -> Result<TokenResponse, OAuthError> {
        let now = now_ms();
        let (access, access_hash) = secrets::mint(ACCESS_PREFIX);
        let (refresh, refresh_hash) = secrets::mint(REFRESH_PREFIX);
        for (kind, hash, expires) in [
            (
                TokenKind::OAuthAccess,
                access_hash,
                now + ACCESS_LIFETIME_SECS * 1000,
            ),
            (
                TokenKind::OAuthRefresh,
                refresh_hash,
                now + REFRESH_LIFETIME_MS,
            ),
        ] {
            self.store()
                .insert_token(&TokenRecord {
                    id: secrets::new_id("oat"),
                    token_hash: hash,
                    kind,
                    tenant: self.tenant().to_owned(),
                    user_id: user_id.to_owned(),
                    name: None,
                    hint: None,
                    client_id: Some(client_id.to_owned()),
                    resource: Some(resource.to_owned()),
                    scope: Some(SCOPE.to_owned()),
                    grant_id: Some(grant.to_owned()),
                    created_at: now,
                    updated_at: now,
                    last_used_at: None,
                    expires_at: Some(expires),
                    used_at: None,
                })
                .await?;
        }
        Ok(TokenResponse {
            access_token: access,
            refresh_token: refresh,
            expires_in: ACCESS_LIFETIME_SECS,
            scope: SCOPE.to_owned(),
        })
    }

    /// RFC 7009: an access token ends; a refresh token ends its whole grant. Unknown tokens
    /// are not an error.
    pub async fn revoke_token(&self, token: &str) -> Result<(), OAuthError> {
        let hash = secrets::token_hash(token.trim());
        if let Some((record, _)) = self.store().find_token(&hash).await? {
            match (record.kind, record.grant_id) {
                (TokenKind::OAuthRefresh, Some(grant)) => {
                    self.store().revoke_grant_tokens(&grant).await?;
                }
                (TokenKind::OAuthAccess | TokenKind::OAuthRefresh, _) => {
                    self.store().delete_token_by_hash(&hash).await?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{acceptable_redirect, redirect_matches};

    #[test]
    fn loopback_redirects_match_on_any_port() {
        assert!(redirect_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:53124/cb"
        ));
        assert!(redirect_matches(
            "http://localhost:1234/cb",
            "http://localhost:9/cb"
        ));
        assert!(redirect_matches(
            "http://[::1]:80/cb?x=1",
            "http://[::1]:7/cb?x=1"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:5/other"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/cb",
            "http://localhost:5/cb"
        ));
        assert!(!redirect_matches(
            "https://app.example/cb",
            "https://app.example:8443/cb"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/cb",
            "https://127.0.0.1:5/cb"
        ));
        assert!(redirect_matches(
            "https://app.example/cb",
            "https://app.example/cb"
        ));
    }

    #[test]
    fn redirect_uris() {
        assert!(acceptable_redirect("https://app.example/cb"));
        assert!(acceptable_redirect("http://127.0.0.1:3333/callback"));
        assert!(acceptable_redirect("http://localhost/cb"));
        assert!(acceptable_redirect("http://[::1]:9/cb"));
        assert!(acceptable_redirect(
            "cursor://anysphere.cursor-mcp/oauth/callback"
        ));
        assert!(!acceptable_redirect("http://evil.example/cb"));
        assert!(!acceptable_redirect("javascript:alert(1)"));
        assert!(!acceptable_redirect("https://app.example/cb#frag"));
        assert!(!acceptable_redirect("not a url"));
    }
}
