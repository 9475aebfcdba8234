//! The local API's front door (spec §2): a bearer token on every `/api/*` and `/mcp*` request
//! except health, the OAuth callback and the client ID metadata documents, and credentialed
//! CORS for loopback origins (plus `--allowed-host`s) so the browser UI on another local port can
//! call the API. It also decides who each request acts for (the [`Caller`] every handler
//! reads from the request's extensions): a local server has one.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use executor_engine::Caller;

/// What the middleware needs: the token (none = open, for embedding and tests) and the hosts
/// whose browser origins get CORS.
#[derive(Clone)]
pub(crate) struct Gate {
    token: Option<Arc<str>>,
    cors_hosts: Arc<[String]>,
    caller: Caller,
}

impl Gate {
    pub(crate) fn new(token: Option<String>, extra_hosts: &[String], caller: Caller) -> Self {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|h| (*h).to_owned())
            .collect();
        hosts.extend(extra_hosts.iter().map(|h| h.to_ascii_lowercase()));
        Gate {
            token: token.map(Arc::from),
            cors_hosts: hosts.into(),
            caller,
        }
    }
}

/// Paths that never need the token.
fn is_public(path: &str, method: &Method) -> bool {
    ((path == "/api/health"
        || path == "/api/health/ready"
        || path == "/api/openapi.json"
        || path == "/api/docs")
        && method == Method::GET)
        || path.starts_with("/api/oauth/callback")
        || (path.starts_with("/api/oauth/client-id-metadata") && method == Method::GET)
        || !(path == "/api"
            || path.starts_with("/api/")
            || path == "/mcp"
            || path.starts_with("/mcp/"))
}

/// Compares without an early exit, so timing does not reveal how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The origin's host when it may have CORS: `http(s)://<allowed host>[:port]`.
fn cors_origin<'a>(gate: &Gate, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
    let value = headers.get(header::ORIGIN)?;
    let origin = value.to_str().ok()?;
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))?;
    let authority = rest.split('/').next()?.to_ascii_lowercase();
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?.to_owned()
    } else {
        authority.split(':').next()?.to_owned()
    };
    gate.cors_hosts
        .iter()
        .any(|h| *h == host || *h == authority)
        .then_some(value)
}

fn with_cors(mut response: Response, origin: Option<HeaderValue>) -> Response {
    if let Some(origin) = origin {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET,POST,PUT,PATCH,DELETE,OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("*"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization,content-type,mcp-session-id,mcp-protocol-version,last-event-id",
            ),
        );
        h.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    response
}

pub(crate) async fn middleware(
    State(gate): State<Gate>,
    mut request: Request,
    next: Next,
) -> Response {
    let origin = cors_origin(&gate, request.headers()).cloned();
    if request.method() == Method::OPTIONS && request.headers().contains_key(header::ORIGIN) {
        return with_cors(StatusCode::NO_CONTENT.into_response(), origin);
    }
    if let Some(token) = &gate.token
        && !is_public(request.uri().path(), request.method())
        && !bearer(request.headers()).is_some_and(|t| same(t.as_bytes(), token.as_bytes()))
    {
        let response = Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(header::WWW_AUTHENTICATE, "Bearer realm=\"executor\"")
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(Body::from("Unauthorized"))
            .unwrap_or_else(|_| StatusCode::UNAUTHORIZED.into_response());
        return with_cors(response, origin);
    }
    request.extensions_mut().insert(gate.caller.clone());
    with_cors(next.run(request).await, origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_paths() {
        assert!(is_public("/api/health", &Method::GET));
        assert!(!is_public("/api/health", &Method::POST));
        assert!(is_public("/api/oauth/callback", &Method::GET));
        assert!(is_public(
            "/api/oauth/client-id-metadata.json",
            &Method::GET
        ));
        assert!(is_public(
            "/api/oauth/client-id-metadata/local.json",
            &Method::GET
        ));
        assert!(!is_public(
            "/api/oauth/client-id-metadata.json",
            &Method::POST
        ));
        assert!(is_public("/resume/exec_1", &Method::GET));
        assert!(!is_public("/api/executions", &Method::POST));
        assert!(!is_public("/api", &Method::GET));
        assert!(!is_public("/mcp", &Method::POST));
        assert!(!is_public("/mcp/toolkits/x", &Method::POST));
        assert!(is_public("/mcpx", &Method::GET));
    }

    #[test]
    fn bearer_and_comparison() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }

    #[test]
    fn cors_for_loopback_and_allowed_hosts_only() {
        let gate = Gate::new(None, &["box.lan".to_owned()], Caller::local("t"));
        let origin = |o: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ORIGIN, o.parse().unwrap());
            cors_origin(&gate, &h).is_some()
        };
        assert!(origin("http://localhost:5173"));
        assert!(origin("http://127.0.0.1"));
        assert!(origin("http://[::1]:3000"));
        assert!(origin("https://box.lan:8443"));
        assert!(!origin("http://evil.example"));
        assert!(!origin("http://localhost.evil.example"));
        assert!(!origin("null"));
    }
}
