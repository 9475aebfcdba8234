//! The team server's front door (issue #24, `docs/team/API.md`): who each request is (a
//! session cookie, or a bearer that is a session token, an API key, or an OAuth access token
//! on the MCP resource it was issued for), what it may reach without signing in, the origin
//! check of cookie-signed writes, and the audit line of every change made over the API.
//!
//! The routes of accounts, invites, members, API keys and the audit log are in `routes.rs`;
//! the OAuth authorization server, the consent API and the device login in `oauth.rs`.

pub(crate) mod oauth;
pub(crate) mod routes;

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use executor_accounts::{Accounts, Identity, KeyScope, Via};
use executor_engine::{AuditEntry, Caller, Engine, Principal};
use serde_json::{Value, json};

pub(crate) use routes::api_router;

/// The cookie a browser is signed in by.
pub(crate) const SESSION_COOKIE: &str = "executor_session";

/// What the team's routes and middleware share.
#[derive(Clone)]
pub(crate) struct Team {
    pub(crate) accounts: Accounts,
    pub(crate) engine: Engine,
    /// `scheme://host[:port]` of the base URL: the only origin cookie-signed writes may come from.
    origin: String,
    /// Cookies are `Secure` behind https.
    secure: bool,
}

impl Team {
    pub(crate) fn new(accounts: Accounts, engine: Engine) -> Self {
        let (origin, secure) = match url::Url::parse(accounts.base_url()) {
            Ok(url) => (url.origin().ascii_serialization(), url.scheme() == "https"),
            Err(_) => (accounts.base_url().to_owned(), false),
        };
        Team {
            accounts,
            engine,
            origin,
            secure,
        }
    }

    /// The host (and port) of the base URL, which `/mcp`'s DNS-rebinding check must accept.
    pub(crate) fn host(&self) -> Option<String> {
        let url = url::Url::parse(self.accounts.base_url()).ok()?;
        let host = url.host_str()?;
        Some(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        })
    }

    /// `Set-Cookie` of a new session.
    pub(crate) fn session_cookie(&self, token: &str, max_age: u64) -> HeaderValue {
        let cookie = cookie::Cookie::build((SESSION_COOKIE, token.to_owned()))
            .http_only(true)
            .same_site(cookie::SameSite::Lax)
            .path("/")
            .secure(self.secure)
            .max_age(cookie::time::Duration::seconds(max_age as i64))
            .build();
        HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// `Set-Cookie` that ends the session cookie.
    pub(crate) fn cleared_cookie(&self) -> HeaderValue {
        let cookie = cookie::Cookie::build((SESSION_COOKIE, ""))
            .http_only(true)
            .same_site(cookie::SameSite::Lax)
            .path("/")
            .secure(self.secure)
            .max_age(cookie::time::Duration::ZERO)
            .build();
        HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    fn caller_of(&self, identity: &Identity) -> Caller {
        let principal = match identity.via {
            Via::Session => Principal::UserSession,
            Via::ApiKey { .. } => Principal::ApiKey,
            Via::OAuth { .. } => Principal::AgentToken,
        };
        Caller::member(
            self.accounts.organisation().slug.clone(),
            identity.user.id.clone(),
            &identity.user.email,
            principal,
        )
    }

    /// A request nobody signed: a member of no role with no rows of their own, so a public
    /// route that reached the engine could neither see personal rows nor write.
    fn anonymous(&self) -> Caller {
        Caller::member(
            self.accounts.organisation().slug.clone(),
            "",
            "",
            Principal::UserSession,
        )
    }
}

/// The client's address, for the sign-in limits: the socket's peer, or behind a proxy on the
/// same machine (nginx on loopback) the last address it added to `X-Forwarded-For`.
#[derive(Clone, Debug)]
pub(crate) struct ClientAddress(pub(crate) Option<String>);

fn client_address(request: &Request) -> Option<String> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())?;
    if peer.is_loopback()
        && let Some(forwarded) = request
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    {
        return Some(forwarded.to_owned());
    }
    Some(peer.to_string())
}

