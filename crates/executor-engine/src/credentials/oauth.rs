//! OAuth 2.1 for connections (spec §1.7, §3.7): clients (manual and RFC 7591 dynamic
//! registration), the authorization-code flow with PKCE S256 and RFC 8707 `resource`, the
//! client-credentials grant, RFC 9728 / RFC 8414 discovery, and refresh at call time with one
//! refresh in flight per connection across the process.
//!
//! Tokens and client secrets are sealed items of the store's vault; rows hold item ids only.
//! A rotated refresh token is written in the same transaction as the new access token.
//!
//! `oauth.rs` (§1.7, §3.7): clients (manual, RFC 7591 dynamic registration reused per issuer +
//! resource + redirect URI), each with its token-endpoint auth method (`client_secret_basic`,
//! preferred when offered, `client_secret_post` or `none`: from the server's metadata for manual
//! clients, the registration answer for registered ones; unknown → Basic, then the body after a
//! refused client), the authorization-code flow (PKCE S256, `state`, RFC 8707 `resource`, sessions
//! of 15 min taken exactly once), client credentials, discovery (the `resource_metadata` of the
//! resource's 401 challenge, then RFC 9728 well-known paths, then RFC 8414/OIDC; a
//! protected-resource document for another resource is refused; a server that challenges without
//! any metadata, MCP 2025-03-26, gets `/authorize`, `/token`, `/register` at its origin; the
//! challenge's `scope` is asked for first), and refresh at call time: when `expires_at <= now + 60
//! s`, under a per-connection async mutex (`RefreshLocks`, one refresh in flight per connection in
//! the process; waiters re-read and reuse its result); the new access token, the rotated refresh
//! token and the expiry are written in one store transaction; `invalid_grant`/`invalid_client`
//! forgets the refresh token and answers `oauth_reauth_required`, other failures
//! `oauth_refresh_failed`. Each slot also counts the token replacements of its connection (an
//! epoch): the dispatcher reads it before a connection's credentials, and when an OAuth call comes
//! back `connection_rejected` 401 it calls `refresh_after_rejection`, which refreshes under the
//! same mutex only if the epoch has not moved (else another call already did), then resolves the
//! connection again and makes the call once more; a 401 means the upstream did nothing, so the
//! retry cannot double an effect. Granted scopes are compared with those asked for (the session
//! payload), the rest stored as missing. `start` without scopes on an MCP integration asks for the
//! scopes its server advertises (RFC 9728, else the AS). The callback's results wait in memory
//! (`CallbackResults`: first result per state, read once, 10 min, at most 1024) for `GET
//! /api/oauth/await/:sessionId`. The client ID metadata documents
//! (`/api/oauth/client-id-metadata.json`, `…/local.json`) are built by `oauth_routes.rs` from the
//! web base URL; they need no engine state.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use executor_core::auth::{AuthMethod, select_method};
use executor_core::{Owner, ToolError, now_ms};
use executor_store::{
    ConnectionKey, ConnectionOAuth, ConnectionRecord, OAuthClientRecord, OAuthSessionRecord, Scope,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::providers::VAULT as DEFAULT_PROVIDER;
use crate::caller::{Caller, RowsKey};
use crate::error::{EngineError, EngineResult};
use crate::kinds::Kind;
use crate::names::connection_path;
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
    /// How the client authenticates at the token endpoint (`client_secret_basic`,
    /// `client_secret_post`, `none`); `None`: read from the authorization server's metadata.
    pub token_endpoint_auth_method: Option<String>,
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
    /// The `scope` of the resource's 401 challenge (RFC 6750 §3): what it asks for now.
    pub challenge_scopes: Option<Vec<String>>,
    pub registration_endpoint: Option<String>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub client_id_metadata_document_supported: Option<bool>,
}

/// Per-connection refresh state: the one refresh in flight per connection in this process, and
/// an epoch that moves whenever the connection's tokens are replaced.
#[derive(Default)]
pub(crate) struct RefreshLocks {
    /// By connection, as everyone who uses it sees it (an org connection's tokens are shared
    /// by the tenant's users, so are its refreshes).
    slots: std::sync::Mutex<HashMap<(RowsKey, ConnectionKey), Arc<RefreshSlot>>>,
}

#[derive(Default)]
struct RefreshSlot {
    lock: tokio::sync::Mutex<()>,
    epoch: AtomicU64,
}

impl RefreshLocks {
    fn slot(&self, caller: &Caller, key: &ConnectionKey) -> Arc<RefreshSlot> {
        let mut map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((caller.owner_key(key.owner), key.clone()))
            .or_default()
            .clone()
    }

