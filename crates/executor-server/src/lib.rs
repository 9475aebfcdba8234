//! The HTTP surface: axum routes under `/api`, wire-compatible with the original's API. This is
//! the only crate that knows the wire shapes; it turns engine values into JSON and engine errors
//! into `_tag`ged bodies.

mod api_doc;
mod approval_routes;
mod auth;
mod error;
mod graphql_routes;
mod health_routes;
pub mod mcp;
mod mcp_routes;
mod oauth_routes;
mod openapi_routes;
mod routes;
mod team;
mod toolkit_routes;
mod wire;

use std::time::Duration;

use axum::Router;
use executor_engine::{Caller, Engine};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use error::ApiError;
pub use mcp::McpSessionLimits;
pub use oauth_routes::WEB_BASE_URL_ENV;

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Options of the HTTP surface beyond the engine.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    /// `Host` values accepted on `/mcp` besides loopback (`host` or `host:port`); browser
    /// `Origin`s on those hosts are accepted too. Anything else gets 403 (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// The bearer token every `/api/*` and `/mcp*` request must carry (health and the OAuth
    /// callback excepted). `None` leaves the API open (embedding, tests).
    pub auth_token: Option<String>,
    /// Caps on live `/mcp` sessions (idle ones are closed first to make room).
    pub mcp_sessions: McpSessionLimits,
    /// Who the requests act for: a local server serves one person. `None`:
    /// [`default_caller`].
    pub caller: Option<Caller>,
    /// The data directory, as `GET /api/server` shows it (`None`: not shown).
    pub data_dir: Option<String>,
    /// Serve as the team server (`executor serve`): people sign in to these accounts, and
    /// `auth_token` and `caller` are not used.
    pub team: Option<executor_accounts::Accounts>,
}

/// What `GET /api/server` says of this server.
#[derive(Debug, Clone)]
pub(crate) struct ServerInfo {
    pub(crate) data_dir: Option<String>,
}

/// The caller of a server configured without one (embedding, tests).
pub fn default_caller() -> Caller {
    Caller::local("local")
}

/// The whole application: `/api` routes and their middleware, `/mcp` and `/resume/:id`.
pub fn app(engine: Engine) -> Router {
    app_with(engine, &ServeConfig::default(), CancellationToken::new())
}

/// [`app`] with options; MCP sessions end when `shutdown` is cancelled.
pub fn app_with(engine: Engine, config: &ServeConfig, shutdown: CancellationToken) -> Router {
    let caller = config.caller.clone().unwrap_or_else(default_caller);
    if let Some(accounts) = &config.team {
        return team_app(engine, config, accounts.clone(), caller, shutdown);
    }
    let gate = auth::Gate::new(
        config.auth_token.clone(),
        &config.allowed_hosts,
        caller.clone(),
    );
    let engine_for_gate = engine.clone();
    routes::router(engine.clone(), axum::Router::new())
        .merge(mcp::router(
            engine,
            caller,
            &config.allowed_hosts,
            config.mcp_sessions,
            shutdown,
        ))
        .layer(axum::Extension(ServerInfo {
            data_dir: config.data_dir.clone(),
        }))
        .layer(axum::middleware::from_fn_with_state(
            engine_for_gate,
            routes::database_gate,
        ))
        .layer(axum::middleware::from_fn_with_state(gate, auth::middleware))
        .layer(axum::middleware::map_response(no_framing))
}

/// The team server: the accounts' routes and OAuth documents beside the API, and its own
/// front door (sign-in instead of the local token, no CORS: the console is same-origin).
fn team_app(
    engine: Engine,
    config: &ServeConfig,
    accounts: executor_accounts::Accounts,
    caller: Caller,
    shutdown: CancellationToken,
) -> Router {
    let team = team::Team::new(accounts, engine.clone());
    let engine_for_gate = engine.clone();
    let mut hosts = config.allowed_hosts.clone();
    hosts.extend(team.host());
    routes::router(engine.clone(), team::api_router())
        .merge(team::well_known_router())
        .merge(mcp::router(
            engine,
            caller,
            &hosts,
            config.mcp_sessions,
            shutdown,
        ))
        .layer(axum::Extension(ServerInfo {
            data_dir: config.data_dir.clone(),
        }))
        .layer(axum::middleware::from_fn_with_state(
            engine_for_gate,
            routes::database_gate,
        ))
        .layer(axum::middleware::from_fn_with_state(
            team.clone(),
            team::audit_changes,
        ))
        .layer(axum::middleware::from_fn_with_state(
            team.clone(),
            team::front_door,
        ))
        .layer(axum::Extension(team))
        .layer(axum::middleware::map_response(no_framing))
}

/// HTML pages (the console, the OAuth callback) take clicks: no other site may frame them
/// (clickjacking). JSON answers are not rendered, so they are left alone.
async fn no_framing(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        let headers = response.headers_mut();
        // The console sets a stricter policy of its own (which also forbids framing).
        if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("frame-ancestors 'none'"),
            );
        }
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

/// Serves until `shutdown` is cancelled, then lets in-flight requests finish for at most
/// `drain`. Accepted sockets get TCP_NODELAY: small JSON replies must not wait on Nagle.
pub async fn serve(
    listener: TcpListener,
    engine: Engine,
    shutdown: CancellationToken,
    drain: Duration,
) -> std::io::Result<()> {
    serve_with(listener, engine, ServeConfig::default(), shutdown, drain).await
}

/// [`serve`] with options.
pub async fn serve_with(
    listener: TcpListener,
    engine: Engine,
    config: ServeConfig,
    shutdown: CancellationToken,
    drain: Duration,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // Core tools hand people links to this server (handoffs, OAuth redirect URIs).
    if let Ok(local) = listener.local_addr() {
        engine.serving_at(&local_base_url(local));
    }
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let app = app_with(engine, &config, shutdown.child_token());
    let signal = shutdown.clone();
    // The peer's address reaches the sign-in limits of the team server.
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move { signal.cancelled().await });
    let server = tokio::spawn(async move { server.await });
    shutdown.cancelled().await;
    match tokio::time::timeout(drain, server).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(std::io::Error::other(join)),
        Err(_) => {
            tracing::warn!(
                ?drain,
                "in-flight requests did not finish in time; closing them"
            );
            Ok(())
        }
    }
}

/// `http://<ip>:<port>` of a bound address; a wildcard bind is reached at 127.0.0.1.
fn local_base_url(local: std::net::SocketAddr) -> String {
    let mut shown = local;
    if local.ip().is_unspecified() {
        shown.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    format!("http://{shown}")
}