/// Paths anyone may reach on the team server.
fn is_public(path: &str, method: &Method) -> bool {
    let get = method == Method::GET || method == Method::HEAD;
    if !(path == "/api" || path.starts_with("/api/") || path == "/mcp" || path.starts_with("/mcp/"))
    {
        // The console's files and the OAuth documents under /.well-known.
        return true;
    }
    let readable = matches!(
        path,
        "/api/health"
            | "/api/health/ready"
            | "/api/openapi.json"
            | "/api/docs"
            | "/api/setup-status"
            | "/api/auth/cli-login"
    ) || path.starts_with("/api/invite-status/")
        || path.starts_with("/api/oauth/client-id-metadata");
    (get && readable)
        || matches!(
            path,
            "/api/auth/sign-up/email"
                | "/api/auth/sign-in/email"
                | "/api/auth/sign-out"
                | "/api/auth/device/code"
                | "/api/auth/device/token"
                | "/api/auth/mcp/register"
                | "/api/auth/mcp/authorize"
                | "/api/auth/mcp/token"
                | "/api/auth/mcp/revoke"
        )
}

/// What a key of the `agent` scope reaches: MCP, executions, and the tool API an agent (or the
/// CLI's `call`, `resume`, `tools`, `whoami`) uses.
fn agent_may_reach(path: &str, method: &Method) -> bool {
    let read = method == Method::GET || method == Method::HEAD;
    mcp_resource(path).is_some()
        || path == "/api/executions"
        || path.starts_with("/api/executions/")
        || (read && (path == "/api/tools" || path.starts_with("/api/tools/")))
        || (read && path == "/api/account/me")
        || path == "/api/auth/sign-out"
}

fn session_cookie_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value().to_owned())
}

/// The MCP resource a path is (`/mcp` or `/mcp/toolkits/<slug>`), if it is one.
fn mcp_resource(path: &str) -> Option<&str> {
    if path == "/mcp" {
        return Some(path);
    }
    let slug = path.strip_prefix("/mcp/toolkits/")?;
    (!slug.is_empty() && !slug.contains('/')).then_some(path)
}

fn is_state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a cookie-signed write came from the base URL's own pages.
fn same_origin(team: &Team, headers: &HeaderMap) -> bool {
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        return origin == team.origin;
    }
    headers
        .get(header::REFERER)
        .and_then(|v| v.to_str().ok())
        .and_then(|r| url::Url::parse(r).ok())
        .is_some_and(|u| u.origin().ascii_serialization() == team.origin)
}