    /// How many times this process replaced the connection's tokens. Read before its
    /// credentials are, it tells a caller whose token was refused whether a newer one exists.
    pub(crate) fn epoch(&self, caller: &Caller, key: &ConnectionKey) -> u64 {
        let map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(caller.owner_key(key.owner), key.clone()))
            .map_or(0, |s| s.epoch.load(Ordering::Acquire))
    }

    fn bump(&self, caller: &Caller, key: &ConnectionKey) {
        self.slot(caller, key).epoch.fetch_add(1, Ordering::AcqRel);
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
    /// By session: when it was published, whose flow it was, the result.
    results: std::sync::Mutex<HashMap<String, (std::time::Instant, Scope, Value)>>,
}

impl CallbackResults {
    /// Keeps the first result of a session: a reloaded callback page (whose state is spent by
    /// then) does not replace the outcome that counted.
    fn publish(&self, session: &str, scope: &Scope, result: Value, now: std::time::Instant) {
        let mut map = self.results.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (at, _, _)| now.duration_since(*at) < RESULT_TTL);
        if map.contains_key(session) {
            return;
        }
        if map.len() >= MAX_RESULTS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (at, _, _))| *at)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(session.to_owned(), (now, scope.clone(), result));
    }

    /// The result, once, for the caller whose flow it was.
    fn take(&self, caller: &Caller, session: &str, now: std::time::Instant) -> Option<Value> {
        let mut map = self.results.lock().unwrap_or_else(|p| p.into_inner());
        if !map
            .get(session)
            .is_some_and(|(_, scope, _)| caller.may_act_for(scope))
        {
            return None;
        }
        let (at, _, result) = map.remove(session)?;
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
    /// The HTTP status of the answer, when there was one.
    status: Option<u16>,
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

/// RFC 6749 §2.3.1 client password in the `Authorization` header.
pub(crate) const AUTH_BASIC: &str = "client_secret_basic";
/// RFC 6749 §2.3.1 client password in the request body.
pub(crate) const AUTH_POST: &str = "client_secret_post";
/// A public client: its `client_id` in the body, no secret.
pub(crate) const AUTH_NONE: &str = "none";

/// How a client authenticates at the token endpoint, from what its authorization server
/// supports (`token_endpoint_auth_methods_supported`). `None`: not known (no metadata); the
/// request then tries Basic and falls back to the body.
pub(crate) fn choose_auth_method(
    supported: Option<&[String]>,
    has_secret: bool,
) -> Option<&'static str> {
    if !has_secret {
        return Some(AUTH_NONE);
    }
    let supported = supported?;
    // RFC 8414 §2: an absent list means client_secret_basic.
    if supported.is_empty() {
        return Some(AUTH_BASIC);
    }
    let has = |m: &str| supported.iter().any(|s| s == m);
    // RFC 6749 §2.3.1 recommends Basic over the body when both are offered. A server that
    // lists neither (only `none`, or methods we do not speak) still gets the secret a person
    // gave, in the body, as before: dropping it could only make the request fail.
    Some(if has(AUTH_BASIC) {
        AUTH_BASIC
    } else {
        AUTH_POST
    })
}

/// The client half of a token request.
struct ClientAuth<'a> {
    client_id: &'a str,
    secret: String,
    /// See [`choose_auth_method`]; `None` tries Basic, then the body.
    method: Option<&'a str>,
}

impl<'a> ClientAuth<'a> {
    async fn of(
        inner: &Inner,
        caller: &Caller,
        client: &'a OAuthClientRecord,
    ) -> EngineResult<Self> {
        let secret = client_secret(inner, caller, client).await?;
        let method = match client.token_endpoint_auth_method.as_deref() {
            _ if secret.is_empty() => Some(AUTH_NONE),
            Some(AUTH_BASIC) => Some(AUTH_BASIC),
            Some(AUTH_POST) => Some(AUTH_POST),
            Some(AUTH_NONE) => Some(AUTH_NONE),
            _ => None,
        };
        Ok(Self {
            client_id: &client.client_id,
            secret,
            method,
        })
    }
}

/// A token request authenticated as `auth` says. When the method is not known, Basic first
/// (servers must support it for clients with a password, RFC 6749 §2.3.1), and the body once
/// more if the server refused the client: client authentication is checked before the grant,
/// so the refused request used nothing up.
async fn post_token(
    inner: &Inner,
    token_url: &str,
    auth: &ClientAuth<'_>,
    pairs: &[(&str, &str)],
) -> Result<TokenResponse, TokenError> {
    match auth.method {
        Some(method) => post_token_as(inner, token_url, auth, method, pairs).await,
        None => match post_token_as(inner, token_url, auth, AUTH_BASIC, pairs).await {
            Err(e)
                if e.status == Some(401)
                    || matches!(
                        e.error.as_deref(),
                        Some("invalid_client" | "invalid_request")
                    ) =>
            {
                tracing::debug!(
                    "token endpoint refused client_secret_basic; trying client_secret_post"
                );
                post_token_as(inner, token_url, auth, AUTH_POST, pairs).await
            }
            other => other,
        },
    }
}

