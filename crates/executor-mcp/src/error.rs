use std::error::Error as StdError;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::upstream_http::UpstreamHttpError;
use executor_core::network::AddressNotAllowed;

use crate::sse::SseTransportError;

/// Downstream MCP failures, with person-readable messages.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// Dialling / handshake failed (`McpConnectionError{transport, message, httpStatus?}` in the API).
    #[error("{message}")]
    Connect {
        transport: String,
        message: String,
        http_status: Option<u16>,
    },
    /// `tools/list` failed after connecting (`McpToolDiscoveryError{stage:"list_tools"}`).
    #[error("{message}")]
    ListTools {
        message: String,
        http_status: Option<u16>,
    },
    /// Transport/session failure during `tools/call`.
    #[error("{message}")]
    Call {
        message: String,
        http_status: Option<u16>,
        /// What went wrong, as far as the answer tells.
        failure: CallFailure,
    },
    /// The server answered `tools/call` with a JSON-RPC error (e.g. -32602 "Unknown tool: x").
    /// The session itself is healthy. Map with [`crate::error_to_outcome`].
    #[error("MCP server rejected the call ({code}): {message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    #[error("MCP {stage} timed out")]
    Timeout { stage: &'static str },
    /// HTTP 403 with an RFC 6750 `insufficient_scope` challenge: the credentials are fine but
    /// lack a scope (`required_scope` is the challenge's `scope`, when given). `stage` is
    /// `"connect"`, `"list_tools"` or `"call"`.
    #[error("{message}")]
    InsufficientScope {
        stage: &'static str,
        message: String,
        required_scope: Option<String>,
    },
    /// A paused execution resumed after a restart cannot come back to the downstream session it
    /// had (`message` says why): the state earlier calls set there is gone.
    #[error("the downstream MCP session of {label} was lost: {message}")]
    SessionLost { label: String, message: String },
    /// A stdio server was to be spawned by a client that does not allow them
    /// ([`crate::McpClientConfig::allow_stdio`]); nothing was spawned.
    #[error(
        "stdio MCP servers are disabled on this server (its operator enables them with --allow-stdio-mcp)"
    )]
    StdioDisabled,
    /// The server's address is one this server does not connect to
    /// ([`crate::McpClientConfig::network`]); nothing was sent to it.
    #[error("{0}")]
    AddressNotAllowed(AddressNotAllowed),
}

/// How a `tools/call` failed when the server gave no JSON-RPC answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFailure {
    /// The connection dropped or was refused before an answer came (reset, closed, EOF).
    ConnectionLost,
    /// An answer came that is not MCP: a truncated or non-JSON body, JSON that is no
    /// JSON-RPC answer, an unexpected content type or HTTP status.
    Protocol,
}

impl McpError {
    pub fn http_status(&self) -> Option<u16> {
        match self {
            McpError::Connect { http_status, .. }
            | McpError::ListTools { http_status, .. }
            | McpError::Call { http_status, .. } => *http_status,
            McpError::InsufficientScope { .. } => Some(403),
            McpError::Rpc { .. }
            | McpError::Timeout { .. }
            | McpError::SessionLost { .. }
            | McpError::StdioDisabled
            | McpError::AddressNotAllowed(_) => None,
        }
    }

    /// 401/403: the server wants (other) credentials.
    pub fn is_auth_rejection(&self) -> bool {
        matches!(self.http_status(), Some(401 | 403))
    }

    /// Discovery stage for `McpToolDiscoveryError{stage}`: `"connect"` or `"list_tools"`.
    pub fn stage(&self) -> &'static str {
        match self {
            McpError::ListTools { .. } => "list_tools",
            McpError::Call { .. } | McpError::Rpc { .. } | McpError::SessionLost { .. } => "call",
            McpError::Timeout { stage } | McpError::InsufficientScope { stage, .. } => stage,
            McpError::Connect { .. } | McpError::StdioDisabled | McpError::AddressNotAllowed(_) => {
                "connect"
            }
        }
    }
}

/// What we could learn about a failure from rmcp's error chain.
#[derive(Debug, Default)]
pub(crate) struct Diagnosis {
    pub(crate) status: Option<u16>,
    /// The host could not be reached at all (reason, e.g. "connection refused").
    pub(crate) unreachable: Option<String>,
    /// The response was not MCP (wrong content type, HTML, 404/405 on initialize…).
    pub(crate) not_mcp: Option<String>,
    /// The session or connection is no longer usable (closed transport, session expired).
    pub(crate) broken: bool,
    pub(crate) rpc: Option<(i32, String, Option<serde_json::Value>)>,
    pub(crate) timeout: bool,
    /// A 403 whose challenge says `error="insufficient_scope"` (RFC 6750 §3.1), with the
    /// challenge's `scope` when it names one.
    pub(crate) insufficient_scope: Option<Option<String>>,
    /// The connection was refused for where it goes ([`crate::network`]).
    pub(crate) refused: Option<AddressNotAllowed>,
}

