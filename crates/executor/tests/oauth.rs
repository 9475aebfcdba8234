//! OAuth 2.1 end to end: our own small authorization server (RFC 8414 metadata, /authorize,
//! /token with PKCE S256, refresh-token rotation and client credentials, RFC 7591 /register),
//! an OpenAPI API that requires its bearer tokens, and an rmcp streamable-HTTP MCP server behind
//! a bearer-checking middleware (RFC 9728 challenge and metadata, RFC 6750 `insufficient_scope`).

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_mcp::testing::StatefulHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use support::{Harness, Options};

/// A request the MCP server saw: HTTP method, JSON-RPC method, bearer token, status.
#[derive(Debug, Clone)]
struct McpRequest {
    method: String,
    rpc: Option<String>,
    bearer: String,
    status: u16,
}

#[derive(Default)]
struct AsState {
    base: Mutex<String>,
    /// code → (client_id, redirect_uri, challenge, requested scope)
    codes: Mutex<HashMap<String, (String, String, String, String)>>,
    /// Valid refresh tokens, with the scope they grant.
    refresh: Mutex<Vec<(String, String)>>,
    /// Valid access tokens → granted scope.
    access: Mutex<HashMap<String, String>>,
    /// Every access token ever issued.
    issued: Mutex<Vec<String>>,
    /// Every refresh token ever issued.
    refresh_issued: Mutex<Vec<String>>,
    /// Grants only this scope, whatever was asked for.
    grant_only: Mutex<Option<String>>,
    /// A refresh revokes every access token issued before.
    revoke_on_refresh: AtomicBool,
    /// The MCP server answers every request 403 (no challenge).
    mcp_forbidden: AtomicBool,
    mcp_log: Mutex<Vec<McpRequest>>,
    /// Every registered client id.
    clients: Mutex<Vec<String>>,
    token_requests: AtomicUsize,
    refresh_requests: AtomicUsize,
    registrations: AtomicUsize,
    /// Client ID metadata documents fetched at /authorize.
    cimd_fetches: AtomicUsize,
    counter: AtomicU64,
    /// Lifetime of issued access tokens.
    expires_in: AtomicU64,
    /// Refresh answers invalid_grant.
    revoke_all: AtomicBool,
}

impl AsState {
    fn mint(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::SeqCst))
    }
}

type Shared = Arc<AsState>;

/// What this test binary logs (every crate, debug and up), kept to be scanned for secrets.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
            .with_ansi(false)
            .with_writer(move || LogSink(sink.clone()))
            .init();
        buffer
    })
    .clone()
}

struct LogSink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Fails if a token the authorization server issued (access or refresh) or a client secret
/// appears in the logs or in a file of the data dir.
fn assert_no_secret_leaked(auth: &AsState, data_dir: &std::path::Path) {
    let mut secrets: Vec<String> = auth.issued.lock().unwrap().clone();
    secrets.extend(auth.refresh_issued.lock().unwrap().iter().cloned());
    secrets.push("machine-secret".to_owned());
    let logs = String::from_utf8_lossy(&captured_logs().lock().unwrap()).into_owned();
    assert!(
        logs.contains("oauth token refreshed"),
        "the log capture works"
    );
    for secret in &secrets {
        assert!(!logs.contains(secret.as_str()), "{secret} in the logs");
    }
    for entry in std::fs::read_dir(data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for secret in &secrets {
                assert!(!text.contains(secret.as_str()), "{secret} in {path:?}");
            }
        }
    }
}

async fn metadata(State(s): State<Shared>) -> Json<Value> {
    let base = s.base.lock().unwrap().clone();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "scopes_supported": ["read", "write"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": true,
    }))
}

