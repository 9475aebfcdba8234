//! OAuth 2.1 for connections (spec §1.7, §3.7): clients (manual and RFC 7591 dynamic
//! registration), the authorization-code flow with PKCE S256 and RFC 8707 `resource`, the
//! client-credentials grant, RFC 9728 / RFC 8414 discovery, and refresh at call time with one
//! refresh in flight per connection across the process.
//!
//! Tokens and client secrets are sealed items of the store's vault; rows hold item ids only.
//! A rotated refresh token is written in the same transaction as the new access token.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use executor_core::auth::{AuthMethod, select_method};
use executor_core::{Owner, ToolError, now_ms};
use executor_store::{
    ConnectionKey, ConnectionOAuth, ConnectionRecord, OAuthClientRecord, OAuthSessionRecord,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{IntegrationView, session_label};
use crate::error::{EngineError, EngineResult};
use crate::providers::VAULT as DEFAULT_PROVIDER;
use crate::{Engine, Inner};

/// How long an authorization-code session waits for its callback.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(15 * 60);
/// Tokens are refreshed when they expire within this window.
pub(crate) const REFRESH_WINDOW_MS: i64 = 60_000;
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Scopes asked for at most.
const MAX_SCOPES: usize = 100;

pub const GRANT_AUTHORIZATION_CODE: &str = "authorization_code";
pub const GRANT_CLIENT_CREDENTIALS: &str = "client_credentials";
pub const ORIGIN_MANUAL: &str = "manual";
pub const ORIGIN_DCR: &str = "dynamic_client_registration";

pub use executor_store::OAuthClientRecord as OAuthClientView;

/// `POST /api/oauth/clients`.
#[derive(Debug, Clone)]
pub struct OAuthClientInput {
    pub owner: Owner,
    pub slug: String,
    pub authorization_url: String,
    pub token_url: String,
    pub grant: String,
    pub client_id: String,
    /// Empty or `None` for public (PKCE) clients.
    pub client_secret: Option<String>,
    pub resource: Option<String>,
    pub origin_integration: Option<String>,
}

/// `POST /api/oauth/clients/register-dynamic`.
#[derive(Debug, Clone)]
pub struct RegisterDynamicClient {
    pub owner: Owner,
    pub slug: Option<String>,
    pub issuer: Option<String>,
    pub registration_endpoint: String,
    pub authorization_url: String,
    pub token_url: String,
    pub resource: Option<String>,
    pub scopes: Vec<String>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub client_name: Option<String>,
    pub redirect_uri: String,
    pub origin_integration: Option<String>,
}

/// `POST /api/oauth/start`.
#[derive(Debug, Clone)]
pub struct OAuthStart {
    pub client: String,
    pub client_owner: Owner,
    pub owner: Owner,
    pub name: String,
    pub integration: String,
    pub template: String,
    pub identity_label: Option<String>,
    pub redirect_uri: String,
    /// Scopes to ask for (the integration's method declares none today). Empty: an MCP
    /// integration's are discovered from its server.
    pub scopes: Vec<String>,
}

/// A connection minted by OAuth, with its OAuth columns.
#[derive(Debug, Clone)]
pub struct OAuthConnection {
    pub connection: ConnectionRecord,
    pub oauth: ConnectionOAuth,
}

#[derive(Debug, Clone)]
pub enum OAuthStarted {
    Connected(Box<OAuthConnection>),
    Redirect {
        authorization_url: String,
        state: String,
    },
}

/// What `probe` found (RFC 9728 then RFC 8414 / OIDC).
#[derive(Debug, Clone, Default)]
pub struct OAuthProbe {
    pub issuer: Option<String>,
    pub authorization_url: String,
    pub token_url: String,
    pub resource: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub registration_endpoint: Option<String>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub client_id_metadata_document_supported: Option<bool>,
}

/// Per-connection refresh state: the one refresh in flight per connection in this process, and
/// an epoch that moves whenever the connection's tokens are replaced.
#[derive(Default)]
pub(crate) struct RefreshLocks {
    slots: std::sync::Mutex<HashMap<ConnectionKey, Arc<RefreshSlot>>>,
}

#[derive(Default)]
struct RefreshSlot {
    lock: tokio::sync::Mutex<()>,
    epoch: AtomicU64,
}

impl RefreshLocks {
    fn slot(&self, key: &ConnectionKey) -> Arc<RefreshSlot> {
        let mut map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(key.clone()).or_default().clone()
    }

    /// How many times this process replaced the connection's tokens. Read before its
    /// credentials are, it tells a caller whose token was refused whether a newer one exists.
    pub(crate) fn epoch(&self, key: &ConnectionKey) -> u64 {
        let map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key).map_or(0, |s| s.epoch.load(Ordering::Acquire))
    }

    fn bump(&self, key: &ConnectionKey) {
        self.slot(key).epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// How long a callback result waits to be read (`GET /api/oauth/await/:sessionId`).
pub(crate) const RESULT_TTL: Duration = Duration::from_secs(10 * 60);
/// Unread callback results kept at most (the callback is public; junk must not pile up).
const MAX_RESULTS: usize = 1024;

/// The results of the callback page, readable once by session id (spec §3.7: the local host
/// publishes each result to an in-memory store, for clients that cannot listen to the popup).
#[derive(Default)]
pub(crate) struct CallbackResults {
    results: std::sync::Mutex<HashMap<String, (std::time::Instant, Value)>>,
}

impl CallbackResults {
    /// Keeps the first result of a session: a reloaded callback page (whose state is spent by
    /// then) does not replace the outcome that counted.
    fn publish(&self, session: &str, result: Value, now: std::time::Instant) {
        let mut map = self.results.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (at, _)| now.duration_since(*at) < RESULT_TTL);
        if map.contains_key(session) {
            return;
        }
        if map.len() >= MAX_RESULTS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(session.to_owned(), (now, result));
    }

    fn take(&self, session: &str, now: std::time::Instant) -> Option<Value> {
        let mut map = self.results.lock().unwrap_or_else(|p| p.into_inner());
        let (at, result) = map.remove(session)?;
        (now.duration_since(at) < RESULT_TTL).then_some(result)
    }
}

// ---- wire helpers ------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    scope: Option<String>,
}