/// Whether a `WWW-Authenticate` challenge is RFC 6750's `insufficient_scope` error.
pub(crate) fn is_insufficient_scope_challenge(challenge: &str) -> bool {
    challenge_param(challenge, "error").is_some_and(|e| e == "insufficient_scope")
}

/// A parameter of a `WWW-Authenticate` challenge (`name="value"` or `name=token`).
pub fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let needle = format!("{}=", name.to_ascii_lowercase());
    let mut from = 0;
    while let Some(found) = lower[from..].find(&needle) {
        let at = from + found;
        from = at + needle.len();
        // A whole parameter name: preceded by the scheme's space or a comma.
        if !matches!(lower[..at].chars().last(), None | Some(' ' | ',' | '\t')) {
            continue;
        }
        let rest = &challenge[from..];
        return Some(match rest.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or("").to_owned(),
            None => rest
                .split([',', ' '])
                .next()
                .unwrap_or("")
                .trim()
                .to_owned(),
        });
    }
    None
}

/// Whether the connection went away before any answer began: a reset, an abort, a broken
/// pipe, or hyper's "closed before a message completed" (no response head at all). A body cut
/// short after its head is a broken answer, not this.
fn connection_lost(err: &(dyn StdError + 'static)) -> bool {
    use std::io::ErrorKind::*;
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    for _ in 0..32 {
        let Some(e) = cur else { break };
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe)
        {
            return true;
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        // rmcp's transport error does not chain to its client's error: step in by hand.
        if let Some(StreamableHttpError::Client(inner)) =
            e.downcast_ref::<StreamableHttpError<UpstreamHttpError>>()
        {
            return connection_lost(inner);
        }
        cur = e.source();
    }
    false
}

fn io_reason(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind::*;
    Some(match kind {
        ConnectionRefused => "connection refused",
        ConnectionReset => "connection reset",
        ConnectionAborted => "connection aborted",
        TimedOut => "connection timed out",
        HostUnreachable => "host unreachable",
        NetworkUnreachable => "network unreachable",
        AddrNotAvailable => "address not available",
        _ => return None,
    })
}

fn parse_http_prefix(text: &str) -> Option<u16> {
    let rest = text.trim_start().strip_prefix("HTTP ")?;
    rest.get(..3)?.parse().ok()
}

fn diagnose_reqwest(d: &mut Diagnosis, e: &reqwest::Error) {
    if let Some(s) = e.status() {
        d.status.get_or_insert(s.as_u16());
    }
    if e.is_timeout() {
        d.timeout = true;
    }
    if e.is_connect() {
        connect_failure(d, e);
    }
}

fn diagnose_upstream(d: &mut Diagnosis, e: &UpstreamHttpError) {
    match e {
        UpstreamHttpError::EventTooLarge { .. } => {
            d.not_mcp.get_or_insert_with(|| e.to_string());
            d.broken = true;
        }
        UpstreamHttpError::Redirect(text) | UpstreamHttpError::Url(text) => {
            d.not_mcp.get_or_insert_with(|| text.clone());
            d.broken = true;
        }
        _ if e.is_connect() => connect_failure(d, e),
        // An exchange cut short: the transport reports it as a failed send, which breaks the
        // session where that matters.
        _ => {}
    }
}

/// The connection could not be made: find the I/O error underneath for a precise reason.
fn connect_failure(d: &mut Diagnosis, e: &(dyn StdError + 'static)) {
    if d.unreachable.is_some() {
        return;
    }
    let mut reason: Option<String> = None;
    let mut cur: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(r) = io_reason(io.kind())
        {
            reason = Some(r.to_owned());
            break;
        }
        let text = err.to_string();
        if text.contains("dns") || text.contains("failed to lookup address") {
            reason = Some("host not found".to_owned());
        }
        cur = err.source();
    }
    d.unreachable = Some(reason.unwrap_or_else(|| "connection failed".to_owned()));
    d.broken = true;
}

/// An error of rmcp's streamable-HTTP transport; `client` reads the HTTP client's own error.
fn diagnose_http<E: StdError + Send + Sync + 'static>(
    d: &mut Diagnosis,
    e: &StreamableHttpError<E>,
    client: fn(&mut Diagnosis, &E),
) {
    match e {
        StreamableHttpError::AuthRequired(_) => {
            d.status.get_or_insert(401);
        }
        StreamableHttpError::InsufficientScope(e) => {
            d.status.get_or_insert(403);
            if is_insufficient_scope_challenge(&e.www_authenticate_header) {
                d.insufficient_scope = Some(
                    challenge_param(&e.www_authenticate_header, "scope").filter(|s| !s.is_empty()),
                );
            }
        }
        StreamableHttpError::HttpStatus(s) => {
            d.status.get_or_insert(s.status);
            d.broken = true;
        }
        StreamableHttpError::SessionExpired => {
            d.status.get_or_insert(404);
            d.broken = true;
        }
        StreamableHttpError::UnexpectedServerResponse(text) => {
            if let Some(s) = parse_http_prefix(text) {
                d.status.get_or_insert(s);
            }
            d.not_mcp.get_or_insert_with(|| text.to_string());
            d.broken = true;
        }
        StreamableHttpError::UnexpectedContentType(ct) => {
            d.not_mcp.get_or_insert_with(|| {
                format!(
                    "it answered with content type {}",
                    ct.as_deref().unwrap_or("<none>")
                )
            });
            d.broken = true;
        }
        StreamableHttpError::Deserialize(e) => {
            d.not_mcp
                .get_or_insert_with(|| format!("the response is not JSON-RPC: {e}"));
            d.broken = true;
        }
        StreamableHttpError::Client(e) => client(d, e),
        StreamableHttpError::ResponseBodyTooLarge { .. } => {}
        _ => d.broken = true,
    }
}