async fn mcp_resource_metadata(State(s): State<Shared>) -> Json<Value> {
    let base = s.base.lock().unwrap().clone();
    Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["read", "write"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn resource_metadata(State(s): State<Shared>) -> Json<Value> {
    let base = s.base.lock().unwrap().clone();
    Json(json!({
        "resource": format!("{base}/api"),
        "authorization_servers": [base],
        "scopes_supported": ["read"],
    }))
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let state = q.get("state").cloned().unwrap_or_default();
    if q.get("code_challenge_method").map(String::as_str) != Some("S256")
        || q.get("code_challenge").is_none_or(|c| c.len() != 43)
        || q.get("response_type").map(String::as_str) != Some("code")
    {
        return (StatusCode::BAD_REQUEST, "PKCE S256 required").into_response();
    }
    // A client id that is a URL names its client ID metadata document: fetch it, and accept
    // only a document that names itself and lists this redirect URI.
    let client_id = q.get("client_id").cloned().unwrap_or_default();
    if client_id.starts_with("http") {
        s.cimd_fetches.fetch_add(1, Ordering::SeqCst);
        let document = match reqwest::get(&client_id).await {
            Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
            _ => None,
        };
        let valid = document.is_some_and(|d| {
            d["client_id"] == client_id.as_str()
                && d["token_endpoint_auth_method"] == "none"
                && d["redirect_uris"]
                    .as_array()
                    .is_some_and(|uris| uris.iter().any(|u| u == redirect.as_str()))
        });
        if !valid {
            return (StatusCode::BAD_REQUEST, "invalid client metadata document").into_response();
        }
    }
    let code = s.mint("code");
    s.codes.lock().unwrap().insert(
        code.clone(),
        (
            q.get("client_id").cloned().unwrap_or_default(),
            redirect.clone(),
            q["code_challenge"].clone(),
            q.get("scope").cloned().unwrap_or_default(),
        ),
    );
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

fn token_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

async fn token(State(s): State<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    s.token_requests.fetch_add(1, Ordering::SeqCst);
    let issue = |s: &AsState, with_refresh: bool, asked: &str| {
        let scope = s
            .grant_only
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| if asked.is_empty() { "read" } else { asked }.to_owned());
        let access = s.mint("access");
        s.access
            .lock()
            .unwrap()
            .insert(access.clone(), scope.clone());
        s.issued.lock().unwrap().push(access.clone());
        let mut body = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": s.expires_in.load(Ordering::SeqCst),
            "scope": scope,
        });
        if with_refresh {
            let refresh = s.mint("refresh");
            s.refresh.lock().unwrap().push((refresh.clone(), scope));
            s.refresh_issued.lock().unwrap().push(refresh.clone());
            body["refresh_token"] = json!(refresh);
        }
        Json(body).into_response()
    };
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((client, redirect, challenge, scope)) = f
                .get("code")
                .and_then(|c| s.codes.lock().unwrap().remove(c))
            else {
                return token_error("invalid_grant");
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            if executor_engine::pkce_challenge(&verifier) != challenge
                || f.get("client_id") != Some(&client)
                || f.get("redirect_uri") != Some(&redirect)
            {
                return token_error("invalid_grant");
            }
            issue(&s, true, &scope)
        }
        Some("refresh_token") => {
            s.refresh_requests.fetch_add(1, Ordering::SeqCst);
            // Slow enough that concurrent callers would overlap.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let presented = f.get("refresh_token").cloned().unwrap_or_default();
            let mut valid = s.refresh.lock().unwrap();
            let Some(i) = valid.iter().position(|(r, _)| *r == presented) else {
                return token_error("invalid_grant");
            };
            if s.revoke_all.load(Ordering::SeqCst) || f.contains_key("scope") {
                return token_error("invalid_grant");
            }
            // Rotation: the presented token is spent.
            let (_, scope) = valid.remove(i);
            drop(valid);
            if s.revoke_on_refresh.load(Ordering::SeqCst) {
                s.access.lock().unwrap().clear();
            }
            issue(&s, true, &scope)
        }
        Some("client_credentials") => {
            if f.get("client_id").map(String::as_str) != Some("machine")
                || f.get("client_secret").map(String::as_str) != Some("machine-secret")
            {
                return token_error("invalid_client");
            }
            issue(&s, false, f.get("scope").map(String::as_str).unwrap_or(""))
        }
        _ => token_error("unsupported_grant_type"),
    }
}

async fn register(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    s.registrations.fetch_add(1, Ordering::SeqCst);
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    let id = s.mint("dcr-client");
    s.clients.lock().unwrap().push(id.clone());
    (
        StatusCode::CREATED,
        Json(json!({"client_id": id, "redirect_uris": body["redirect_uris"]})),
    )
        .into_response()
}

const SPEC: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "Notes", "version": "1"},
  "paths": {
    "/api/me": {"get": {"operationId": "me", "tags": ["user"],
      "responses": {"200": {"description": "who", "content": {"application/json": {"schema": {"type": "object"}}}}}}}
  }
}"#;