fn tagged(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn unauthorized(team: &Team, path: &str) -> Response {
    if let Some(resource) = mcp_resource(path) {
        let metadata = format!(
            "{}/.well-known/oauth-protected-resource{resource}",
            team.accounts.base_url()
        );
        let challenge = format!("Bearer resource_metadata=\"{metadata}\"");
        let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Unauthorized: sign in with OAuth, or send an API key as a bearer token."}});
        let mut response = tagged(StatusCode::UNAUTHORIZED, body);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        return response;
    }
    let tag = if path.starts_with("/api/admin/") {
        "AdminUnauthorized"
    } else {
        "AccountUnauthorized"
    };
    tagged(
        StatusCode::UNAUTHORIZED,
        json!({"_tag": tag, "message": "Sign in first: a session, or an API key as a bearer token."}),
    )
}

/// The team server's front door: resolves the identity, enforces sign-in outside the public
/// paths, checks cookie-signed writes' origin, and puts the engine `Caller` in the request.
pub(crate) async fn front_door(
    State(team): State<Team>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let address = client_address(&request);
    request.extensions_mut().insert(ClientAddress(address));
    let from_bearer = crate::auth::bearer(request.headers()).map(str::to_owned);
    let from_cookie = session_cookie_of(request.headers());
    let (token, by_cookie) = match (from_bearer, from_cookie) {
        (Some(t), _) => (Some(t), false),
        (None, Some(c)) => (Some(c), true),
        (None, None) => (None, false),
    };
    let mut identity = match &token {
        Some(token) => match team.accounts.authenticate(token).await {
            Ok(found) => found,
            Err(e) => {
                let (status, body) = crate::error::internal(&e.to_string());
                return tagged(status, body);
            }
        },
        None => None,
    };
    // A cookie carries only sessions; an OAuth access token opens only the MCP resource it was
    // issued for.
    identity = identity.filter(|id| match &id.via {
        Via::Session => true,
        Via::ApiKey { .. } => !by_cookie,
        Via::OAuth { resource } => {
            !by_cookie
                && mcp_resource(&path).is_some_and(|r| {
                    resource.as_deref() == Some(&format!("{}{r}", team.accounts.base_url()))
                })
        }
    });
    if identity.is_none() && !is_public(&path, &method) {
        // A signed-out browser coming back from an OAuth provider signs in first, then lands
        // where it was going.
        if path.starts_with("/api/oauth/callback") && method == Method::GET {
            let back = request
                .uri()
                .path_and_query()
                .map(|pq| pq.as_str().to_owned())
                .unwrap_or(path.clone());
            let location = format!(
                "/login?returnTo={}",
                url::form_urlencoded::byte_serialize(back.as_bytes()).collect::<String>()
            );
            return Response::builder()
                .status(StatusCode::FOUND)
                .header(header::LOCATION, location)
                .body(Body::empty())
                .unwrap_or_else(|_| StatusCode::FOUND.into_response());
        }
        return unauthorized(&team, &path);
    }
    if let Some(Identity {
        via: Via::ApiKey {
            scope: KeyScope::Agent,
        },
        ..
    }) = &identity
        && !agent_may_reach(&path, &method)
    {
        return tagged(
            StatusCode::FORBIDDEN,
            json!({"_tag": "ApiKeyScopeError", "message": "This API key has the agent scope: it reaches /mcp, executions and the tool API. Use a key of the workspace scope, or sign in.", "scope": "agent"}),
        );
    }
    if by_cookie
        && identity.is_some()
        && is_state_changing(&method)
        && !same_origin(&team, request.headers())
    {
        return tagged(
            StatusCode::FORBIDDEN,
            json!({"_tag": "InvalidOriginError", "message": format!("A signed-in browser may change things only from {}.", team.origin)}),
        );
    }
    let caller = match &identity {
        Some(identity) => team.caller_of(identity),
        None => team.anonymous(),
    };
    request.extensions_mut().insert(caller);
    if let Some(identity) = identity {
        // What an MCP session it opens is bound to: the grant, key or sign-in, not the token
        // string (a refreshed access token of the grant keeps its sessions).
        request
            .extensions_mut()
            .insert(crate::mcp::SessionCredential::of_identity(
                &identity.credential(),
            ));
        request.extensions_mut().insert(identity);
    }
    next.run(request).await
}

/// Routes whose changes are recorded elsewhere: the accounts service logs its own (with the
/// right before and after), the engine logs policies and every tool call.
fn audited_elsewhere(path: &str) -> bool {
    path.starts_with("/api/auth/")
        || path.starts_with("/api/account/")
        || path.starts_with("/api/admin/")
        || path.starts_with("/api/policies")
        || path.starts_with("/api/executions")
        || path.starts_with("/api/oauth/callback")
}

/// A route as an audit action: its fixed segments, dotted, and the verb
/// (`DELETE /api/connections/{owner}/{integration}/{name}` → `connections.remove`).
fn action_name(method: &Method, route: &str) -> String {
    let verb = match *method {
        Method::POST => "create",
        Method::DELETE => "remove",
        _ => "update",
    };
    let mut parts: Vec<&str> = route
        .trim_start_matches("/api/")
        .split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    parts.push(verb);
    parts.join(".")
}

/// Largest answer kept as an audit event's `after`.
const MAX_AUDITED_BODY: usize = 64 * 1024;

/// Every change a member makes over the API (a state-changing request that succeeded, or was
/// refused for their role) becomes an audit event: the route as action, the path as target,
/// the answer as after (answers of the API carry no secrets; request bodies may, and are not
/// kept).
pub(crate) async fn audit_changes(
    State(team): State<Team>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    if !is_state_changing(&method) || !path.starts_with("/api/") || audited_elsewhere(&path) {
        return next.run(request).await;
    }
    let Some(caller) = request.extensions().get::<Caller>().cloned() else {
        return next.run(request).await;
    };
    if caller.member_email().is_none_or(str::is_empty) {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_else(|| path.clone());
    let response = next.run(request).await;
    let status = response.status();
    // A refusal for the caller's role is recorded by the engine, where it is decided.
    let outcome = if status.is_success() {
        "ok"
    } else if status.is_server_error() {
        "error"
    } else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let mut entry = AuditEntry::change(action_name(&method, &route), path);
    entry.outcome = outcome;
    // Only an answer known to be small is read here; a larger one passes untouched, and its
    // event goes without it.
    let small = axum::body::HttpBody::size_hint(&body)
        .exact()
        .is_some_and(|n| n <= MAX_AUDITED_BODY as u64);
    if !small {
        team.engine.audit(&caller, entry);
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_AUDITED_BODY).await else {
        team.engine.audit(&caller, entry);
        return Response::from_parts(parts, Body::empty());
    };
    let after = serde_json::from_slice::<Value>(&bytes).ok();
    if outcome == "ok" {
        // What was made is named by its id (or slug) when the answer gives one; else the path.
        if let Some(made) = after
            .as_ref()
            .and_then(|a| a.get("id").or_else(|| a.get("slug")))
            .and_then(Value::as_str)
        {
            entry.target = Some(made.to_owned());
        }
        entry.after = after;
    } else {
        entry.detail = after;
    }
    team.engine.audit(&caller, entry);
    Response::from_parts(parts, Body::from(bytes))
}

pub(crate) use oauth::well_known_router;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_paths() {
        assert!(is_public("/", &Method::GET));
        assert!(is_public("/join/ABCD", &Method::GET));
        assert!(is_public(
            "/.well-known/oauth-authorization-server",
            &Method::GET
        ));
        assert!(is_public("/api/setup-status", &Method::GET));
        assert!(is_public("/api/auth/sign-in/email", &Method::POST));
        assert!(!is_public("/api/account/me", &Method::GET));
        assert!(!is_public("/api/integrations", &Method::GET));
        assert!(!is_public("/api/oauth/callback", &Method::GET));
        assert!(!is_public("/mcp", &Method::POST));
        assert!(!is_public("/api/setup-status", &Method::POST));
    }

    #[test]
    fn audit_actions_name_the_route() {
        assert_eq!(
            action_name(
                &Method::DELETE,
                "/api/connections/{owner}/{integration}/{name}"
            ),
            "connections.remove"
        );
        assert_eq!(
            action_name(&Method::POST, "/api/connections"),
            "connections.create"
        );
        assert_eq!(
            action_name(&Method::PATCH, "/api/mcp/integrations/{slug}/auth"),
            "mcp.integrations.auth.update"
        );
    }

    #[test]
    fn agent_keys_reach_mcp_executions_and_tools_only() {
        assert!(agent_may_reach("/mcp", &Method::POST));
        assert!(agent_may_reach("/mcp/toolkits/x", &Method::POST));
        assert!(agent_may_reach("/api/executions", &Method::POST));
        assert!(agent_may_reach("/api/executions/e1/resume", &Method::POST));
        assert!(agent_may_reach("/api/tools", &Method::GET));
        assert!(agent_may_reach("/api/account/me", &Method::GET));
        assert!(!agent_may_reach("/api/account/api-keys", &Method::POST));
        assert!(!agent_may_reach("/api/auth/device/approve", &Method::POST));
        assert!(!agent_may_reach("/api/integrations", &Method::POST));
        assert!(!agent_may_reach("/api/connections", &Method::GET));
        assert!(!agent_may_reach("/api/toolsx", &Method::GET));
    }

    #[test]
    fn mcp_resources() {
        assert_eq!(mcp_resource("/mcp"), Some("/mcp"));
        assert_eq!(mcp_resource("/mcp/toolkits/x"), Some("/mcp/toolkits/x"));
        assert_eq!(mcp_resource("/mcp/toolkits/"), None);
        assert_eq!(mcp_resource("/mcp/other"), None);
        assert_eq!(mcp_resource("/api/x"), None);
    }
}