/// Walks an error chain and collects what matters for messages and pool decisions.
pub(crate) fn diagnose(err: &(dyn StdError + 'static)) -> Diagnosis {
    let mut d = Diagnosis::default();
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    let mut depth = 0;
    while let Some(e) = cur {
        depth += 1;
        if depth > 32 {
            break;
        }
        if d.refused.is_none()
            && let Some(refused) = AddressNotAllowed::find(e)
        {
            d.refused = Some(refused.clone());
            d.broken = true;
        }
        if let Some(h) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            diagnose_http(&mut d, h, diagnose_reqwest);
        } else if let Some(h) = e.downcast_ref::<StreamableHttpError<UpstreamHttpError>>() {
            diagnose_http(&mut d, h, diagnose_upstream);
        } else if let Some(s) = e.downcast_ref::<SseTransportError>() {
            if let Some(st) = s.status {
                d.status.get_or_insert(st);
            }
            if let Some(r) = &s.unreachable {
                d.unreachable.get_or_insert_with(|| r.clone());
            }
            if let Some(r) = &s.refused {
                d.refused.get_or_insert_with(|| r.clone());
            }
            if let Some(n) = &s.not_mcp {
                d.not_mcp.get_or_insert_with(|| n.clone());
            }
            if s.status == Some(403)
                && let Some(challenge) = &s.www_authenticate
                && is_insufficient_scope_challenge(challenge)
            {
                d.insufficient_scope =
                    Some(challenge_param(challenge, "scope").filter(|s| !s.is_empty()));
            }
            d.broken = true;
        } else if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            diagnose_reqwest(&mut d, r);
        } else if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(reason) = io_reason(io.kind())
        {
            d.unreachable.get_or_insert_with(|| reason.to_owned());
            d.broken = true;
        }
        cur = e.source();
    }
    d
}

pub(crate) fn diagnose_service(err: &ServiceError) -> Diagnosis {
    match err {
        ServiceError::McpError(data) => Diagnosis {
            rpc: Some((data.code.0, data.message.to_string(), data.data.clone())),
            ..Default::default()
        },
        ServiceError::TransportClosed => Diagnosis {
            broken: true,
            ..Default::default()
        },
        ServiceError::Timeout { .. } => Diagnosis {
            timeout: true,
            ..Default::default()
        },
        ServiceError::Cancelled { .. } => Diagnosis {
            broken: true,
            ..Default::default()
        },
        other => {
            let mut d = diagnose(other);
            if matches!(other, ServiceError::TransportSend(_)) {
                d.broken = true;
            }
            d
        }
    }
}

fn describe(endpoint: &str, d: &Diagnosis, fallback: &str) -> String {
    if let Some(reason) = &d.unreachable {
        return format!("Couldn't reach {endpoint}: {reason}");
    }
    match d.status {
        Some(401) => {
            return format!("{endpoint} requires authentication (HTTP 401)");
        }
        Some(403) => {
            return format!("{endpoint} rejected the credentials (HTTP 403)");
        }
        _ => {}
    }
    if let Some(detail) = &d.not_mcp {
        let detail = truncate(detail, 300);
        return format!("This URL doesn't appear to host an MCP server ({detail})");
    }
    if let Some(s) = d.status {
        return format!("The MCP server at {endpoint} answered HTTP {s}: {fallback}");
    }
    format!("MCP server at {endpoint}: {fallback}")
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

pub(crate) fn connect_error(
    transport: &str,
    endpoint: &str,
    err: &ClientInitializeError,
) -> McpError {
    let d = match err {
        ClientInitializeError::TransportError { error, .. } => diagnose(error),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            return connect_error(transport, endpoint, fallback);
        }
        other => diagnose(other),
    };
    if let Some(refused) = d.refused {
        return McpError::AddressNotAllowed(refused);
    }
    if d.timeout && d.unreachable.is_none() && d.status.is_none() {
        return McpError::Timeout { stage: "connect" };
    }
    if let Some(required_scope) = d.insufficient_scope.clone() {
        return insufficient_scope("connect", endpoint, required_scope);
    }
    let fallback = match err {
        ClientInitializeError::ConnectionClosed(_) => {
            "the connection closed during the handshake".to_owned()
        }
        ClientInitializeError::JsonRpcError(e) => format!("initialize failed: {}", e.message),
        other => other.to_string(),
    };
    McpError::Connect {
        transport: transport.to_owned(),
        message: describe(endpoint, &d, &fallback),
        http_status: d.status,
    }
}