async fn post_token_as(
    inner: &Inner,
    token_url: &str,
    auth: &ClientAuth<'_>,
    method: &str,
    pairs: &[(&str, &str)],
) -> Result<TokenResponse, TokenError> {
    inner.check_url(token_url).map_err(|refused| TokenError {
        error: None,
        message: format!("token endpoint refused: {refused}"),
        status: None,
    })?;
    let mut body: Vec<(&str, &str)> = pairs.to_vec();
    let mut request = inner.http().post(token_url);
    match method {
        AUTH_BASIC => {
            // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
            let encode =
                |v: &str| url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
            request = request.basic_auth(encode(auth.client_id), Some(encode(&auth.secret)));
        }
        AUTH_POST => {
            body.push(("client_id", auth.client_id));
            body.push(("client_secret", &auth.secret));
        }
        _ => body.push(("client_id", auth.client_id)),
    }
    let response = request
        .timeout(HTTP_TIMEOUT)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(form(&body))
        .send()
        .await
        .map_err(|e| TokenError {
            error: None,
            message: format!("token endpoint unreachable: {}", unreachable(&e)),
            status: None,
        })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| TokenError {
        error: None,
        message: format!("token endpoint answer unreadable: {e}"),
        status: Some(status.as_u16()),
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
            status: Some(status.as_u16()),
        });
    }
    let value = value.ok_or_else(|| TokenError {
        error: None,
        message: "token endpoint answered with a body that is not JSON".to_owned(),
        status: Some(status.as_u16()),
    })?;
    serde_json::from_value(value).map_err(|e| TokenError {
        error: None,
        message: format!("token endpoint answer has no usable access_token: {e}"),
        status: Some(status.as_u16()),
    })
}

/// Why a request failed, for a person: the address refusal when that is why.
fn unreachable(e: &reqwest::Error) -> String {
    match executor_core::network::AddressNotAllowed::find(e) {
        Some(refused) => refused.to_string(),
        None => e.to_string(),
    }
}

async fn get_json(inner: &Inner, url: &str) -> Option<Value> {
    inner.check_url(url).ok()?;
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

/// The `token_endpoint_auth_methods_supported` of the authorization server whose token
/// endpoint is `token_url` (an empty list when its metadata names none), from the RFC 8414 /
/// OIDC metadata at its origin or under a prefix of its path. `None`: no metadata describes
/// that endpoint.
async fn token_auth_methods(inner: &Inner, token_url: &str) -> Option<Vec<String>> {
    let url = url::Url::parse(token_url).ok()?;
    let origin = url.origin().ascii_serialization();
    let segments: Vec<&str> = url.path().trim_matches('/').split('/').collect();
    let mut candidates = Vec::new();
    // Issuers at the origin and at each path prefix of the endpoint, longest first, at most 3.
    for n in (0..segments.len()).rev().take(3) {
        let issuer = url::Url::parse(&format!("{origin}/{}", segments[..n].join("/"))).ok()?;
        candidates.push(well_known(&issuer, "oauth-authorization-server"));
        candidates.push(well_known(&issuer, "openid-configuration"));
    }
    for candidate in candidates {
        let Some(meta) = get_json(inner, &candidate).await else {
            continue;
        };
        if meta.get("token_endpoint").and_then(Value::as_str) != Some(token_url) {
            continue;
        }
        return Some(
            strings(meta.get("token_endpoint_auth_methods_supported")).unwrap_or_default(),
        );
    }
    None
}

/// What a protected resource's unauthenticated answer said (`WWW-Authenticate`, RFC 6750 /
/// RFC 9728 §5.1). Present only when it answered 401 (or 403).
#[derive(Debug, Default)]
struct ResourceChallenge {
    resource_metadata: Option<String>,
    scope: Option<String>,
}

/// Asks `url` what it wants, as an MCP client's first request would (an `initialize` POST with
/// no credentials). A server that lets it through gets its session closed again.
async fn resource_challenge(inner: &Inner, url: &url::Url) -> Option<ResourceChallenge> {
    inner.check_url(url.as_str()).ok()?;
    let initialize = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": executor_mcp::CLIENT_NAME, "version": executor_mcp::CLIENT_VERSION},
        },
    });
    let response = inner
        .http()
        .post(url.as_str())
        .timeout(HTTP_TIMEOUT)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    if !matches!(status, 401 | 403) {
        if let Some(session) = response.headers().get("mcp-session-id").cloned() {
            let _ = inner
                .http()
                .delete(url.as_str())
                .timeout(HTTP_TIMEOUT)
                .header("mcp-session-id", session)
                .send()
                .await;
        }
        return None;
    }
    let mut challenge = ResourceChallenge::default();
    for header in response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
    {
        let Ok(text) = header.to_str() else { continue };
        if !text.trim_start().to_ascii_lowercase().starts_with("bearer") {
            continue;
        }
        challenge.resource_metadata = challenge
            .resource_metadata
            .or_else(|| executor_mcp::challenge_param(text, "resource_metadata"));
        challenge.scope = challenge
            .scope
            .or_else(|| executor_mcp::challenge_param(text, "scope"));
    }
    Some(challenge)
}

