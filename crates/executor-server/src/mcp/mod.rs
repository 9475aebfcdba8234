//! The agent-facing MCP surface (spec §5): `/mcp` over streamable HTTP (rmcp), the same handler
//! for stdio, and the browser approval page `/resume/:id`.
//!
//! Both protocol generations are served: clients on 2025-11-25 and older get sessions
//! (`Mcp-Session-Id`, SSE replies as rmcp requires in session mode), 2026-07-28 clients are served
//! statelessly with JSON replies. Paused executions live in the engine, never in the MCP session,
//! so a pause created on one session can be resumed from another of the same endpoint (or, for
//! `/mcp`'s, over `/api`): the engine answers a pause only under the policy source it was made
//! under.

mod events;
mod handler;
mod progress;
mod sampling;
mod sessions;
mod skills;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use executor_engine::{Caller, Engine};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use handler::{ElicitationMode, ExecutorMcp, SERVER_NAME, SERVER_VERSION, server_config};
pub(crate) use sessions::SessionCredential;
pub use sessions::{CappedSessions, McpSessionLimits, SESSION_LIMIT_CODE};

/// Which MCP endpoint a request reached: `/mcp`, or `/mcp/toolkits/<slug>` (spec §5). A session
/// is bound to the resource it was created on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Resource {
    Default,
    Toolkit(String),
}

impl Resource {
    /// From the path below `/mcp` (empty, `/`, `/toolkits/<slug>` or `/toolkits/<slug>/`);
    /// `None` for any other path. The slug is not checked here: an unknown one exposes nothing.
    pub(crate) fn parse(path: &str) -> Option<Self> {
        let path = path.strip_suffix('/').unwrap_or(path);
        if path.is_empty() {
            return Some(Resource::Default);
        }
        let slug = path.strip_prefix("/toolkits/")?;
        (!slug.is_empty() && !slug.contains('/')).then(|| Resource::Toolkit(slug.to_owned()))
    }

    /// Its path below `/mcp`, as kept with a replicated session.
    pub(crate) fn path(&self) -> String {
        match self {
            Resource::Default => String::new(),
            Resource::Toolkit(slug) => format!("/toolkits/{slug}"),
        }
    }

    /// The caller a request on this resource acts as: a toolkit is its only policy source.
    pub(crate) fn caller(&self, caller: Caller) -> Caller {
        match self {
            Resource::Default => caller,
            Resource::Toolkit(slug) => {
                caller.with_policies(executor_engine::PolicySource::Toolkit(slug.clone()))
            }
        }
    }
}

/// Hosts always accepted in `Host` (DNS-rebinding protection).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// `Host` values accepted on `/mcp`: loopback plus `extra` (`host` or `host:port`).
pub fn allowed_hosts(extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    for host in extra {
        let host = host.trim();
        if !host.is_empty() && !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            hosts.push(host.to_owned());
        }
    }
    hosts
}

/// Browser origins accepted on `/mcp`: http(s) on the allowed hosts, any port unless one is given.
fn allowed_origins(hosts: &[String]) -> Vec<String> {
    let mut origins = Vec::new();
    for host in hosts {
        let bare_ipv6 =
            host.contains(':') && !host.starts_with('[') && host.matches(':').count() > 1;
        let authority = if bare_ipv6 {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let has_port = !bare_ipv6
            && authority
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
        for scheme in ["http", "https"] {
            origins.push(if has_port {
                format!("{scheme}://{authority}")
            } else {
                format!("{scheme}://{authority}:*")
            });
        }
    }
    origins
}

/// The rmcp service for `/mcp`. Sessions end when `cancel` fires (server shutdown); `sessions`
/// caps how many live at once, and restores those it keeps records of.
pub fn http_service(
    engine: Engine,
    caller: Caller,
    extra_allowed_hosts: &[String],
    sessions: Arc<CappedSessions>,
    cancel: CancellationToken,
) -> StreamableHttpService<ExecutorMcp, CappedSessions> {
    let hosts = allowed_hosts(extra_allowed_hosts);
    let origins = allowed_origins(&hosts);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_json_response(true)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(crate::MAX_BODY_BYTES)
        .with_cancellation_token(cancel);
    // A session not held in memory (released while idle, opened before a restart or on another
    // replica) is replayed here from its record.
    if sessions.kept().is_some() {
        config.session_store = Some(Arc::new(sessions::KeptSessions::new(engine.clone())));
    }
    StreamableHttpService::new(
        move || {
            Ok(ExecutorMcp::new(
                engine.clone(),
                caller.clone(),
                ElicitationMode::Model,
            ))
        },
        sessions,
        config,
    )
}

/// `/mcp` and `/mcp/toolkits/<slug>`. The approval page `/resume/{id}` is the console's.
pub(crate) fn router(
    engine: Engine,
    caller: Caller,
    extra_allowed_hosts: &[String],
    limits: McpSessionLimits,
    cancel: CancellationToken,
) -> Router {
    let sessions = Arc::new(CappedSessions::new(limits).kept_in(engine.clone()));
    sessions::spawn_idle_sweeper(Arc::downgrade(&sessions));
    let service = http_service(
        engine,
        caller,
        extra_allowed_hosts,
        sessions.clone(),
        cancel,
    );
    Router::new().nest_service(
        "/mcp",
        axum::routing::any(move |request| wire::serve(service.clone(), sessions.clone(), request)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_the_bare_path_and_toolkit_slugs() {
        assert_eq!(Resource::parse(""), Some(Resource::Default));
        assert_eq!(Resource::parse("/"), Some(Resource::Default));
        let kit = Some(Resource::Toolkit("support".into()));
        assert_eq!(Resource::parse("/toolkits/support"), kit);
        assert_eq!(Resource::parse("/toolkits/support/"), kit);
        for other in [
            "/toolkits",
            "/toolkits/",
            "/toolkits/a/b",
            "/nope",
            "/toolkit/a",
            "x",
        ] {
            assert_eq!(Resource::parse(other), None, "{other}");
        }
    }

    #[test]
    fn origins_follow_hosts() {
        let hosts = allowed_hosts(&[
            "example.com".into(),
            "box.lan:8080".into(),
            "localhost".into(),
        ]);
        assert_eq!(
            hosts,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "example.com",
                "box.lan:8080"
            ]
        );
        let origins = allowed_origins(&hosts);
        assert!(origins.contains(&"http://[::1]:*".to_owned()));
        assert!(origins.contains(&"https://example.com:*".to_owned()));
        assert!(origins.contains(&"http://box.lan:8080".to_owned()));
    }
}