async fn me(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if s.access.lock().unwrap().contains_key(token) {
        // The serial only: tool results are journaled, and the data-dir scan must not find tokens.
        let serial = token.trim_start_matches("access-");
        Json(json!({"login": "ada", "serial": serial})).into_response()
    } else {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "bad token"})),
        )
            .into_response()
    }
}

fn bearer_of(headers: &HeaderMap) -> String {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned()
}

/// The MCP server's door: a bearer the AS issued, else 401 with the RFC 9728 challenge;
/// `delete_everything` needs scope `write` (else 403 `insufficient_scope`).
async fn require_bearer(State(s): State<Shared>, request: Request, next: Next) -> Response {
    let base = s.base.lock().unwrap().clone();
    let metadata = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let bearer = bearer_of(request.headers());
    let method = request.method().to_string();
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let rpc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let rpc_method = rpc["method"].as_str().map(str::to_owned);
    let granted = s.access.lock().unwrap().get(&bearer).cloned();
    let response = match granted {
        None => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(r#"Bearer resource_metadata="{metadata}""#),
            )],
            "unauthorized",
        )
            .into_response(),
        Some(_) if s.mcp_forbidden.load(Ordering::SeqCst) => {
            (StatusCode::FORBIDDEN, "forbidden").into_response()
        }
        Some(scope)
            if rpc_method.as_deref() == Some("tools/call")
                && rpc["params"]["name"] == "delete_everything"
                && !scope.split(' ').any(|s| s == "write") =>
        {
            (
                StatusCode::FORBIDDEN,
                [(
                    header::WWW_AUTHENTICATE,
                    format!(
                        r#"Bearer error="insufficient_scope", scope="write", resource_metadata="{metadata}""#
                    ),
                )],
                "insufficient scope",
            )
                .into_response()
        }
        Some(_) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    };
    s.mcp_log.lock().unwrap().push(McpRequest {
        method,
        rpc: rpc_method,
        bearer,
        status: response.status().as_u16(),
    });
    response
}

async fn serve_as() -> (Shared, String) {
    captured_logs();
    let state = Shared::default();
    state.expires_in.store(3600, Ordering::SeqCst);
    let mcp: StreamableHttpService<StatefulHandler, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(StatefulHandler::default()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
    // On the MCP routes only: a 401 challenge naming the MCP server's metadata on every other
    // path (the router's fallback) would tell a prober that `/api` is the MCP resource.
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_bearer,
        ));
    let app = Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route(
            "/.well-known/oauth-protected-resource/api",
            get(resource_metadata),
        )
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/register", post(register))
        .route("/api/me", get(me))
        .route("/openapi.json", get(|| async { SPEC }))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(mcp_resource_metadata),
        )
        .with_state(state.clone())
        .merge(mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *state.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (state, base)
}

/// Adds the OpenAPI integration `notes` with one oauth2 method.
async fn add_notes(h: &Harness, base: &str) {
    let (status, body) = h
        .post(
            "/api/openapi/specs",
            json!({
                "spec": {"kind": "url", "url": format!("{base}/openapi.json")},
                "slug": "notes",
                "baseUrl": base,
                "authenticationTemplate": [{"type": "oauth2"}],
            }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// start → follow the authorization URL without redirects → the callback page.
async fn code_flow(h: &Harness, client: &str, name: &str) -> Value {
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": client, "clientOwner": "org", "owner": "org", "name": name,
                   "integration": "notes", "template": "oauth2", "scopes": ["read"]}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "redirect");
    let url = started["authorizationUrl"].as_str().unwrap();
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("scope=read"), "{url}");
    let answer = no_redirects().get(url).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 303, "{:?}", answer.text().await);
    let callback = answer.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        callback.starts_with(&format!("{}/api/oauth/callback?", h.base)),
        "{callback}"
    );
    // The callback is public: no bearer token needed (the harness sends none anyway).
    let page = reqwest::get(&callback).await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Connected"), "{html}");
    assert!(html.contains("\"ok\":true"), "{html}");
    started
}

async fn call_me(h: &Harness, name: &str) -> Value {
    h.execute(&format!(
        "return await tools.notes.org.{name}.user.me({{}})"
    ))
    .await["structured"]["result"]
        .clone()
}

