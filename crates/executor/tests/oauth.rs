//! OAuth 2.1 end to end: our own small authorization server (RFC 8414 metadata, /authorize,
//! /token with PKCE S256, refresh-token rotation and client credentials, RFC 7591 /register)
//! and an OpenAPI API that requires its bearer tokens.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use support::Harness;

#[derive(Default)]
struct AsState {
    base: Mutex<String>,
    /// code → (client_id, redirect_uri, challenge)
    codes: Mutex<HashMap<String, (String, String, String)>>,
    /// Valid refresh tokens.
    refresh: Mutex<Vec<String>>,
    /// Valid access tokens.
    access: Mutex<Vec<String>>,
    /// Every registered client id.
    clients: Mutex<Vec<String>>,
    token_requests: AtomicUsize,
    refresh_requests: AtomicUsize,
    registrations: AtomicUsize,
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
    let code = s.mint("code");
    s.codes.lock().unwrap().insert(
        code.clone(),
        (
            q.get("client_id").cloned().unwrap_or_default(),
            redirect.clone(),
            q["code_challenge"].clone(),
        ),
    );
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

fn token_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

async fn token(State(s): State<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    s.token_requests.fetch_add(1, Ordering::SeqCst);
    let issue = |s: &AsState, with_refresh: bool| {
        let access = s.mint("access");
        s.access.lock().unwrap().push(access.clone());
        let mut body = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": s.expires_in.load(Ordering::SeqCst),
            "scope": "read",
        });
        if with_refresh {
            let refresh = s.mint("refresh");
            s.refresh.lock().unwrap().push(refresh.clone());
            body["refresh_token"] = json!(refresh);
        }
        Json(body).into_response()
    };
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((client, redirect, challenge)) = f
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
            issue(&s, true)
        }
        Some("refresh_token") => {
            s.refresh_requests.fetch_add(1, Ordering::SeqCst);
            // Slow enough that concurrent callers would overlap.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let presented = f.get("refresh_token").cloned().unwrap_or_default();
            let mut valid = s.refresh.lock().unwrap();
            let Some(i) = valid.iter().position(|r| *r == presented) else {
                return token_error("invalid_grant");
            };
            if s.revoke_all.load(Ordering::SeqCst) || f.contains_key("scope") {
                return token_error("invalid_grant");
            }
            // Rotation: the presented token is spent.
            valid.remove(i);
            drop(valid);
            issue(&s, true)
        }
        Some("client_credentials") => {
            if f.get("client_id").map(String::as_str) != Some("machine")
                || f.get("client_secret").map(String::as_str) != Some("machine-secret")
            {
                return token_error("invalid_client");
            }
            issue(&s, false)
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
    if s.access.lock().unwrap().iter().any(|a| a == token) {
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

async fn serve_as() -> (Shared, String) {
    let state = Shared::default();
    state.expires_in.store(3600, Ordering::SeqCst);
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
        .with_state(state.clone());
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
    h.engine.expire_oauth_token(&key).await.unwrap();
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
    assert_eq!(auth.refresh_requests.load(Ordering::SeqCst), 3);

    // No token in plaintext in the data dir.
    let tokens: Vec<String> = auth.access.lock().unwrap().clone();
    for entry in std::fs::read_dir(h.data_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for t in &tokens {
                assert!(!text.contains(t.as_str()), "{t} in {path:?}");
            }
        }
    }
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