/// Whether the protected-resource metadata's `resource` names the server at `target`: the same
/// origin, and a path that is the target's or a parent of it at a segment boundary (RFC 9728
/// §3.3, as MCP clients check it).
fn resource_covers(resource: &str, target: &url::Url) -> bool {
    let Ok(resource) = url::Url::parse(resource) else {
        return false;
    };
    if resource.origin() != target.origin() {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let path = target.path().trim_end_matches('/');
    path == parent || path.starts_with(&format!("{parent}/"))
}

// ---- the tool-level errors of §4.3 -------------------------------------------------------

fn auth_tool_error(key: &ConnectionKey, code: &str, message: String) -> Box<ToolError> {
    Box::new(
        ToolError::new(code, message)
            .with_retryable(false)
            .with_details(json!({
                "category": "authentication",
                "integration": key.integration,
                "credential": connection_path(key),
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
            connection_path(key)
        ),
    )
}

// ---- call time ---------------------------------------------------------------------------

/// Makes sure an OAuth connection's access token is not about to expire, refreshing it when it
/// expires within [`REFRESH_WINDOW_MS`]. One refresh per connection runs at a time in this
/// process; calls that waited for it use its result.
pub(crate) async fn ensure_fresh(
    inner: &Inner,
    caller: &Caller,
    key: &ConnectionKey,
) -> EngineResult<Result<(), Box<ToolError>>> {
    let due = |oauth: &ConnectionOAuth| {
        oauth
            .expires_at
            .is_some_and(|at| at <= now_ms() + REFRESH_WINDOW_MS)
    };
    let Some(oauth) = inner
        .store
        .get_connection_oauth(caller.scope(), key)
        .await?
    else {
        return Err(crate::error::connection_not_found(key));
    };
    if !due(&oauth) {
        return Ok(Ok(()));
    }
    let slot = inner.oauth_refresh.slot(caller, key);
    let _guard = slot.lock.lock().await;
    // Replicas sharing the database: one refresh among them too.
    let shared = inner.store.lock_token_refresh(caller.scope(), key).await?;
    // Whoever held a lock may have refreshed already.
    let result = match inner.store.get_connection_oauth(caller.scope(), key).await {
        Ok(Some(oauth)) if due(&oauth) => refresh(inner, caller, key, oauth).await,
        Ok(Some(_)) => Ok(Ok(())),
        Ok(None) => Err(crate::error::connection_not_found(key)),
        Err(e) => Err(e.into()),
    };
    shared.release().await;
    result
}

/// An upstream answered 401 to an access token we took for valid (revoked, replaced by another
/// sign-in of the same grant, a clock that drifts). Refreshes it, unless the tokens were
/// replaced since the caller read its credentials (`seen_epoch`): then the caller only retries,
/// so a burst of refusals costs one refresh. `Ok(None)`: the connection has no OAuth client to
/// refresh with, and the refusal stands.
pub(crate) async fn refresh_after_rejection(
    inner: &Inner,
    caller: &Caller,
    key: &ConnectionKey,
    seen_epoch: u64,
) -> EngineResult<Option<Result<(), Box<ToolError>>>> {
    let refreshable = || async {
        EngineResult::Ok(
            inner
                .store
                .get_connection_oauth(caller.scope(), key)
                .await?
                .filter(|o| o.client.is_some() && o.client_owner.is_some()),
        )
    };
    if refreshable().await?.is_none() {
        return Ok(None);
    }
    let slot = inner.oauth_refresh.slot(caller, key);
    let _guard = slot.lock.lock().await;
    if slot.epoch.load(Ordering::Acquire) != seen_epoch {
        return Ok(Some(Ok(())));
    }
    let shared = inner.store.lock_token_refresh(caller.scope(), key).await?;
    let result = match refreshable().await {
        Ok(Some(oauth)) => {
            tracing::info!(integration = %key.integration, connection = %key.name, "upstream refused the access token; refreshing it");
            refresh(inner, caller, key, oauth).await.map(Some)
        }
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    shared.release().await;
    result
}

async fn refresh(
    inner: &Inner,
    caller: &Caller,
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
        .get_oauth_client(caller.scope(), client_owner, &client_slug)
        .await?
    else {
        return Ok(Err(reauth_required(
            key,
            &format!("its token expired and its OAuth client {client_slug:?} no longer exists."),
        )));
    };
    let auth = ClientAuth::of(inner, caller, &client).await?;
    let token_url = oauth.token_url.clone().unwrap_or(client.token_url.clone());
    let resource = client.resource.clone().unwrap_or_default();
    let refresh_token = match &oauth.refresh_item_id {
        Some(item) => {
            inner
                .store
                .get_secret(caller.scope(), key.owner, item)
                .await?
        }
        None => None,
    };
    let result = if client.grant == GRANT_CLIENT_CREDENTIALS {
        post_token(
            inner,
            &token_url,
            &auth,
            &[
                ("grant_type", GRANT_CLIENT_CREDENTIALS),
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
            &auth,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("resource", &resource),
            ],
        )
        .await
    };
    match result {
        Ok(tokens) => {
            let mut next = oauth.clone();
            store_tokens(inner, caller, key, &mut next, tokens, None).await?;
            tracing::info!(integration = %key.integration, connection = %key.name, "oauth token refreshed");
            Ok(Ok(()))
        }
        Err(e) if e.is_permanent() => {
            tracing::warn!(integration = %key.integration, connection = %key.name, error = %e.message, "oauth refresh rejected; re-authorisation required");
            // Forget the dead refresh token, so later calls fail at once without asking the
            // server again.
            let mut next = oauth.clone();
            if let Some(item) = next.refresh_item_id.take() {
                inner
                    .store
                    .delete_secret(caller.scope(), key.owner, &item)
                    .await?;
            }
            inner
                .store
                .save_oauth_tokens(caller.scope(), key, &[], &next)
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
                connection_path(key),
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
    caller: &Caller,
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
        .save_oauth_tokens(caller.scope(), key, &secrets, oauth)
        .await?;
    inner.oauth_refresh.bump(caller, key);
    Ok(())
}

fn item_prefix(key: &ConnectionKey) -> String {
    format!("connection:{}:{}:{}", key.owner, key.integration, key.name)
}

fn client_secret_item(owner: Owner, slug: &str) -> String {
    format!("oauth-client:{owner}:{slug}:secret")
}

async fn client_secret(
    inner: &Inner,
    caller: &Caller,
    client: &OAuthClientRecord,
) -> EngineResult<String> {
    Ok(match &client.client_secret_item_id {
        Some(item) => inner
            .store
            .get_secret(caller.scope(), client.owner, item)
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
    pub async fn list_oauth_clients(&self, caller: &Caller) -> EngineResult<Vec<OAuthClientView>> {
        Ok(self.inner.store.list_oauth_clients(caller.scope()).await?)
    }

    /// Upserts a manual client; the secret goes to the vault.
    pub async fn put_oauth_client(
        &self,
        caller: &Caller,
        input: OAuthClientInput,
    ) -> EngineResult<String> {
        self.ensure_may_write(caller, Some(input.owner), "add workspace OAuth apps")
            .await?;
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
        let has_secret = input
            .client_secret
            .as_deref()
            .is_some_and(|s| !s.is_empty());
        let auth_method = match input
            .token_endpoint_auth_method
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            Some(m @ (AUTH_BASIC | AUTH_POST | AUTH_NONE)) => Some(m.to_owned()),
            Some(other) => {
                return Err(EngineError::InvalidInput {
                    message: format!(
                        "tokenEndpointAuthMethod must be \"client_secret_basic\", \"client_secret_post\" or \"none\", not {other:?}."
                    ),
                });
            }
            None if !has_secret => Some(AUTH_NONE.to_owned()),
            None => {
                let supported = token_auth_methods(&self.inner, input.token_url.trim()).await;
                choose_auth_method(supported.as_deref(), true).map(str::to_owned)
            }
        };
        let secret_item = self
            .save_client_secret(caller, input.owner, &slug, input.client_secret.as_deref())
            .await?;
        self.inner
            .store
            .upsert_oauth_client(
                caller.scope(),
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
                    token_endpoint_auth_method: auth_method,
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
        caller: &Caller,
        owner: Owner,
        slug: &str,
        secret: Option<&str>,
    ) -> EngineResult<Option<String>> {
        let item = client_secret_item(owner, slug);
        match secret.filter(|s| !s.is_empty()) {
            Some(secret) => {
                self.inner
                    .store
                    .put_secret(caller.scope(), owner, &item, secret)
                    .await?;
                Ok(Some(item))
            }
            None => {
                self.inner
                    .store
                    .delete_secret(caller.scope(), owner, &item)
                    .await?;
                Ok(None)
            }
        }
    }

    /// Idempotent. Connections that use the client keep working until their next refresh.
    pub async fn remove_oauth_client(
        &self,
        caller: &Caller,
        owner: Owner,
        slug: &str,
    ) -> EngineResult<bool> {
        self.ensure_may_write(caller, Some(owner), "remove workspace OAuth apps")
            .await?;
        let removed = self
            .inner
            .store
            .delete_oauth_client(caller.scope(), owner, slug)
            .await?;
        self.inner
            .store
            .delete_secret(caller.scope(), owner, &client_secret_item(owner, slug))
            .await?;
        Ok(removed)
    }

    /// RFC 7591 registration, reusing a client registered for the same issuer, resource and
    /// redirect URI. Returns the client's slug.
    pub async fn register_dynamic_client(
        &self,
        caller: &Caller,
        input: RegisterDynamicClient,
    ) -> EngineResult<String> {
        self.ensure_may_write(caller, Some(input.owner), "add workspace OAuth apps")
            .await?;
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
        let existing = self.list_oauth_clients(caller).await?;
        if let Some(reusable) = existing.iter().find(|c| {
            c.owner == input.owner
                && c.origin_kind == ORIGIN_DCR
                && c.origin_issuer.as_deref() == Some(issuer.as_str())
                && c.resource == resource
                && c.origin_redirect_uri.as_deref() == Some(input.redirect_uri.as_str())
        }) {
            return Ok(reusable.slug.clone());
        }
        // A public client (PKCE) where the server takes one or says nothing; else a secret,
        // in the header when the server offers it (RFC 6749 §2.3.1).
        let auth_method = match &input.token_endpoint_auth_methods_supported {
            None => AUTH_NONE,
            Some(methods) if methods.is_empty() || methods.iter().any(|m| m == AUTH_NONE) => {
                AUTH_NONE
            }
            Some(methods) if methods.iter().any(|m| m == AUTH_BASIC) => AUTH_BASIC,
            Some(_) => AUTH_POST,
        };
        let body = json!({
            "client_name": input.client_name.clone().unwrap_or_else(|| "Executor".to_owned()),
            "redirect_uris": [input.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method,
            "scope": input.scopes.join(" "),
        });
        self.inner.check_url(endpoint.as_str()).map_err(|refused| {
            oauth_error(
                "OAuthRegistrationError",
                format!("Dynamic client registration failed: {refused}"),
            )
        })?;
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
                    format!("Dynamic client registration failed: {}", unreachable(&e)),
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
        // The server has the last word on how the client authenticates (RFC 7591 §3.2.1).
        let auth_method = match answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
        {
            Some(m @ (AUTH_BASIC | AUTH_POST | AUTH_NONE)) => m,
            _ => auth_method,
        };
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
            .save_client_secret(caller, input.owner, &slug, secret.as_deref())
            .await?;
        self.inner
            .store
            .upsert_oauth_client(
                caller.scope(),
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
                    token_endpoint_auth_method: Some(auth_method.to_owned()),
                    created_at: 0,
                    updated_at: 0,
                },
            )
            .await?;
        Ok(slug)
    }

    /// Where to authorise for `url`: the protected-resource metadata (RFC 9728) its 401
    /// challenge names, else the well-known ones, then the RFC 8414 / OIDC metadata of its
    /// authorization server; for a server that challenges but publishes no metadata at all
    /// (MCP 2025-03-26), the default `/authorize`, `/token` and `/register` at its origin.
    /// A protected-resource document for another resource is refused: following it would send
    /// the person's grant (and the token's audience) to whoever wrote it.
    pub async fn probe_oauth(&self, caller: &Caller, url: &str) -> EngineResult<OAuthProbe> {
        check_url("url", url)?;
        // A member may look up the sign-in endpoints of an MCP server in the catalog only.
        self.ensure_may_probe(caller, url, true).await?;
        self.discover_oauth(url).await
    }

    /// [`Self::probe_oauth`] without asking who wants to know (the engine's own lookups).
    pub(crate) async fn discover_oauth(&self, url: &str) -> EngineResult<OAuthProbe> {
        let target = check_url("url", url)?;
        let inner = &self.inner;
        let challenge = resource_challenge(inner, &target).await;
        let mut resource = None;
        let mut scopes = None;
        let mut issuer = target.clone();
        let mut found_resource_metadata = false;
        let origin = url::Url::parse(&format!("{}/", target.origin().ascii_serialization()))
            .unwrap_or_else(|_| target.clone());
        let mut candidates: Vec<String> = challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.as_deref())
            .and_then(|m| target.join(m).ok())
            .filter(|m| matches!(m.scheme(), "http" | "https"))
            .map(|m| m.to_string())
            .into_iter()
            .collect();
        candidates.push(well_known(&target, "oauth-protected-resource"));
        candidates.push(well_known(&origin, "oauth-protected-resource"));
        candidates.dedup();
        for candidate in candidates {
            if let Some(meta) = get_json(inner, &candidate).await
                && let Some(server) = meta
                    .get("authorization_servers")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                && let Ok(server) = url::Url::parse(server)
            {
                let declared = meta
                    .get("resource")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(declared) = &declared
                    && !resource_covers(declared, &target)
                {
                    // Without its query: an endpoint's query may carry a credential.
                    let mut shown = target.clone();
                    shown.set_query(None);
                    return Err(oauth_error(
                        "OAuthProbeError",
                        format!(
                            "The protected-resource metadata at {candidate} is for {declared:?}, \
                             not for {shown}: refusing to authorise against it (RFC 9728 §3.3)."
                        ),
                    ));
                }
                resource = declared;
                scopes = strings(meta.get("scopes_supported"));
                issuer = server;
                found_resource_metadata = true;
                break;
            }
        }
        let challenge_scopes = challenge
            .as_ref()
            .and_then(|c| c.scope.as_deref())
            .map(|s| {
                s.split_whitespace()
                    .take(MAX_SCOPES)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty());
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
                challenge_scopes,
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
        // MCP 2025-03-26 §2.3.3: a server without metadata has its endpoints at default paths
        // of its origin. Only for a URL that challenged us (a protected resource) and named no
        // resource metadata: a newer server that does is misconfigured, not old.
        if !found_resource_metadata
            && challenge
                .as_ref()
                .is_some_and(|c| c.resource_metadata.is_none())
        {
            let base = target.origin().ascii_serialization();
            return Ok(OAuthProbe {
                issuer: None,
                authorization_url: format!("{base}/authorize"),
                token_url: format!("{base}/token"),
                resource,
                scopes_supported: scopes,
                challenge_scopes,
                registration_endpoint: Some(format!("{base}/register")),
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: None,
            });
        }
        Err(oauth_error(
            "OAuthProbeError",
            format!("No OAuth authorization server metadata found for {url}."),
        ))
    }

    /// Starts a flow: client credentials mint the connection at once; authorization code
    /// answers with the URL to send a person to.
    pub async fn start_oauth(
        &self,
        caller: &Caller,
        input: OAuthStart,
    ) -> EngineResult<OAuthStarted> {
        self.ensure_may_write(caller, Some(input.owner), "create workspace connections")
            .await?;
        let client = self
            .inner
            .store
            .get_oauth_client(caller.scope(), input.client_owner, &input.client)
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
            .check_oauth_template(caller, &input.integration, &input.template)
            .await?;
        if input.owner == Owner::User && caller.scope().subject.is_none() {
            return Err(EngineError::InvalidConnectionInput {
                message: "Cannot create a personal connection: this context has no user subject."
                    .to_owned(),
            });
        }
        let name = crate::names::connection_name(&input.name)?;
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
            let auth = ClientAuth::of(&self.inner, caller, &client).await?;
            let tokens = post_token(
                &self.inner,
                &client.token_url,
                &auth,
                &[
                    ("grant_type", GRANT_CLIENT_CREDENTIALS),
                    ("scope", &scope),
                    ("resource", &resource),
                ],
            )
            .await
            .map_err(|e| oauth_error("OAuthStartError", e.message))?;
            let connection = self
                .mint_connection(
                    caller,
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
                caller.scope(),
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
    pub async fn complete_oauth(
        &self,
        caller: &Caller,
        state: &str,
        code: &str,
    ) -> EngineResult<OAuthConnection> {
        let session = self
            .inner
            .store
            .take_oauth_session(caller.scope(), state)
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
            .get_oauth_client(caller.scope(), session.client_owner, &session.client_slug)
            .await?
            .ok_or_else(|| {
                oauth_error(
                    "OAuthCompleteError",
                    format!("The OAuth client {:?} was removed.", session.client_slug),
                )
            })?;
        let auth = ClientAuth::of(&self.inner, caller, &client).await?;
        let resource = client.resource.clone().unwrap_or_default();
        let tokens = post_token(
            &self.inner,
            &client.token_url,
            &auth,
            &[
                ("grant_type", GRANT_AUTHORIZATION_CODE),
                ("code", code),
                ("redirect_uri", &session.redirect_url),
                ("code_verifier", &session.pkce_verifier),
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
            caller,
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
    /// Only the same caller reads it back.
    pub fn publish_oauth_result(&self, caller: &Caller, session_id: &str, result: Value) {
        if session_id.is_empty() {
            return;
        }
        self.inner.oauth_results.publish(
            session_id,
            caller.scope(),
            result,
            std::time::Instant::now(),
        );
    }

    /// The published result of a flow, once: `None` when there is none (yet), it was read
    /// already, or it is older than ten minutes.
    pub fn take_oauth_result(&self, caller: &Caller, session_id: &str) -> Option<Value> {
        self.inner
            .oauth_results
            .take(caller, session_id, std::time::Instant::now())
    }

    /// Drops a pending session (idempotent).
    pub async fn cancel_oauth(&self, caller: &Caller, state: &str) -> EngineResult<()> {
        self.inner
            .store
            .take_oauth_session(caller.scope(), state)
            .await?;
        Ok(())
    }

    /// The OAuth columns of a connection (`None` when it does not exist).
    pub async fn connection_oauth(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<Option<ConnectionOAuth>> {
        Ok(self
            .inner
            .store
            .get_connection_oauth(caller.scope(), key)
            .await?)
    }

    /// Marks a connection's access token as expired, so the next call refreshes it.
    pub async fn expire_oauth_token(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<()> {
        let mut oauth = self
            .connection_oauth(caller, key)
            .await?
            .ok_or_else(|| crate::error::connection_not_found(key))?;
        oauth.expires_at = Some(now_ms());
        self.inner
            .store
            .save_oauth_tokens(caller.scope(), key, &[], &oauth)
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
        if integration.plugin_id != crate::kinds::mcp::PLUGIN_ID {
            return Vec::new();
        }
        let Some(endpoint) = crate::kinds::mcp::display_url(&integration.config) else {
            return Vec::new();
        };
        // What the server's challenge asks for, else what it supports (MCP scope selection).
        match self.discover_oauth(&endpoint).await {
            Ok(probe) => probe
                .challenge_scopes
                .or(probe.scopes_supported)
                .unwrap_or_default(),
            Err(e) => {
                tracing::debug!(integration = %integration.slug, error = %e, "no OAuth scopes discovered");
                Vec::new()
            }
        }
    }

    async fn check_oauth_template(
        &self,
        caller: &Caller,
        integration: &str,
        template: &str,
    ) -> EngineResult<executor_store::IntegrationRecord> {
        let record = self.integration_record(caller, integration).await?;
        let methods = Kind::of(&record.plugin_id)
            .map(|kind| kind.auth_methods(&record.config))
            .unwrap_or_default();
        match methods.iter().find(|m| m.slug() == template) {
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
        caller: &Caller,
        client: &OAuthClientRecord,
        owner: Owner,
        integration: &str,
        name: &str,
        template: &str,
        identity_label: Option<String>,
        tokens: TokenResponse,
        requested: &[String],
    ) -> EngineResult<OAuthConnection> {
        let integration_record = self.integration_record(caller, integration).await?;
        let key = ConnectionKey::new(owner, integration, name);
        let access_item = format!("{}:token", item_prefix(&key));
        // The refresh token's item is listed too, so removing the connection deletes it.
        let refresh_item = format!("{}:refresh_token", item_prefix(&key));
        let now = now_ms();
        self.inner
            .store
            .upsert_connection(
                caller.scope(),
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
        store_tokens(
            &self.inner,
            caller,
            &key,
            &mut oauth,
            tokens,
            Some(requested),
        )
        .await?;
        self.close_connection_sessions(caller, &key).await;
        self.produce_tools(caller, &integration_record, &key)
            .await?;
        self.catalog_changed();
        Ok(OAuthConnection {
            connection: self.get_connection(caller, &key).await?,
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
    fn callback_results_are_read_once_by_their_caller_and_expire() {
        let results = CallbackResults::default();
        let me = Caller::local("t");
        let other = Caller::local("u");
        let t0 = std::time::Instant::now();
        results.publish("s1", me.scope(), json!({"ok": true}), t0);
        // The first result of a session counts.
        results.publish("s1", me.scope(), json!({"ok": false}), t0);
        assert_eq!(results.take(&other, "s1", t0), None, "another tenant's");
        assert_eq!(results.take(&me, "s1", t0), Some(json!({"ok": true})));
        assert_eq!(results.take(&me, "s1", t0), None);
        results.publish("s2", me.scope(), json!({"ok": true}), t0);
        assert_eq!(results.take(&me, "s2", t0 + RESULT_TTL), None, "expired");
        results.publish("s3", me.scope(), json!(1), t0);
        // Publishing later sweeps the expired ones.
        results.publish("s4", me.scope(), json!(2), t0 + RESULT_TTL);
        assert_eq!(results.results.lock().unwrap().len(), 1);
    }

    #[test]
    fn the_auth_method_follows_what_the_server_supports() {
        let list = |m: &[&str]| m.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let both = list(&[AUTH_POST, AUTH_BASIC]);
        assert_eq!(choose_auth_method(Some(&both), true), Some(AUTH_BASIC));
        let post = list(&[AUTH_POST, AUTH_NONE]);
        assert_eq!(choose_auth_method(Some(&post), true), Some(AUTH_POST));
        assert_eq!(choose_auth_method(Some(&[]), true), Some(AUTH_BASIC));
        assert_eq!(choose_auth_method(None, true), None);
        assert_eq!(choose_auth_method(Some(&both), false), Some(AUTH_NONE));
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(resource_covers(
            "https://a.example/mcp",
            &u("https://a.example/mcp")
        ));
        assert!(resource_covers(
            "https://a.example/",
            &u("https://a.example/mcp")
        ));
        assert!(resource_covers(
            "https://a.example/mcp/",
            &u("https://a.example/mcp/x")
        ));
        assert!(!resource_covers(
            "https://a.example/mc",
            &u("https://a.example/mcp")
        ));
        assert!(!resource_covers(
            "https://evil.example.com/mcp",
            &u("https://a.example/mcp")
        ));
        assert!(!resource_covers(
            "http://a.example/mcp",
            &u("https://a.example/mcp")
        ));
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