/// Makes the stored access token expire now.
async fn expire(h: &Harness, name: &str) {
    let key = executor_store::ConnectionKey::new(executor_core::Owner::Org, "notes", name);
    h.engine.expire_oauth_token(&h.caller, &key).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn code_flow_dcr_refresh_and_reauth() {
    let (auth, base) = serve_as().await;
    let h = Harness::start().await;
    add_notes(&h, &base).await;

    // Probe: RFC 9728 resource metadata names the server; RFC 8414 gives its endpoints.
    let (status, probe) = h
        .post("/api/oauth/probe", json!({"url": format!("{base}/api")}))
        .await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["tokenUrl"], format!("{base}/token"));
    assert_eq!(probe["registrationEndpoint"], format!("{base}/register"));
    assert_eq!(probe["resource"], format!("{base}/api"));
    assert_eq!(probe["scopesSupported"], json!(["read"]));

    // DCR, reused for the same issuer and redirect URI.
    let register = json!({
        "owner": "org", "registrationEndpoint": probe["registrationEndpoint"],
        "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
        "issuer": probe["issuer"], "scopes": ["read"],
        "tokenEndpointAuthMethodsSupported": probe["tokenEndpointAuthMethodsSupported"],
    });
    let (status, first) = h
        .post("/api/oauth/clients/register-dynamic", register.clone())
        .await;
    assert_eq!(status, 200, "{first}");
    let (_, second) = h
        .post("/api/oauth/clients/register-dynamic", register)
        .await;
    assert_eq!(first, second);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    let client = first["client"].as_str().unwrap().to_owned();
    let (_, clients) = h.get("/api/oauth/clients").await;
    assert_eq!(clients[0]["origin"]["kind"], "dynamic_client_registration");
    assert!(clients[0].get("clientSecret").is_none());

    // The browser-less code flow.
    code_flow(&h, &client, "main").await;
    let result = call_me(&h, "main").await;
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["data"]["login"], "ada");
    let first_serial = result["data"]["serial"].as_str().unwrap().to_owned();
    assert_eq!(auth.token_requests.load(Ordering::SeqCst), 1);

    // Not yet due: no refresh.
    call_me(&h, "main").await;
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 0);

    // Due: 50 concurrent executions → exactly one refresh at the server.
    expire(&h, "main").await;
    let calls = (0..50).map(|_| call_me(&h, "main"));
    let results = futures::future::join_all(calls).await;
    for r in &results {
        assert_eq!(r["ok"], true, "{r}");
        assert_ne!(r["data"]["serial"], first_serial.as_str());
    }
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 1);

    // The rotated refresh token was stored: a second expiry refreshes again fine.
    expire(&h, "main").await;
    assert_eq!(call_me(&h, "main").await["ok"], true);
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 2);

    // The API stops accepting the token before it expires (revoked upstream): the calls are
    // refused with 401, and 20 concurrent executions share one refresh, then call again.
    auth.access.lock().unwrap().clear();
    let calls = (0..20).map(|_| call_me(&h, "main"));
    for r in futures::future::join_all(calls).await {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 3);

    // A refresh rejected for good → oauth_reauth_required, and the server is not asked again.
    auth.revoke_all.store(true, Ordering::SeqCst);
    expire(&h, "main").await;
    let failed = call_me(&h, "main").await;
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["error"]["code"], "oauth_reauth_required", "{failed}");
    assert_eq!(failed["error"]["retryable"], false);
    assert_eq!(failed["error"]["details"]["category"], "authentication");
    let again = call_me(&h, "main").await;
    assert_eq!(again["error"]["code"], "oauth_reauth_required");
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 4);

    // No token in plaintext in the data dir or the logs.
    assert_no_secret_leaked(&auth, h.data_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_and_bad_states() {
    let (auth, base) = serve_as().await;
    let h = Harness::start().await;
    add_notes(&h, &base).await;

    let (status, body) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "machine", "authorizationUrl": "", "tokenUrl": format!("{base}/token"),
                   "grant": "client_credentials", "clientId": "machine", "clientSecret": "machine-secret"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": "machine", "clientOwner": "org", "owner": "org", "name": "Robot",
                   "integration": "notes", "template": "oauth2"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "connected");
    assert_eq!(started["connection"]["name"], "robot");
    assert_eq!(started["connection"]["oauthClient"], "machine");
    assert!(started["connection"].get("description").is_none());
    assert_eq!(call_me(&h, "robot").await["ok"], true);
    // Client credentials "refresh" by asking again.
    expire(&h, "robot").await;
    assert_eq!(call_me(&h, "robot").await["ok"], true);
    assert_eq!(auth.token_requests.load(Ordering::SeqCst), 2);

    // Unknown state at the callback: a page that says so; nothing stored.
    let page = reqwest::get(format!("{}/api/oauth/callback?state=nope&code=x", h.base))
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 400);
    let html = page.text().await.unwrap();
    assert!(html.contains("unknown or has expired"), "{html}");
    let (status, body) = h
        .post("/api/oauth/complete", json!({"state": "nope", "code": "x"}))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["_tag"], "OAuthSessionNotFoundError");

    // A manual public client; a cancelled flow cannot be completed.
    let (status, _) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "public", "authorizationUrl": format!("{base}/authorize"),
                   "tokenUrl": format!("{base}/token"), "grant": "authorization_code", "clientId": "pub"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": "public", "clientOwner": "org", "owner": "org", "name": "later",
                   "integration": "notes", "template": "oauth2"}),
        )
        .await;
    let state = started["state"].as_str().unwrap();
    let (status, _) = h.post("/api/oauth/cancel", json!({"state": state})).await;
    assert_eq!(status, 200);
    let page = reqwest::get(format!(
        "{}/api/oauth/callback?state={state}&code=x",
        h.base
    ))
    .await
    .unwrap();
    assert_eq!(page.status().as_u16(), 400);
    // Failures are published for `await` too.
    let (status, result) = h.get(&format!("/api/oauth/await/{state}")).await;
    assert_eq!(status, 200);
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["sessionId"], state);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("unknown or has expired"),
        "{result}"
    );
    let (_, connections) = h.get("/api/connections?integration=notes").await;
    let names: Vec<&str> = connections
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["robot"]);

    // A template that is not an OAuth method → 400.
    let (status, body) = h
        .post(
            "/api/oauth/start",
            json!({"client": "public", "clientOwner": "org", "owner": "org", "name": "x",
                   "integration": "notes", "template": "nope"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["_tag"], "OAuthStartError");

    // Removing a client is idempotent.
    let (status, body) = h
        .call(
            reqwest::Method::DELETE,
            "/api/oauth/clients/public",
            Some(json!({"owner": "org"})),
        )
        .await;
    assert_eq!((status, body), (200, json!({"removed": true})));
}

/// The API token of the harness in the MCP test: `/api/oauth/await` sits behind it.
const API_TOKEN: &str = "local-api-token";

/// A client ID metadata document instead of registration: the documents are public (the
/// authorization server fetches them without the API token), and a public client whose id is
/// the document's URL runs the code flow with PKCE and no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_id_metadata_document() {
    let (auth, base) = serve_as().await;
    let h = Harness::start_opts(Options {
        auth_token: Some(API_TOKEN.to_owned()),
        ..Options::default()
    })
    .await;
    add_notes(&h, &base).await;
    let (_, probe) = h
        .post("/api/oauth/probe", json!({"url": format!("{base}/api")}))
        .await;
    assert_eq!(probe["clientIdMetadataDocumentSupported"], true, "{probe}");

    let anonymous = reqwest::Client::new();
    let fetch = |path: &str| {
        let request = anonymous.get(format!("{}{path}", h.base));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let document_url = format!("{}/api/oauth/client-id-metadata.json", h.base);
    let (status, document) = fetch("/api/oauth/client-id-metadata.json").await;
    assert_eq!(status, 200, "{document}");
    assert_eq!(document["client_id"], document_url.as_str());
    assert_eq!(document["client_name"], "Executor");
    assert_eq!(document["client_uri"], h.base.as_str());
    assert_eq!(
        document["redirect_uris"],
        json!([format!("{}/api/oauth/callback", h.base)])
    );
    assert_eq!(document["token_endpoint_auth_method"], "none");
    assert_eq!(document["response_types"], json!(["code"]));
    assert_eq!(document["application_type"], "web");

    let port = h.base.rsplit(':').next().unwrap();
    let (status, local) = fetch("/api/oauth/client-id-metadata/local.json").await;
    assert_eq!(status, 200, "{local}");
    assert_eq!(
        local["client_id"],
        format!("{}/api/oauth/client-id-metadata/local.json", h.base)
    );
    assert_eq!(local["client_name"], "Executor Local");
    assert_eq!(local["application_type"], "native");
    assert_eq!(
        local["redirect_uris"],
        json!([
            format!("http://127.0.0.1:{port}/api/oauth/callback"),
            format!("http://localhost:{port}/api/oauth/callback"),
            format!("http://[::1]:{port}/api/oauth/callback"),
        ])
    );
    let (status, _) = fetch("/api/oauth/client-id-metadata/cloud.json").await;
    assert_eq!(status, 404);

    // A public client named by the document: no registration, no secret.
    let (status, body) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "by-document", "grant": "authorization_code",
                   "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
                   "clientId": document_url, "originIntegration": "notes"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    code_flow(&h, "by-document", "main").await;
    assert_eq!(auth.cimd_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 0);
    let result = call_me(&h, "main").await;
    assert_eq!(result["ok"], true, "{result}");
}

async fn call_secure(h: &Harness, code: &str) -> Value {
    h.execute(code).await["structured"]["result"].clone()
}

fn mcp_log(auth: &AsState) -> Vec<McpRequest> {
    auth.mcp_log.lock().unwrap().clone()
}

/// An MCP server behind OAuth, through the HTTP API only: probe → DCR → start (scopes
/// discovered from RFC 9728 metadata) → the authorization URL without a browser → callback →
/// tools listed and called with the bearer; a refresh shared by concurrent calls, the
/// downstream sessions redialled with the new bearer; the error mapping of spec §6.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_server_behind_oauth() {
    let (auth, base) = serve_as().await;
    let endpoint = format!("{base}/mcp");
    let h = Harness::start_opts(Options {
        auth_token: Some(API_TOKEN.to_owned()),
        ..Options::default()
    })
    .await;
    // The AS grants less than asked: `write` will be missing.
    *auth.grant_only.lock().unwrap() = Some("read".to_owned());

    // The MCP probe sees the auth wall and the OAuth metadata behind it.
    let (status, probe) = h
        .post("/api/mcp/probe", json!({"endpoint": endpoint}))
        .await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["connected"], false, "{probe}");
    assert_eq!(probe["requiresAuthentication"], true, "{probe}");
    assert_eq!(probe["requiresOAuth"], true, "{probe}");
    assert_eq!(probe["supportsDynamicRegistration"], true, "{probe}");

    // Added with the oauth2 shorthand: the auth wall counts as answering.
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"name": "Secure", "endpoint": endpoint, "slug": "secure",
                   "remoteTransport": "streamable-http", "auth": {"kind": "oauth2"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, integration) = h.get("/api/integrations/secure").await;
    let method = &integration["authMethods"][0];
    assert_eq!(method["kind"], "oauth", "{integration}");
    assert_eq!(method["template"], "oauth2");
    assert_eq!(method["oauth"]["discoveryUrl"], endpoint.as_str());

    // OAuth probe on the MCP endpoint: RFC 9728 first, then the AS metadata.
    let (status, probe) = h.post("/api/oauth/probe", json!({"url": endpoint})).await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["resource"], endpoint.as_str());
    assert_eq!(probe["scopesSupported"], json!(["read", "write"]));
    let (status, registered) = h
        .post(
            "/api/oauth/clients/register-dynamic",
            json!({
                "owner": "org", "registrationEndpoint": probe["registrationEndpoint"],
                "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
                "issuer": probe["issuer"], "resource": probe["resource"],
                "scopes": probe["scopesSupported"],
                "tokenEndpointAuthMethodsSupported": probe["tokenEndpointAuthMethodsSupported"],
                "originIntegration": "secure",
            }),
        )
        .await;
    assert_eq!(status, 200, "{registered}");
    let client = registered["client"].as_str().unwrap().to_owned();

    // Start without scopes: the MCP server's are discovered.
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": client, "clientOwner": "org", "owner": "org", "name": "main",
                   "integration": "secure", "template": "oauth2"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "redirect", "{started}");
    let state = started["state"].as_str().unwrap().to_owned();
    let url = reqwest::Url::parse(started["authorizationUrl"].as_str().unwrap()).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["scope"], "read write");
    assert_eq!(query["resource"], endpoint);

    // The authorization URL without a browser; the AS approves and redirects to the callback.
    let answer = no_redirects().get(url.as_str()).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 303);
    let callback = answer.headers()["location"].to_str().unwrap().to_owned();
    // The callback is public: no API token.
    let page = reqwest::get(&callback).await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("\"ok\":true"));

    // The callback's result, once, behind the API token.
    let await_path = format!("/api/oauth/await/{state}");
    let anonymous = reqwest::get(format!("{}{await_path}", h.base))
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let (status, result) = h.get(&await_path).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["type"], "executor:oauth-result");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["sessionId"], state.as_str());
    assert_eq!(result["name"], "main");
    assert_eq!(result["oauthClient"], client.as_str());
    assert_eq!(result["oauthScope"], "read");
    assert_eq!(result["missingOAuthScopes"], json!(["write"]));
    assert!(result.get("description").is_none());
    assert_eq!(h.get(&await_path).await, (200, Value::Null));
    assert_eq!(h.get("/api/oauth/await/unknown").await, (200, Value::Null));

    // The connection views carry the OAuth columns and the missing scopes.
    let (_, connections) = h.get("/api/connections?integration=secure").await;
    let connection = &connections[0];
    assert_eq!(connection["oauthClient"], client.as_str(), "{connection}");
    assert_eq!(connection["oauthClientOwner"], "org");
    assert_eq!(connection["oauthScope"], "read");
    assert_eq!(connection["missingOAuthScopes"], json!(["write"]));
    assert!(connection["expiresAt"].as_i64().is_some());

    // The catalog was listed with the bearer (the server refuses anything else).
    let (_, tools) = h.get("/api/tools?integration=secure").await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["address"].as_str())
        .collect();
    assert!(
        names.contains(&"tools.secure.org.main.get_workspace"),
        "{names:?}"
    );
    let first_token = auth.issued.lock().unwrap()[0].clone();
    let log = mcp_log(&auth);
    assert!(
        log.iter()
            .any(|r| r.rpc.as_deref() == Some("tools/list") && r.bearer == first_token),
        "{log:?}"
    );

    // Calls carry the bearer; the session keeps its state across calls.
    let result = call_secure(
        &h,
        r#"await tools.secure.org.main.select_workspace({workspace: "w1"});
           return await tools.secure.org.main.get_workspace({});"#,
    )
    .await;
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["data"]["content"][0]["text"], "workspace:w1");

    // The token lacks `write`: 403 insufficient_scope → oauth_scope_insufficient.
    let denied = call_secure(
        &h,
        "return await tools.secure.org.main.delete_everything({})",
    )
    .await;
    assert_eq!(denied["ok"], false, "{denied}");
    assert_eq!(
        denied["error"]["code"], "oauth_scope_insufficient",
        "{denied}"
    );
    assert_eq!(denied["error"]["status"], 403);
    assert_eq!(denied["error"]["retryable"], false);
    assert_eq!(denied["error"]["details"]["category"], "authentication");
    assert!(
        !denied["error"]["details"]["recovery"]
            .as_str()
            .unwrap()
            .contains("oauth.start"),
        "{denied}"
    );

    // A session with the first bearer is pooled now.
    let pooled = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
    assert_eq!(pooled["ok"], true, "{pooled}");
    assert_eq!(h.engine.live_mcp_sessions(), 1);

    // Expired: many concurrent executions, one refresh. The refresh revokes the old access
    // token, so only the new bearer works downstream.
    auth.revoke_on_refresh.store(true, Ordering::SeqCst);
    let before = mcp_log(&auth).len();
    let key = executor_store::ConnectionKey::new(executor_core::Owner::Org, "secure", "main");
    h.engine.expire_oauth_token(&h.caller, &key).await.unwrap();
    let calls = (0..20).map(|_| {
        call_secure(
            &h,
            r#"await tools.secure.org.main.select_workspace({workspace: "w2"});
               return await tools.secure.org.main.get_workspace({});"#,
        )
    });
    for r in futures::future::join_all(calls).await {
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["data"]["content"][0]["text"], "workspace:w2");
    }
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 1);
    let fresh = auth.issued.lock().unwrap().last().unwrap().clone();
    assert_ne!(fresh, first_token);
    let after: Vec<McpRequest> = mcp_log(&auth)[before..].to_vec();
    let tool_calls: Vec<&McpRequest> = after
        .iter()
        .filter(|r| r.rpc.as_deref() == Some("tools/call"))
        .collect();
    assert_eq!(tool_calls.len(), 40, "{after:?}");
    for r in &tool_calls {
        assert_eq!(
            (r.bearer.as_str(), r.status),
            (fresh.as_str(), 200),
            "{r:?}"
        );
    }
    // The session pooled with the old bearer was closed (rejected: the token is revoked), not
    // reused.
    assert!(
        after
            .iter()
            .any(|r| r.method == "DELETE" && r.bearer == first_token),
        "{after:?}"
    );
    // And the pooled session of the new generation carries on.
    let again = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
    assert_eq!(again["ok"], true, "{again}");

    // The server stops accepting the token before it expires (revoked upstream): the pooled
    // session's call is refused (401), the token refreshed once, and the call made again on a
    // new session with the new bearer.
    auth.access.lock().unwrap().clear();
    let refreshes = auth.refresh_requests.load(Ordering::SeqCst);
    let before = mcp_log(&auth).len();
    let retried = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
    assert_eq!(retried["ok"], true, "{retried}");
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), refreshes + 1);
    let newest = auth.issued.lock().unwrap().last().unwrap().clone();
    let after: Vec<McpRequest> = mcp_log(&auth)[before..].to_vec();
    let calls: Vec<(String, u16)> = after
        .iter()
        .filter(|r| r.rpc.as_deref() == Some("tools/call"))
        .map(|r| (r.bearer.clone(), r.status))
        .collect();
    assert_eq!(
        calls,
        vec![(fresh.clone(), 401), (newest.clone(), 200)],
        "{after:?}"
    );
    assert!(
        after
            .iter()
            .any(|r| r.rpc.as_deref() == Some("initialize") && r.bearer == newest),
        "the retry dials a new session: {after:?}"
    );

    // A plain 403 at the handshake → connection_rejected (403).
    auth.expires_in.store(3600, Ordering::SeqCst);
    h.engine.expire_oauth_token(&h.caller, &key).await.unwrap();
    auth.mcp_forbidden.store(true, Ordering::SeqCst);
    let forbidden = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
    assert_eq!(
        forbidden["error"]["code"], "connection_rejected",
        "{forbidden}"
    );
    assert_eq!(forbidden["error"]["status"], 403, "{forbidden}");
    auth.mcp_forbidden.store(false, Ordering::SeqCst);
    let healed = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
    assert_eq!(healed["ok"], true, "{healed}");

    // Refused, and its refresh refused for good → oauth_reauth_required; the next refusal
    // does not ask the authorization server again.
    auth.revoke_all.store(true, Ordering::SeqCst);
    auth.access.lock().unwrap().clear();
    let refreshes = auth.refresh_requests.load(Ordering::SeqCst);
    for _ in 0..2 {
        let refused = call_secure(&h, "return await tools.secure.org.main.get_workspace({})").await;
        assert_eq!(refused["ok"], false, "{refused}");
        assert_eq!(
            refused["error"]["code"], "oauth_reauth_required",
            "{refused}"
        );
        assert_eq!(refused["error"]["retryable"], false);
    }
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), refreshes + 1);
    assert_no_secret_leaked(&auth, h.data_dir());
}

