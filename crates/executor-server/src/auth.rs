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

/// The `Origin` when it may have CORS: exactly the serialised origin `http(s)://host[:port]` of
/// an allowed host (loopback, or an `--allowed-host`: `name` for any port, `name:port` for
/// one). Parsed with the URL standard, so userinfo (`http://localhost:80@evil.example`), paths,
/// opaque and non-web schemes, and spellings a browser never sends are refused.
fn cors_origin<'a>(gate: &Gate, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
    let value = headers.get(header::ORIGIN)?;
    let raw = value.to_str().ok()?;
    let url = url::Url::parse(raw).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let origin = url.origin();
    if !origin.is_tuple() || !raw.eq_ignore_ascii_case(&origin.ascii_serialization()) {
        return None;
    }
    let host = match url.host()? {
        url::Host::Domain(name) => name.to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    };
    let port = url.port_or_known_default()?;
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
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

    /// Issue #39: a prefix check read `http://localhost:80@evil.com` as loopback (its userinfo
    /// looked like a port) and granted credentialed CORS to evil.com.
    #[test]
    fn cors_origins_are_parsed_not_prefix_matched() {
        let gate = Gate::new(None, &["box.lan:8443".to_owned()], Caller::local("t"));
        let origin = |o: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ORIGIN, o.parse().unwrap());
            cors_origin(&gate, &h).is_some()
        };
        for refused in [
            "http://localhost:80@evil.com",
            "http://localhost@evil.com",
            "http://127.0.0.1:5173@evil.com:8080",
            "http://[::1]@evil.com",
            "http://evil.com#@localhost",
            "http://evil.com?@localhost",
            "http://localhost:5173/path",
            "http://localhost.",
            "http:localhost:5173",
            "ftp://localhost",
            "file://localhost",
            "http://box.lan",
            "https://box.lan:9443",
            "https://box.lan:8443@evil.com",
        ] {
            assert!(!origin(refused), "{refused} must not get CORS");
        }
        for allowed in [
            "http://localhost",
            "http://localhost:5173",
            "https://LOCALHOST:5173",
            "http://127.0.0.1:3000",
            "http://[::1]",
            "https://box.lan:8443",
        ] {
            assert!(origin(allowed), "{allowed} is a loopback or allowed origin");
        }
    }
}
