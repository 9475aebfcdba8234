//! OAuth against authorization servers shaped unlike the common case (issue #18): a token
//! endpoint that takes the client only in the `Authorization: Basic` header (or only in the
//! body), an MCP server whose RFC 9728 metadata lives where its 401 challenge says rather than
//! at a well-known path, metadata that names another resource, and an MCP 2025-03-26 server
//! with no metadata at all. Each is a small axum server on loopback in front of a real rmcp
//! server that requires the bearer tokens it issued.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
use support::Harness;

/// Where the protected-resource metadata is published.
#[derive(Clone, Copy, PartialEq)]
enum Prm {
    /// Only at `/meta/elsewhere`, which the 401 challenge names.
    Challenge,
    /// At `/.well-known/oauth-protected-resource/mcp`, which the challenge also names.
    WellKnown,
    /// Nowhere, and the challenge names none (MCP 2025-03-26).
    Nowhere,
}

#[derive(Clone)]
struct Config {
    prm: Prm,
    /// The `resource` the metadata claims (default: this server's `/mcp`).
    prm_resource: Option<String>,
    /// The challenge's `scope`.
    challenge_scope: Option<&'static str>,
    /// RFC 8414 metadata at the origin.
    as_metadata: bool,
    /// `token_endpoint_auth_methods_supported`.
    advertised: Vec<&'static str>,
    /// How the token endpoint insists on confidential clients authenticating.
    token_auth: &'static str,
}

struct AsState {
    config: Config,
    base: Mutex<String>,
    /// code → (client_id, redirect_uri, scope)
    codes: Mutex<HashMap<String, (String, String, String)>>,
    access: Mutex<Vec<String>>,
    /// client_id → secret (None: public).
    clients: Mutex<HashMap<String, Option<String>>>,
    /// How each token request authenticated: `basic`, `post` or `none`, with its grant.
    token_log: Mutex<Vec<(String, String)>>,
    /// The `token_endpoint_auth_method` each registration asked for.
    registered_as: Mutex<Vec<String>>,
    counter: AtomicU64,
}

type Shared = Arc<AsState>;

impl AsState {
    fn mint(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::SeqCst))
    }
    fn base(&self) -> String {
        self.base.lock().unwrap().clone()
    }
}

async fn as_metadata(State(s): State<Shared>) -> Response {
    if !s.config.as_metadata {
        return StatusCode::NOT_FOUND.into_response();
    }
    let base = s.base();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "scopes_supported": ["as:scope"],
        "token_endpoint_auth_methods_supported": s.config.advertised,
        "code_challenge_methods_supported": ["S256"],
    }))
    .into_response()
}

fn prm_document(s: &AsState) -> Json<Value> {
    let base = s.base();
    Json(json!({
        "resource": s.config.prm_resource.clone().unwrap_or_else(|| format!("{base}/mcp")),
        "authorization_servers": [base],
        "scopes_supported": ["files:read", "files:write"],
    }))
}

async fn prm_elsewhere(State(s): State<Shared>) -> Response {
    match s.config.prm {
        Prm::Challenge => prm_document(&s).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn prm_well_known(State(s): State<Shared>) -> Response {
    match s.config.prm {
        Prm::WellKnown => prm_document(&s).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let state = q.get("state").cloned().unwrap_or_default();
    let code = s.mint("code");
    s.codes.lock().unwrap().insert(
        code.clone(),
        (
            q.get("client_id").cloned().unwrap_or_default(),
            redirect.clone(),
            q.get("scope").cloned().unwrap_or_default(),
        ),
    );
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

fn token_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"error": error}))).into_response()
}

/// `(client_id, secret, how)` from the `Authorization: Basic` header or the body.
fn client_of(headers: &HeaderMap, form: &HashMap<String, String>) -> (String, String, String) {
    use base64::Engine as _;
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .unwrap_or_default();
        let decoded = String::from_utf8_lossy(&decoded).into_owned();
        let (id, secret) = decoded.split_once(':').unwrap_or((&decoded, ""));
        // RFC 6749 §2.3.1: each part is form-urlencoded.
        let unescape = |v: &str| {
            reqwest::Url::parse(&format!("http://x/?v={v}"))
                .ok()
                .and_then(|u| u.query_pairs().next().map(|(_, v)| v.into_owned()))
                .unwrap_or_default()
        };
        return (unescape(id), unescape(secret), "basic".to_owned());
    }
    let id = form.get("client_id").cloned().unwrap_or_default();
    match form.get("client_secret") {
        Some(secret) => (id, secret.clone(), "post".to_owned()),
        None => (id, String::new(), "none".to_owned()),
    }
}