/// Issue #23: two replicas on one PostgreSQL database, 25 concurrent calls on each as the token
/// expires → one refresh request at the authorization server, and every call succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refresh_is_single_flight_across_replicas() {
    let Some(url) = support::fresh_postgres().await else {
        return;
    };
    let key = executor_store::MasterKey::generate();
    let replica = || {
        Harness::start_opts(Options {
            postgres: Some((url.clone(), key.clone())),
            ..Options::default()
        })
    };
    let (auth, base) = serve_as().await;
    let a = replica().await;
    let b = replica().await;
    add_notes(&a, &base).await;
    let (_, probe) = a
        .post("/api/oauth/probe", json!({"url": format!("{base}/api")}))
        .await;
    let (status, registered) = a
        .post(
            "/api/oauth/clients/register-dynamic",
            json!({
                "owner": "org", "registrationEndpoint": probe["registrationEndpoint"],
                "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
                "issuer": probe["issuer"], "scopes": ["read"],
                "tokenEndpointAuthMethodsSupported": probe["tokenEndpointAuthMethodsSupported"],
            }),
        )
        .await;
    assert_eq!(status, 200, "{registered}");
    code_flow(&a, registered["client"].as_str().unwrap(), "main").await;
    assert_eq!(
        call_me(&b, "main").await["ok"],
        true,
        "the other replica calls with it"
    );
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 0);

    expire(&a, "main").await;
    let calls = (0..25)
        .map(|_| call_me(&a, "main"))
        .chain((0..25).map(|_| call_me(&b, "main")));
    for r in futures::future::join_all(calls).await {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert_eq!(
        auth.refresh_requests.load(Ordering::SeqCst),
        1,
        "one refresh for both replicas"
    );
}