/// A failed token request: `error` is the RFC 6749 code when the server sent one.
#[derive(Debug)]
struct TokenError {
    error: Option<String>,
    message: String,
}

impl TokenError {
    /// The grant is gone for good: a person must authorise again.
    fn is_permanent(&self) -> bool {
        matches!(
            self.error.as_deref(),
            Some("invalid_grant" | "invalid_client" | "unauthorized_client")
        )
    }
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The S256 code challenge of a verifier (RFC 7636).
pub fn pkce_challenge(verifier: &str) -> String {
    use sha2::Digest as _;
    base64url(&sha2::Sha256::digest(verifier.as_bytes()))
}

fn random_token() -> String {
    base64url(&rand::random::<[u8; 32]>())
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs.iter().filter(|(_, v)| !v.is_empty()))
        .finish()
}

fn oauth_error(tag: &'static str, message: impl Into<String>) -> EngineError {
    EngineError::OAuth {
        tag,
        message: message.into(),
    }
}

fn check_url(what: &str, raw: &str) -> EngineResult<url::Url> {
    let url = url::Url::parse(raw.trim()).map_err(|e| EngineError::InvalidInput {
        message: format!("{what} is not a valid URL ({raw:?}): {e}"),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EngineError::InvalidInput {
            message: format!("{what} must be an http(s) URL: {raw:?}"),
        });
    }
    Ok(url)
}

fn expires_at(expires_in: Option<&Value>) -> Option<i64> {
    let secs = match expires_in? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| now_ms().saturating_add((secs * 1000.0) as i64))
}