pub(crate) fn list_error(endpoint: &str, err: &ServiceError) -> McpError {
    let d = diagnose_service(err);
    if let Some(refused) = d.refused {
        return McpError::AddressNotAllowed(refused);
    }
    if let Some((code, message, _)) = &d.rpc {
        return McpError::ListTools {
            message: format!("tools/list failed on {endpoint}: {message} ({code})"),
            http_status: None,
        };
    }
    if d.timeout && d.status.is_none() {
        return McpError::Timeout {
            stage: "list_tools",
        };
    }
    if let Some(required_scope) = d.insufficient_scope.clone() {
        return insufficient_scope("list_tools", endpoint, required_scope);
    }
    McpError::ListTools {
        message: describe(endpoint, &d, &format!("tools/list failed: {err}")),
        http_status: d.status,
    }
}

/// Returns the mapped error and whether the session must be discarded.
pub(crate) fn call_error(endpoint: &str, err: &ServiceError) -> (McpError, Diagnosis) {
    let d = diagnose_service(err);
    if let Some(refused) = d.refused.clone() {
        return (McpError::AddressNotAllowed(refused), d);
    }
    if let Some((code, message, data)) = &d.rpc {
        return (
            McpError::Rpc {
                code: *code,
                message: message.clone(),
                data: data.clone(),
            },
            d,
        );
    }
    if d.timeout && d.status.is_none() {
        return (McpError::Timeout { stage: "call" }, d);
    }
    if let Some(required_scope) = d.insufficient_scope.clone() {
        return (insufficient_scope("call", endpoint, required_scope), d);
    }
    let message = describe(endpoint, &d, &format!("tools/call failed: {err}"));
    let failure = if d.status.is_none()
        && d.not_mcp.is_none()
        && (d.unreachable.is_some()
            || matches!(err, ServiceError::TransportClosed)
            || connection_lost(err))
    {
        CallFailure::ConnectionLost
    } else {
        CallFailure::Protocol
    };
    (
        McpError::Call {
            message,
            http_status: d.status,
            failure,
        },
        d,
    )
}

fn insufficient_scope(
    stage: &'static str,
    endpoint: &str,
    required_scope: Option<String>,
) -> McpError {
    let needs = match &required_scope {
        Some(scope) => format!(" (it asks for scope \"{scope}\")"),
        None => String::new(),
    };
    McpError::InsufficientScope {
        stage,
        message: format!(
            "{endpoint} refused the connection's token: it lacks a required OAuth scope (HTTP 403 insufficient_scope){needs}"
        ),
        required_scope,
    }
}

pub(crate) fn sse_connect_error(endpoint: &str, err: &SseTransportError) -> McpError {
    let d = diagnose(err);
    if let Some(required_scope) = d.insufficient_scope {
        return insufficient_scope("connect", endpoint, required_scope);
    }
    McpError::Connect {
        transport: "sse".to_owned(),
        message: describe(endpoint, &d, &err.message),
        http_status: d.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_params() {
        let c = r#"Bearer error="insufficient_scope", scope="files:write admin", resource_metadata="https://h/.well-known/oauth-protected-resource""#;
        assert!(is_insufficient_scope_challenge(c));
        assert_eq!(
            challenge_param(c, "scope").as_deref(),
            Some("files:write admin")
        );
        assert_eq!(
            challenge_param(c, "resource_metadata").as_deref(),
            Some("https://h/.well-known/oauth-protected-resource")
        );
        assert!(is_insufficient_scope_challenge(
            "Bearer realm=x,error=insufficient_scope"
        ));
        assert!(!is_insufficient_scope_challenge(
            r#"Bearer error="invalid_token", resource_metadata="https://h/m""#
        ));
        assert!(!is_insufficient_scope_challenge(
            r#"Bearer myerror="insufficient_scope""#
        ));
        assert_eq!(challenge_param("Bearer", "scope"), None);
    }
}