async fn token(
    State(s): State<Shared>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    let grant = f.get("grant_type").cloned().unwrap_or_default();
    let (id, secret, how) = client_of(&headers, &f);
    s.token_log
        .lock()
        .unwrap()
        .push((how.clone(), grant.clone()));
    let expected = s.clients.lock().unwrap().get(&id).cloned();
    let Some(expected) = expected else {
        return token_error(StatusCode::UNAUTHORIZED, "invalid_client");
    };
    match expected {
        // A confidential client: its secret, sent the one way this server takes.
        Some(expected) if how != s.config.token_auth || secret != expected => {
            return token_error(StatusCode::UNAUTHORIZED, "invalid_client");
        }
        None if how != "none" => return token_error(StatusCode::UNAUTHORIZED, "invalid_client"),
        _ => {}
    }
    match grant.as_str() {
        "authorization_code" => {
            let Some((client, redirect, _)) = f
                .get("code")
                .and_then(|c| s.codes.lock().unwrap().remove(c))
            else {
                return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            if client != id || f.get("redirect_uri") != Some(&redirect) {
                return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
        }
        "client_credentials" | "refresh_token" => {}
        _ => return token_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
    let access = s.mint("access");
    s.access.lock().unwrap().push(access.clone());
    Json(
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": s.mint("refresh")}),
    )
    .into_response()
}

async fn register(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let method = body["token_endpoint_auth_method"]
        .as_str()
        .unwrap_or("client_secret_basic")
        .to_owned();
    s.registered_as.lock().unwrap().push(method.clone());
    let id = s.mint("dcr-client");
    let secret = (method != "none").then(|| s.mint("dcr-secret"));
    s.clients.lock().unwrap().insert(id.clone(), secret.clone());
    let mut answer = json!({"client_id": id, "redirect_uris": body["redirect_uris"],
                            "token_endpoint_auth_method": method});
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// The MCP server's door: a bearer this server issued, else 401 with the configured challenge.
async fn require_bearer(State(s): State<Shared>, request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    if s.access.lock().unwrap().contains(&bearer) {
        return next.run(request).await;
    }
    let base = s.base();
    let mut challenge = "Bearer".to_owned();
    let metadata = match s.config.prm {
        Prm::Challenge => Some(format!("{base}/meta/elsewhere")),
        Prm::WellKnown => Some(format!("{base}/.well-known/oauth-protected-resource/mcp")),
        Prm::Nowhere => None,
    };
    let mut params = Vec::new();
    if let Some(metadata) = metadata {
        params.push(format!(r#"resource_metadata="{metadata}""#));
    }
    if let Some(scope) = s.config.challenge_scope {
        params.push(format!(r#"scope="{scope}""#));
    }
    if !params.is_empty() {
        challenge = format!("Bearer {}", params.join(", "));
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        "unauthorized",
    )
        .into_response()
}

async fn serve(config: Config) -> (Shared, String) {
    let state = Arc::new(AsState {
        config,
        base: Mutex::default(),
        codes: Mutex::default(),
        access: Mutex::default(),
        clients: Mutex::new(HashMap::from([(
            "machine".to_owned(),
            Some("machine-secret".to_owned()),
        )])),
        token_log: Mutex::default(),
        registered_as: Mutex::default(),
        counter: AtomicU64::new(0),
    });
    let mcp: StreamableHttpService<StatefulHandler, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(StatefulHandler::default()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            require_bearer,
        ));
    let app = Router::new()
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(prm_well_known),
        )
        .route("/meta/elsewhere", get(prm_elsewhere))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/register", post(register))
        .with_state(state.clone())
        .merge(mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *state.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (state, base)
}

fn config(prm: Prm) -> Config {
    Config {
        prm,
        prm_resource: None,
        challenge_scope: None,
        as_metadata: true,
        advertised: vec!["client_secret_post", "none"],
        token_auth: "client_secret_post",
    }
}

/// Adds the server as integration `secure` with the oauth2 shorthand.
async fn add_secure(h: &Harness, base: &str) {
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"name": "Secure", "endpoint": format!("{base}/mcp"), "slug": "secure",
                   "remoteTransport": "streamable-http", "auth": {"kind": "oauth2"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Dynamic registration from what the probe found; returns the client slug.
async fn register_from(h: &Harness, probe: &Value) -> String {
    let (status, registered) = h
        .post(
            "/api/oauth/clients/register-dynamic",
            json!({
                "owner": "org", "registrationEndpoint": probe["registrationEndpoint"],
                "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
                "issuer": probe["issuer"], "resource": probe["resource"],
                "scopes": probe["scopesSupported"].as_array().cloned().unwrap_or_default(),
                "tokenEndpointAuthMethodsSupported": probe["tokenEndpointAuthMethodsSupported"],
                "originIntegration": "secure",
            }),
        )
        .await;
    assert_eq!(status, 200, "{registered}");
    registered["client"].as_str().unwrap().to_owned()
}

/// start → the authorization URL without a browser → the callback. Returns the query the
/// authorization server was sent.
async fn code_flow(h: &Harness, client: &str, name: &str) -> HashMap<String, String> {
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": client, "clientOwner": "org", "owner": "org", "name": name,
                   "integration": "secure", "template": "oauth2"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "redirect", "{started}");
    let url = reqwest::Url::parse(started["authorizationUrl"].as_str().unwrap()).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let answer = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(url.as_str())
        .send()
        .await
        .unwrap();
    let callback = answer.headers()["location"].to_str().unwrap().to_owned();
    let page = reqwest::get(&callback).await.unwrap().text().await.unwrap();
    assert!(page.contains("\"ok\":true"), "{page}");
    query
}

async fn get_workspace(h: &Harness, name: &str) -> Value {
    h.execute(&format!(
        "return await tools.secure.org.{name}.get_workspace({{}})"
    ))
    .await["structured"]["result"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_basic_only_token_endpoint_gets_the_client_in_the_header() {
    let (auth, base) = serve(Config {
        advertised: vec!["client_secret_basic"],
        token_auth: "basic",
        ..config(Prm::WellKnown)
    })
    .await;
    let h = Harness::start().await;
    add_secure(&h, &base).await;

    // A pre-registered confidential client for the client-credentials grant: the method is
    // read from the server's metadata and kept with the client.
    let (status, body) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "machine", "tokenUrl": format!("{base}/token"),
                   "grant": "client_credentials", "clientId": "machine",
                   "clientSecret": "machine-secret"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, clients) = h.get("/api/oauth/clients").await;
    assert_eq!(clients[0]["tokenEndpointAuthMethod"], "client_secret_basic");
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": "machine", "clientOwner": "org", "owner": "org", "name": "m",
                   "integration": "secure", "template": "oauth2"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "connected", "{started}");
    assert_eq!(get_workspace(&h, "m").await["ok"], true);
    // Due: the refresh authenticates the same way.
    let key = executor_store::ConnectionKey::new(executor_core::Owner::Org, "secure", "m");
    h.engine.expire_oauth_token(&h.caller, &key).await.unwrap();
    assert_eq!(get_workspace(&h, "m").await["ok"], true);

    // A registered client: asks for client_secret_basic, and exchanges its code so.
    let (status, probe) = h
        .post("/api/oauth/probe", json!({"url": format!("{base}/mcp")}))
        .await;
    assert_eq!(status, 200, "{probe}");
    let client = register_from(&h, &probe).await;
    code_flow(&h, &client, "main").await;
    assert_eq!(get_workspace(&h, "main").await["ok"], true);
    assert_eq!(*auth.registered_as.lock().unwrap(), ["client_secret_basic"]);
    let log = auth.token_log.lock().unwrap().clone();
    let expected: Vec<(String, String)> = [
        ("basic", "client_credentials"),
        ("basic", "client_credentials"),
        ("basic", "authorization_code"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(log, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_metadata_a_post_only_token_endpoint_gets_the_body_after_basic() {
    let (auth, base) = serve(Config {
        as_metadata: false,
        token_auth: "post",
        ..config(Prm::WellKnown)
    })
    .await;
    let h = Harness::start().await;
    add_secure(&h, &base).await;
    let (status, body) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "machine", "tokenUrl": format!("{base}/token"),
                   "grant": "client_credentials", "clientId": "machine",
                   "clientSecret": "machine-secret"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, clients) = h.get("/api/oauth/clients").await;
    assert!(
        clients[0].get("tokenEndpointAuthMethod").is_none(),
        "not known: {clients}"
    );
    let (status, started) = h
        .post(
            "/api/oauth/start",
            json!({"client": "machine", "clientOwner": "org", "owner": "org", "name": "m",
                   "integration": "secure", "template": "oauth2"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "connected", "{started}");
    let log = auth.token_log.lock().unwrap().clone();
    let hows: Vec<&str> = log.iter().map(|(how, _)| how.as_str()).collect();
    assert_eq!(hows, ["basic", "post"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_challenges_resource_metadata_and_scope_lead_the_flow() {
    let (_auth, base) = serve(Config {
        challenge_scope: Some("files:read"),
        ..config(Prm::Challenge)
    })
    .await;
    let endpoint = format!("{base}/mcp");
    let h = Harness::start().await;

    // Only the challenge says where the metadata is.
    let (status, probe) = h
        .post("/api/mcp/probe", json!({"endpoint": endpoint}))
        .await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["requiresOAuth"], true, "{probe}");
    assert_eq!(probe["supportsDynamicRegistration"], true, "{probe}");
    let (status, probe) = h.post("/api/oauth/probe", json!({"url": endpoint})).await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["resource"], endpoint.as_str());
    assert_eq!(probe["tokenUrl"], format!("{base}/token"));

    // The challenge's scope is asked for, over the scopes the server supports.
    add_secure(&h, &base).await;
    let client = register_from(&h, &probe).await;
    let query = code_flow(&h, &client, "main").await;
    assert_eq!(query["scope"], "files:read");
    assert_eq!(query["resource"], endpoint);
    let result = get_workspace(&h, "main").await;
    assert_eq!(result["ok"], true, "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_another_resource_is_refused() {
    let (auth, base) = serve(Config {
        prm_resource: Some("https://evil.example.com/mcp".to_owned()),
        ..config(Prm::WellKnown)
    })
    .await;
    let endpoint = format!("{base}/mcp");
    let h = Harness::start().await;
    let (status, probe) = h.post("/api/oauth/probe", json!({"url": endpoint})).await;
    assert_eq!(status, 400, "{probe}");
    assert_eq!(probe["_tag"], "OAuthProbeError", "{probe}");
    assert!(
        probe["message"]
            .as_str()
            .unwrap()
            .contains("https://evil.example.com/mcp"),
        "{probe}"
    );
    let (status, probe) = h
        .post("/api/mcp/probe", json!({"endpoint": endpoint}))
        .await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["requiresAuthentication"], true, "{probe}");
    assert_eq!(probe["requiresOAuth"], false, "{probe}");
    assert!(auth.registered_as.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_server_without_metadata_uses_the_default_endpoints() {
    let (auth, base) = serve(Config {
        as_metadata: false,
        ..config(Prm::Nowhere)
    })
    .await;
    let endpoint = format!("{base}/mcp");
    let h = Harness::start().await;
    let (status, probe) = h
        .post("/api/mcp/probe", json!({"endpoint": endpoint}))
        .await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["requiresOAuth"], true, "{probe}");
    let (status, probe) = h.post("/api/oauth/probe", json!({"url": endpoint})).await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["authorizationUrl"], format!("{base}/authorize"));
    assert_eq!(probe["tokenUrl"], format!("{base}/token"));
    assert_eq!(probe["registrationEndpoint"], format!("{base}/register"));

    add_secure(&h, &base).await;
    let client = register_from(&h, &probe).await;
    code_flow(&h, &client, "main").await;
    assert_eq!(get_workspace(&h, "main").await["ok"], true);
    // Nothing advertised: a public client, as for any server that says nothing.
    assert_eq!(*auth.registered_as.lock().unwrap(), ["none"]);
}