async fn post_token(
    inner: &Inner,
    token_url: &str,
    pairs: &[(&str, &str)],
) -> Result<TokenResponse, TokenError> {
    let response = inner
        .http()
        .post(token_url)
        .timeout(HTTP_TIMEOUT)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(form(pairs))
        .send()
        .await
        .map_err(|e| TokenError {
            error: None,
            message: format!("token endpoint unreachable: {e}"),
        })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| TokenError {
        error: None,
        message: format!("token endpoint answer unreadable: {e}"),
    })?;
    let value: Option<Value> = serde_json::from_slice(&body).ok();
    if !status.is_success() {
        let error = value
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let description = value
            .as_ref()
            .and_then(|v| v.get("error_description"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(TokenError {
            message: format!(
                "token endpoint answered {}{}{}",
                status.as_u16(),
                error
                    .as_deref()
                    .map(|e| format!(" {e}"))
                    .unwrap_or_default(),
                if description.is_empty() {
                    String::new()
                } else {
                    format!(": {description}")
                }
            ),
            error,
        });
    }
    let value = value.ok_or_else(|| TokenError {
        error: None,
        message: "token endpoint answered with a body that is not JSON".to_owned(),
    })?;
    serde_json::from_value(value).map_err(|e| TokenError {
        error: None,
        message: format!("token endpoint answer has no usable access_token: {e}"),
    })
}

async fn get_json(inner: &Inner, url: &str) -> Option<Value> {
    let response = inner
        .http()
        .get(url)
        .timeout(HTTP_TIMEOUT)
        .header("accept", "application/json")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json::<Value>().await.ok()
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value?.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

/// `<origin>/.well-known/<name><path>` (RFC 8414 §3 / RFC 9728 §3 path insertion).
fn well_known(url: &url::Url, name: &str) -> String {
    let path = url.path().trim_end_matches('/');
    format!(
        "{}/.well-known/{name}{path}",
        url.origin().ascii_serialization()
    )
}

// ---- the tool-level errors of §4.3 -------------------------------------------------------

fn auth_tool_error(key: &ConnectionKey, code: &str, message: String) -> Box<ToolError> {
    Box::new(
        ToolError::new(code, message)
            .with_retryable(false)
            .with_details(json!({
                "category": "authentication",
                "integration": key.integration,
                "credential": session_label(key),
                "recovery": "Authorise the connection again with executor.coreTools.oauth.start \
                    (or re-create it with executor.coreTools.connections.createHandoff), then \
                    check it with executor.coreTools.connections.list.",
            })),
    )
}

fn reauth_required(key: &ConnectionKey, why: &str) -> Box<ToolError> {
    auth_tool_error(
        key,
        "oauth_reauth_required",
        format!(
            "Connection {} must be authorised again: {why}",
            session_label(key)
        ),
    )
}

// ---- call time ---------------------------------------------------------------------------

/// Makes sure an OAuth connection's access token is not about to expire, refreshing it when it
/// expires within [`REFRESH_WINDOW_MS`]. One refresh per connection runs at a time in this
/// process; calls that waited for it use its result.
pub(crate) async fn ensure_fresh(
    inner: &Inner,
    key: &ConnectionKey,
) -> EngineResult<Result<(), Box<ToolError>>> {
    let due = |oauth: &ConnectionOAuth| {
        oauth
            .expires_at
            .is_some_and(|at| at <= now_ms() + REFRESH_WINDOW_MS)
    };
    let Some(oauth) = inner.store.get_connection_oauth(&inner.scope, key).await? else {
        return Err(crate::catalog::connection_not_found(key));
    };
    if !due(&oauth) {
        return Ok(Ok(()));
    }
    let slot = inner.oauth_refresh.slot(key);
    let _guard = slot.lock.lock().await;
    // Whoever held the lock may have refreshed already.
    let Some(oauth) = inner.store.get_connection_oauth(&inner.scope, key).await? else {
        return Err(crate::catalog::connection_not_found(key));
    };
    if !due(&oauth) {
        return Ok(Ok(()));
    }
    refresh(inner, key, oauth).await
}

/// An upstream answered 401 to an access token we took for valid (revoked, replaced by another
/// sign-in of the same grant, a clock that drifts). Refreshes it, unless the tokens were
/// replaced since the caller read its credentials (`seen_epoch`): then the caller only retries,
/// so a burst of refusals costs one refresh. `Ok(None)`: the connection has no OAuth client to
/// refresh with, and the refusal stands.
pub(crate) async fn refresh_after_rejection(
    inner: &Inner,
    key: &ConnectionKey,
    seen_epoch: u64,
) -> EngineResult<Option<Result<(), Box<ToolError>>>> {
    let refreshable = || async {
        EngineResult::Ok(
            inner
                .store
                .get_connection_oauth(&inner.scope, key)
                .await?
                .filter(|o| o.client.is_some() && o.client_owner.is_some()),
        )
    };
    if refreshable().await?.is_none() {
        return Ok(None);
    }
    let slot = inner.oauth_refresh.slot(key);
    let _guard = slot.lock.lock().await;
    if slot.epoch.load(Ordering::Acquire) != seen_epoch {
        return Ok(Some(Ok(())));
    }
    let Some(oauth) = refreshable().await? else {
        return Ok(None);
    };
    tracing::info!(integration = %key.integration, connection = %key.name, "upstream refused the access token; refreshing it");
    Ok(Some(refresh(inner, key, oauth).await?))
}

async fn refresh(
    inner: &Inner,
    key: &ConnectionKey,
    oauth: ConnectionOAuth,
) -> EngineResult<Result<(), Box<ToolError>>> {
    let (Some(client_slug), Some(client_owner)) = (oauth.client.clone(), oauth.client_owner) else {
        return Ok(Err(reauth_required(
            key,
            "its token expired and it has no OAuth client to refresh it with.",
        )));
    };
    let Some(client) = inner
        .store
        .get_oauth_client(&inner.scope, client_owner, &client_slug)
        .await?
    else {
        return Ok(Err(reauth_required(
            key,
            &format!("its token expired and its OAuth client {client_slug:?} no longer exists."),
        )));
    };
    let secret = client_secret(inner, &client).await?;
    let token_url = oauth.token_url.clone().unwrap_or(client.token_url.clone());
    let resource = client.resource.clone().unwrap_or_default();
    let refresh_token = match &oauth.refresh_item_id {
        Some(item) => inner.store.get_secret(&inner.scope, item).await?,
        None => None,
    };
    let result = if client.grant == GRANT_CLIENT_CREDENTIALS {
        post_token(
            inner,
            &token_url,
            &[
                ("grant_type", GRANT_CLIENT_CREDENTIALS),
                ("client_id", &client.client_id),
                ("client_secret", &secret),
                ("resource", &resource),
            ],
        )
        .await
    } else {
        let Some(refresh_token) = refresh_token.as_deref() else {
            return Ok(Err(reauth_required(
                key,
                "its access token expired and there is no refresh token.",
            )));
        };
        // No `scope` on refresh: the grant keeps its scopes, and some servers reject any.
        post_token(
            inner,
            &token_url,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", &client.client_id),
                ("client_secret", &secret),
                ("resource", &resource),
            ],
        )
        .await
    };
    match result {
        Ok(tokens) => {
            let mut next = oauth.clone();
            store_tokens(inner, key, &mut next, tokens, None).await?;
            tracing::info!(integration = %key.integration, connection = %key.name, "oauth token refreshed");
            Ok(Ok(()))
        }
        Err(e) if e.is_permanent() => {
            tracing::warn!(integration = %key.integration, connection = %key.name, error = %e.message, "oauth refresh rejected; re-authorisation required");
            // Forget the dead refresh token, so later calls fail at once without asking the
            // server again.
            let mut next = oauth.clone();
            if let Some(item) = next.refresh_item_id.take() {
                inner.store.delete_secret(&inner.scope, &item).await?;
            }
            inner
                .store
                .save_oauth_tokens(&inner.scope, key, &[], &next)
                .await?;
            Ok(Err(reauth_required(
                key,
                &format!(
                    "the authorization server rejected its refresh ({}).",
                    e.message
                ),
            )))
        }
        Err(e) => Ok(Err(auth_tool_error(
            key,
            "oauth_refresh_failed",
            format!(
                "Could not refresh the token of connection {}: {}",
                session_label(key),
                e.message
            ),
        ))),
    }
}

/// The requested scopes the grant left out. A token answer without `scope` granted what was
/// asked (RFC 6749 §5.1).
fn missing_scopes(requested: &[String], granted: Option<&str>) -> Vec<String> {
    let Some(granted) = granted else {
        return Vec::new();
    };
    let granted: Vec<&str> = granted.split_whitespace().collect();
    let mut missing: Vec<String> = Vec::new();
    for scope in requested {
        if !granted.contains(&scope.as_str()) && !missing.contains(scope) {
            missing.push(scope.clone());
        }
    }
    missing
}

/// Writes a token answer: the access token, the (rotated) refresh token and the expiry, in one
/// store transaction. `requested` (the scopes asked for) recomputes the missing scopes; a
/// refresh (`None`) asks for none and keeps them.
async fn store_tokens(
    inner: &Inner,
    key: &ConnectionKey,
    oauth: &mut ConnectionOAuth,
    tokens: TokenResponse,
    requested: Option<&[String]>,
) -> EngineResult<()> {
    let prefix = item_prefix(key);
    let mut secrets = vec![(format!("{prefix}:token"), tokens.access_token)];
    if let Some(refresh) = tokens.refresh_token.filter(|r| !r.is_empty()) {
        let item = format!("{prefix}:refresh_token");
        secrets.push((item.clone(), refresh));
        oauth.refresh_item_id = Some(item);
    }
    oauth.expires_at = expires_at(tokens.expires_in.as_ref());
    if let Some(requested) = requested {
        oauth.missing_scopes = missing_scopes(requested, tokens.scope.as_deref());
    }
    if let Some(scope) = tokens.scope.filter(|s| !s.trim().is_empty()) {
        oauth.scope = Some(scope);
    }
    inner
        .store
        .save_oauth_tokens(&inner.scope, key, &secrets, oauth)
        .await?;
    inner.oauth_refresh.bump(key);
    Ok(())
}

fn item_prefix(key: &ConnectionKey) -> String {
    format!("connection:{}:{}:{}", key.owner, key.integration, key.name)
}

fn client_secret_item(owner: Owner, slug: &str) -> String {
    format!("oauth-client:{owner}:{slug}:secret")
}

async fn client_secret(inner: &Inner, client: &OAuthClientRecord) -> EngineResult<String> {
    Ok(match &client.client_secret_item_id {
        Some(item) => inner
            .store
            .get_secret(&inner.scope, item)
            .await?
            .unwrap_or_default(),
        None => String::new(),
    })
}

/// Whether the connection binds an OAuth method of the integration.
pub(crate) fn is_oauth(methods: &[AuthMethod], template: &str) -> bool {
    matches!(
        select_method(methods, template),
        Some(AuthMethod::Oauth2 { .. })
    )
}

// ---- the engine API ----------------------------------------------------------------------

impl Engine {
    pub async fn list_oauth_clients(&self) -> EngineResult<Vec<OAuthClientView>> {
        Ok(self
            .inner
            .store
            .list_oauth_clients(&self.inner.scope)
            .await?)
    }

    /// Upserts a manual client; the secret goes to the vault.
    pub async fn put_oauth_client(&self, input: OAuthClientInput) -> EngineResult<String> {
        let slug = input.slug.trim().to_owned();
        if slug.is_empty() {
            return Err(EngineError::InvalidInput {
                message: "An OAuth client needs a slug.".to_owned(),
            });
        }
        if input.client_id.trim().is_empty() {
            return Err(EngineError::InvalidInput {
                message: "An OAuth client needs a clientId.".to_owned(),
            });
        }
        if !matches!(
            input.grant.as_str(),
            GRANT_AUTHORIZATION_CODE | GRANT_CLIENT_CREDENTIALS
        ) {
            return Err(EngineError::InvalidInput {
                message: format!(
                    "grant must be \"authorization_code\" or \"client_credentials\", not {:?}.",
                    input.grant
                ),
            });
        }
        if input.grant == GRANT_AUTHORIZATION_CODE {
            check_url("authorizationUrl", &input.authorization_url)?;
        }
        check_url("tokenUrl", &input.token_url)?;
        let secret_item = self
            .save_client_secret(input.owner, &slug, input.client_secret.as_deref())
            .await?;
        self.inner
            .store
            .upsert_oauth_client(
                &self.inner.scope,
                &OAuthClientRecord {
                    owner: input.owner,
                    slug: slug.clone(),
                    authorization_url: input.authorization_url.trim().to_owned(),
                    token_url: input.token_url.trim().to_owned(),
                    grant: input.grant,
                    client_id: input.client_id.trim().to_owned(),
                    client_secret_item_id: secret_item,
                    resource: input.resource.filter(|r| !r.trim().is_empty()),
                    origin_kind: ORIGIN_MANUAL.to_owned(),
                    origin_integration: input.origin_integration,
                    origin_issuer: None,
                    origin_redirect_uri: None,
                    created_at: 0,
                    updated_at: 0,
                },
            )
            .await
            .map_err(|e| match e {
                executor_store::StoreError::NoSubject => EngineError::InvalidInput {
                    message: e.to_string(),
                },
                e => e.into(),
            })?;
        Ok(slug)
    }

    async fn save_client_secret(
        &self,
        owner: Owner,
        slug: &str,
        secret: Option<&str>,
    ) -> EngineResult<Option<String>> {
        let item = client_secret_item(owner, slug);
        match secret.filter(|s| !s.is_empty()) {
            Some(secret) => {
                self.inner
                    .store
                    .put_secret(&self.inner.scope, &item, secret)
                    .await?;
                Ok(Some(item))
            }
            None => {
                self.inner
                    .store
                    .delete_secret(&self.inner.scope, &item)
                    .await?;
                Ok(None)
            }
        }
    }

    /// Idempotent. Connections that use the client keep working until their next refresh.
    pub async fn remove_oauth_client(&self, owner: Owner, slug: &str) -> EngineResult<bool> {
        let removed = self
            .inner
            .store
            .delete_oauth_client(&self.inner.scope, owner, slug)
            .await?;
        self.inner
            .store
            .delete_secret(&self.inner.scope, &client_secret_item(owner, slug))
            .await?;
        Ok(removed)
    }

    /// RFC 7591 registration, reusing a client registered for the same issuer, resource and
    /// redirect URI. Returns the client's slug.
    pub async fn register_dynamic_client(
        &self,
        input: RegisterDynamicClient,
    ) -> EngineResult<String> {
        let endpoint = check_url("registrationEndpoint", &input.registration_endpoint)?;
        check_url("authorizationUrl", &input.authorization_url)?;
        check_url("tokenUrl", &input.token_url)?;
        check_url("redirectUri", &input.redirect_uri)?;
        let issuer = input
            .issuer
            .clone()
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| endpoint.origin().ascii_serialization());
        let resource = input.resource.clone().filter(|r| !r.trim().is_empty());
        let existing = self.list_oauth_clients().await?;
        if let Some(reusable) = existing.iter().find(|c| {
            c.owner == input.owner
                && c.origin_kind == ORIGIN_DCR
                && c.origin_issuer.as_deref() == Some(issuer.as_str())
                && c.resource == resource
                && c.origin_redirect_uri.as_deref() == Some(input.redirect_uri.as_str())
        }) {
            return Ok(reusable.slug.clone());
        }
        let auth_method = match &input.token_endpoint_auth_methods_supported {
            None => "none",
            Some(methods) if methods.is_empty() || methods.iter().any(|m| m == "none") => "none",
            Some(_) => "client_secret_post",
        };
        let body = json!({
            "client_name": input.client_name.clone().unwrap_or_else(|| "Executor".to_owned()),
            "redirect_uris": [input.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method,
            "scope": input.scopes.join(" "),
        });
        let response = self
            .inner
            .http()
            .post(endpoint.as_str())
            .timeout(HTTP_TIMEOUT)
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                oauth_error(
                    "OAuthRegistrationError",
                    format!("Dynamic client registration failed: {e}"),
                )
            })?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            let error = answer.get("error").and_then(Value::as_str).unwrap_or("");
            let description = answer
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let guidance = if error == "invalid_redirect_uri" {
                " The authorization server refused the redirect URI; servers that accept only \
                 loopback redirects need Executor reached at http://localhost or http://127.0.0.1, \
                 otherwise register a client manually."
            } else {
                ""
            };
            return Err(oauth_error(
                "OAuthRegistrationError",
                format!(
                    "Dynamic client registration was refused ({} {error} {description}).{guidance}",
                    status.as_u16()
                ),
            ));
        }
        let client_id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                oauth_error(
                    "OAuthRegistrationError",
                    "Dynamic client registration answered without a client_id.",
                )
            })?
            .to_owned();
        let secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let slug = match input.slug.clone().filter(|s| !s.trim().is_empty()) {
            Some(s) => s.trim().to_owned(),
            None => {
                let host = endpoint.host_str().unwrap_or("server").replace('.', "-");
                match &resource {
                    Some(r) => format!("dcr-{host}-{}", &pkce_challenge(r)[..8]),
                    None => format!("dcr-{host}"),
                }
            }
        };
        let secret_item = self
            .save_client_secret(input.owner, &slug, secret.as_deref())
            .await?;
        self.inner
            .store
            .upsert_oauth_client(
                &self.inner.scope,
                &OAuthClientRecord {
                    owner: input.owner,
                    slug: slug.clone(),
                    authorization_url: input.authorization_url.trim().to_owned(),
                    token_url: input.token_url.trim().to_owned(),
                    grant: GRANT_AUTHORIZATION_CODE.to_owned(),
                    client_id,
                    client_secret_item_id: secret_item,
                    resource,
                    origin_kind: ORIGIN_DCR.to_owned(),
                    origin_integration: input.origin_integration,
                    origin_issuer: Some(issuer),
                    origin_redirect_uri: Some(input.redirect_uri),
                    created_at: 0,
                    updated_at: 0,
                },
            )
            .await?;
        Ok(slug)
    }

    /// RFC 9728 protected-resource metadata first, then RFC 8414 / OIDC server metadata.
    pub async fn probe_oauth(&self, url: &str) -> EngineResult<OAuthProbe> {
        let target = check_url("url", url)?;
        let inner = &self.inner;
        let mut resource = None;
        let mut scopes = None;
        let mut issuer = target.clone();
        let origin = url::Url::parse(&format!("{}/", target.origin().ascii_serialization()))
            .unwrap_or_else(|_| target.clone());
        for candidate in [
            well_known(&target, "oauth-protected-resource"),
            well_known(&origin, "oauth-protected-resource"),
        ] {
            if let Some(meta) = get_json(inner, &candidate).await
                && let Some(server) = meta
                    .get("authorization_servers")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                && let Ok(server) = url::Url::parse(server)
            {
                resource = meta
                    .get("resource")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                scopes = strings(meta.get("scopes_supported"));
                issuer = server;
                break;
            }
        }
        let issuer_origin = url::Url::parse(&format!("{}/", issuer.origin().ascii_serialization()))
            .unwrap_or_else(|_| issuer.clone());
        let mut candidates = vec![
            well_known(&issuer, "oauth-authorization-server"),
            well_known(&issuer, "openid-configuration"),
        ];
        if !issuer.path().trim_matches('/').is_empty() {
            candidates.push(format!(
                "{}/.well-known/openid-configuration",
                issuer.as_str().trim_end_matches('/')
            ));
            candidates.push(well_known(&issuer_origin, "oauth-authorization-server"));
        }
        for candidate in candidates {
            let Some(meta) = get_json(inner, &candidate).await else {
                continue;
            };
            let (Some(authorization), Some(token)) = (
                meta.get("authorization_endpoint").and_then(Value::as_str),
                meta.get("token_endpoint").and_then(Value::as_str),
            ) else {
                continue;
            };
            let mut scopes = scopes.or_else(|| strings(meta.get("scopes_supported")));
            if let Some(s) = scopes.as_mut() {
                s.truncate(MAX_SCOPES);
            }
            return Ok(OAuthProbe {
                issuer: meta
                    .get("issuer")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                authorization_url: authorization.to_owned(),
                token_url: token.to_owned(),
                resource,
                scopes_supported: scopes,
                registration_endpoint: meta
                    .get("registration_endpoint")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                token_endpoint_auth_methods_supported: strings(
                    meta.get("token_endpoint_auth_methods_supported"),
                ),
                client_id_metadata_document_supported: meta
                    .get("client_id_metadata_document_supported")
                    .and_then(Value::as_bool),
            });
        }
        Err(oauth_error(
            "OAuthProbeError",
            format!("No OAuth authorization server metadata found for {url}."),
        ))
    }

    /// Starts a flow: client credentials mint the connection at once; authorization code
    /// answers with the URL to send a person to.
    pub async fn start_oauth(&self, input: OAuthStart) -> EngineResult<OAuthStarted> {
        let client = self
            .inner
            .store
            .get_oauth_client(&self.inner.scope, input.client_owner, &input.client)
            .await?
            .ok_or_else(|| {
                oauth_error(
                    "OAuthStartError",
                    format!(
                        "Unknown OAuth client {:?} ({}).",
                        input.client, input.client_owner
                    ),
                )
            })?;
        let integration = self
            .check_oauth_template(&input.integration, &input.template)
            .await?;
        if input.owner == Owner::User && self.inner.scope.subject.is_none() {
            return Err(EngineError::InvalidConnectionInput {
                message: "Cannot create a personal connection: this context has no user subject."
                    .to_owned(),
            });
        }
        let name = crate::catalog::connection_name(&input.name)?;
        let mut scopes: Vec<String> = input
            .scopes
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .take(MAX_SCOPES)
            .collect();
        if scopes.is_empty() {
            scopes = self.discovered_scopes(&integration).await;
        }
        let scope = scopes.join(" ");
        let resource = client.resource.clone().unwrap_or_default();
        if client.grant == GRANT_CLIENT_CREDENTIALS {
            let secret = client_secret(&self.inner, &client).await?;
            let tokens = post_token(
                &self.inner,
                &client.token_url,
                &[
                    ("grant_type", GRANT_CLIENT_CREDENTIALS),
                    ("client_id", &client.client_id),
                    ("client_secret", &secret),
                    ("scope", &scope),
                    ("resource", &resource),
                ],
            )
            .await
            .map_err(|e| oauth_error("OAuthStartError", e.message))?;
            let connection = self
                .mint_connection(
                    &client,
                    input.owner,
                    &input.integration,
                    &name,
                    &input.template,
                    input.identity_label,
                    tokens,
                    &scopes,
                )
                .await?;
            return Ok(OAuthStarted::Connected(Box::new(connection)));
        }
        check_url("redirectUri", &input.redirect_uri)?;
        let mut url = check_url("the client's authorizationUrl", &client.authorization_url)?;
        let verifier = random_token();
        let state = random_token();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &input.redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce_challenge(&verifier))
                .append_pair("code_challenge_method", "S256");
            if !scope.is_empty() {
                q.append_pair("scope", &scope);
            }
            if !resource.is_empty() {
                q.append_pair("resource", &resource);
            }
        }
        let now = now_ms();
        self.inner
            .store
            .insert_oauth_session(
                &self.inner.scope,
                &OAuthSessionRecord {
                    state: state.clone(),
                    owner: input.owner,
                    client_slug: client.slug.clone(),
                    client_owner: client.owner,
                    integration: input.integration,
                    name,
                    template: input.template,
                    redirect_url: input.redirect_uri,
                    pkce_verifier: verifier,
                    identity_label: input.identity_label,
                    payload: json!({"scopes": scopes}),
                    expires_at: now + SESSION_TTL.as_millis() as i64,
                    created_at: now,
                },
            )
            .await?;
        Ok(OAuthStarted::Redirect {
            authorization_url: url.to_string(),
            state,
        })
    }

    /// Exchanges the code of a session and mints its connection. The session is consumed
    /// whatever the outcome; an unknown or expired state stores nothing.
    pub async fn complete_oauth(&self, state: &str, code: &str) -> EngineResult<OAuthConnection> {
        let session = self
            .inner
            .store
            .take_oauth_session(&self.inner.scope, state)
            .await?
            .filter(|s| s.expires_at > now_ms())
            .ok_or_else(|| EngineError::OAuthSessionNotFound {
                state: state.to_owned(),
            })?;
        if code.is_empty() {
            return Err(oauth_error(
                "OAuthCompleteError",
                "The authorization server sent no code.",
            ));
        }
        let client = self
            .inner
            .store
            .get_oauth_client(
                &self.inner.scope,
                session.client_owner,
                &session.client_slug,
            )
            .await?
            .ok_or_else(|| {
                oauth_error(
                    "OAuthCompleteError",
                    format!("The OAuth client {:?} was removed.", session.client_slug),
                )
            })?;
        let secret = client_secret(&self.inner, &client).await?;
        let resource = client.resource.clone().unwrap_or_default();
        let tokens = post_token(
            &self.inner,
            &client.token_url,
            &[
                ("grant_type", GRANT_AUTHORIZATION_CODE),
                ("code", code),
                ("redirect_uri", &session.redirect_url),
                ("code_verifier", &session.pkce_verifier),
                ("client_id", &client.client_id),
                ("client_secret", &secret),
                ("resource", &resource),
            ],
        )
        .await
        .map_err(|e| oauth_error("OAuthCompleteError", e.message))?;
        let requested: Vec<String> = session
            .payload
            .get("scopes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        self.mint_connection(
            &client,
            session.owner,
            &session.integration,
            &session.name,
            &session.template,
            session.identity_label,
            tokens,
            &requested,
        )
        .await
    }

    /// Publishes the result the callback page reported for a flow (`sessionId` = its state).
    pub fn publish_oauth_result(&self, session_id: &str, result: Value) {
        if session_id.is_empty() {
            return;
        }
        self.inner
            .oauth_results
            .publish(session_id, result, std::time::Instant::now());
    }

    /// The published result of a flow, once: `None` when there is none (yet), it was read
    /// already, or it is older than ten minutes.
    pub fn take_oauth_result(&self, session_id: &str) -> Option<Value> {
        self.inner
            .oauth_results
            .take(session_id, std::time::Instant::now())
    }

    /// Drops a pending session (idempotent).
    pub async fn cancel_oauth(&self, state: &str) -> EngineResult<()> {
        self.inner
            .store
            .take_oauth_session(&self.inner.scope, state)
            .await?;
        Ok(())
    }

    /// The OAuth columns of a connection (`None` when it does not exist).
    pub async fn connection_oauth(
        &self,
        key: &ConnectionKey,
    ) -> EngineResult<Option<ConnectionOAuth>> {
        Ok(self
            .inner
            .store
            .get_connection_oauth(&self.inner.scope, key)
            .await?)
    }

    /// Marks a connection's access token as expired, so the next call refreshes it.
    pub async fn expire_oauth_token(&self, key: &ConnectionKey) -> EngineResult<()> {
        let mut oauth = self
            .connection_oauth(key)
            .await?
            .ok_or_else(|| crate::catalog::connection_not_found(key))?;
        oauth.expires_at = Some(now_ms());
        self.inner
            .store
            .save_oauth_tokens(&self.inner.scope, key, &[], &oauth)
            .await?;
        Ok(())
    }

    /// Scopes to ask for when the caller names none: an MCP server's are discovered live (RFC
    /// 9728 protected-resource `scopes_supported`, else the authorization server's). Discovery
    /// failing just means none.
    async fn discovered_scopes(
        &self,
        integration: &executor_store::IntegrationRecord,
    ) -> Vec<String> {
        if integration.plugin_id != crate::mcp_plugin::PLUGIN_ID {
            return Vec::new();
        }
        let Some(endpoint) = crate::mcp_plugin::display_url(&integration.config) else {
            return Vec::new();
        };
        match self.probe_oauth(&endpoint).await {
            Ok(probe) => probe.scopes_supported.unwrap_or_default(),
            Err(e) => {
                tracing::debug!(integration = %integration.slug, error = %e, "no OAuth scopes discovered");
                Vec::new()
            }
        }
    }

    async fn check_oauth_template(
        &self,
        integration: &str,
        template: &str,
    ) -> EngineResult<executor_store::IntegrationRecord> {
        let record = self.integration_record(integration).await?;
        let view = IntegrationView::from_record(&record);
        match view.auth_methods.iter().find(|m| m.slug() == template) {
            Some(AuthMethod::Oauth2 { .. }) => Ok(record),
            _ => Err(oauth_error(
                "OAuthStartError",
                format!("Integration {integration:?} declares no OAuth auth method {template:?}."),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn mint_connection(
        &self,
        client: &OAuthClientRecord,
        owner: Owner,
        integration: &str,
        name: &str,
        template: &str,
        identity_label: Option<String>,
        tokens: TokenResponse,
        requested: &[String],
    ) -> EngineResult<OAuthConnection> {
        let integration_record = self.integration_record(integration).await?;
        let key = ConnectionKey::new(owner, integration, name);
        let access_item = format!("{}:token", item_prefix(&key));
        // The refresh token's item is listed too, so removing the connection deletes it.
        let refresh_item = format!("{}:refresh_token", item_prefix(&key));
        let now = now_ms();
        self.inner
            .store
            .upsert_connection(
                &self.inner.scope,
                &ConnectionRecord {
                    owner,
                    integration: integration.to_owned(),
                    name: name.to_owned(),
                    template: template.to_owned(),
                    provider: DEFAULT_PROVIDER.to_owned(),
                    item_ids: json!({"token": access_item, "refresh_token": refresh_item}),
                    identity_label,
                    description: None,
                    last_health: None,
                    tools_synced_at: None,
                    expires_at: None,
                    created_at: now,
                    updated_at: now,
                    oauth: None,
                },
            )
            .await?;
        let mut oauth = ConnectionOAuth {
            client: Some(client.slug.clone()),
            client_owner: Some(client.owner),
            ..ConnectionOAuth::default()
        };
        store_tokens(&self.inner, &key, &mut oauth, tokens, Some(requested)).await?;
        let label = session_label(&key);
        self.inner.mcp.close_where(move |l| l == label).await;
        self.produce_tools(&integration_record, &key).await?;
        self.catalog_changed();
        Ok(OAuthConnection {
            connection: self.get_connection(&key).await?,
            oauth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc7636_appendix_b() {
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(random_token().len(), 43);
    }

    #[test]
    fn missing_scopes_are_the_requested_ones_not_granted() {
        let requested = vec!["read".to_owned(), "write".to_owned(), "admin".to_owned()];
        assert_eq!(
            missing_scopes(&requested, Some("read  admin")),
            vec!["write".to_owned()]
        );
        // No `scope` in the answer: everything asked for was granted.
        assert!(missing_scopes(&requested, None).is_empty());
        assert_eq!(missing_scopes(&requested, Some("")).len(), 3);
    }

    #[test]
    fn callback_results_are_read_once_and_expire() {
        let results = CallbackResults::default();
        let t0 = std::time::Instant::now();
        results.publish("s1", json!({"ok": true}), t0);
        // The first result of a session counts.
        results.publish("s1", json!({"ok": false}), t0);
        assert_eq!(results.take("s1", t0), Some(json!({"ok": true})));
        assert_eq!(results.take("s1", t0), None);
        results.publish("s2", json!({"ok": true}), t0);
        assert_eq!(results.take("s2", t0 + RESULT_TTL), None, "expired");
        results.publish("s3", json!(1), t0);
        // Publishing later sweeps the expired ones.
        results.publish("s4", json!(2), t0 + RESULT_TTL);
        assert_eq!(results.results.lock().unwrap().len(), 1);
    }

    #[test]
    fn well_known_inserts_before_the_path() {
        let u = url::Url::parse("https://as.example.com/tenant1/").unwrap();
        assert_eq!(
            well_known(&u, "oauth-authorization-server"),
            "https://as.example.com/.well-known/oauth-authorization-server/tenant1"
        );
        let u = url::Url::parse("https://as.example.com").unwrap();
        assert_eq!(
            well_known(&u, "oauth-authorization-server"),
            "https://as.example.com/.well-known/oauth-authorization-server"
        );
    }
}
