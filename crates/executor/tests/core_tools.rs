//! The core tools under `tools.executor.coreTools.*` through real executions: connections
//! (create from pasted inputs and provider items, the §1.4 input rules, handoff, remove,
//! refresh), OAuth clients, probe, start and cancel against a small authorization server of
//! our own, and the approval gate on the tools that write.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use support::Harness;

// ---- an API keyed by `X-Api-Key`, and an OAuth-protected one with its authorization server --

/// What the test servers saw.
#[derive(Default)]
struct Upstream {
    base: Mutex<String>,
    /// `X-Api-Key` values, in order.
    keys: Mutex<Vec<String>>,
    /// Authorization codes → the redirect URI they were issued for.
    codes: Mutex<HashMap<String, String>>,
    /// Access tokens issued.
    access: Mutex<Vec<String>>,
    /// The `redirect_uris` of each dynamic registration.
    registered: Mutex<Vec<Value>>,
    counter: AtomicU64,
}

type Shared = Arc<Upstream>;

impl Upstream {
    fn mint(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::SeqCst))
    }
}

fn keyed_spec(base: &str) -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Echo", "version": "1"},
        "servers": [{"url": base}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "security": [{"key": []}],
        "paths": {"/me": {"get": {
            "operationId": "getMe", "tags": ["account"],
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
        }}}
    })
    .to_string()
}

const NOTES_SPEC: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "Notes", "version": "1"},
  "paths": {"/api/me": {"get": {"operationId": "me", "tags": ["user"],
    "responses": {"200": {"description": "who", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}
}"#;

async fn keyed_me(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    s.keys.lock().unwrap().push(key.clone());
    if key.starts_with("ghp_") {
        Json(json!({"login": "tester"})).into_response()
    } else {
        StatusCode::UNAUTHORIZED.into_response()
    }
}

async fn as_metadata(State(s): State<Shared>) -> Json<Value> {
    let base = s.base.lock().unwrap().clone();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "scopes_supported": ["read"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

/// Signs the person in at once: back to the redirect URI with a code.
async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if q.get("response_type").map(String::as_str) != Some("code")
        || q.get("code_challenge_method").map(String::as_str) != Some("S256")
    {
        return (StatusCode::BAD_REQUEST, "PKCE code flow only").into_response();
    }
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let code = s.mint("code");
    s.codes
        .lock()
        .unwrap()
        .insert(code.clone(), redirect.clone());
    let state = q.get("state").cloned().unwrap_or_default();
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

async fn token(State(s): State<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    let valid = match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => f
            .get("code")
            .and_then(|c| s.codes.lock().unwrap().remove(c))
            .is_some_and(|redirect| f.get("redirect_uri") == Some(&redirect)),
        Some("client_credentials") => {
            f.get("client_id").map(String::as_str) == Some("machine")
                && f.get("client_secret").map(String::as_str) == Some("machine-secret")
        }
        _ => false,
    };
    if !valid {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    let access = s.mint("access");
    s.access.lock().unwrap().push(access.clone());
    Json(json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": "read"}))
        .into_response()
}

async fn register(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    s.registered
        .lock()
        .unwrap()
        .push(body["redirect_uris"].clone());
    let id = s.mint("dcr-client");
    (StatusCode::CREATED, Json(json!({"client_id": id}))).into_response()
}

async fn notes_me(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if s.access.lock().unwrap().iter().any(|a| a == token) {
        Json(json!({"login": "ada"})).into_response()
    } else {
        StatusCode::UNAUTHORIZED.into_response()
    }
}

async fn serve_upstream() -> (Shared, String) {
    let state = Shared::default();
    let app = Router::new()
        .route("/me", get(keyed_me))
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/register", post(register))
        .route("/api/me", get(notes_me))
        .route("/openapi.json", get(|| async { NOTES_SPEC }))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *state.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (state, base)
}

/// `echo` (API key in `X-Api-Key`, method `apikey-0`) and `notes` (OAuth, method `oauth2`).
async fn add_integrations(h: &Harness, base: &str) {
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": keyed_spec(base)}, "slug": "echo"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "url", "url": format!("{base}/openapi.json")}, "slug": "notes",
                   "baseUrl": base, "authenticationTemplate": [{"type": "oauth2"}]}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
}

// ---- helpers ------------------------------------------------------------------------------

/// Calls `executor.coreTools.<tool>(args)` as the approver, with a person accepting the tools
/// `autoApprove` does not cover, and returns the result union.
async fn core(h: &Harness, tool: &str, args: Value) -> Value {
    let mut executed = h
        .execute(&format!(
            "return await tools.executor.coreTools.{tool}({args})"
        ))
        .await;
    while executed["status"] == "paused" {
        let id = executed["structured"]["executionId"].as_str().unwrap();
        let (status, resumed) = h.resume(id, "accept").await;
        assert_eq!(status, 200, "{resumed}");
        executed = resumed;
    }
    assert_eq!(executed["status"], "completed", "{executed}");
    executed["structured"]["result"].clone()
}

async fn core_ok(h: &Harness, tool: &str, args: Value) -> Value {
    let result = core(h, tool, args).await;
    assert_eq!(result["ok"], true, "{tool}: {result}");
    result["data"].clone()
}

/// The code and message of a failed core tool call.
async fn core_err(h: &Harness, tool: &str, args: Value) -> (String, String) {
    let result = core(h, tool, args).await;
    assert_eq!(result["ok"], false, "{tool}: {result}");
    (
        result["error"]["code"].as_str().unwrap().to_owned(),
        result["error"]["message"].as_str().unwrap().to_owned(),
    )
}

async fn connection_names(h: &Harness, integration: &str) -> Vec<String> {
    let listed = core_ok(h, "connections.list", json!({"integration": integration})).await;
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn vault_items(h: &Harness) -> Value {
    core_ok(h, "providers.items", json!({"provider": "vault"})).await
}

fn write_auth_file(h: &Harness, body: &Value) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = h.data_dir().join("auth.json");
    std::fs::write(&path, body.to_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

// ---- tests --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_from_inputs_and_items_with_the_input_rules() {
    let (upstream, base) = serve_upstream().await;
    let h = Harness::start().await;
    add_integrations(&h, &base).await;
    write_auth_file(&h, &json!({"GITHUB_TOKEN": "ghp_from_file", "OTHER": "x"}));

    // Pasted through `inputs`: the value goes to the vault, the answer carries no value.
    let created = core_ok(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "Work Key", "integration": "echo", "template": "apikey-0",
               "inputs": {"token": "ghp_pasted_secret"}}),
    )
    .await;
    assert_eq!(created["name"], "workKey", "{created}");
    assert_eq!(created["provider"], "vault");
    assert_eq!(created["address"], "tools.echo.org.workKey");
    assert!(
        !created.to_string().contains("ghp_pasted_secret"),
        "{created}"
    );
    assert_eq!(
        vault_items(&h).await,
        json!([{"id": "connection:org:echo:workKey:token", "name": "connection:org:echo:workKey:token"}])
    );
    let called = h
        .execute("return await tools.echo.org.workKey.account.getMe({})")
        .await;
    assert_eq!(called["structured"]["result"]["ok"], true, "{called}");
    assert_eq!(
        upstream.keys.lock().unwrap().last().unwrap(),
        "ghp_pasted_secret"
    );

    // `from` and `inputs` of provider items reference the item; nothing is copied.
    let from = core_ok(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "filed", "integration": "echo", "template": "apikey-0",
               "from": {"provider": "file", "id": "GITHUB_TOKEN"}}),
    )
    .await;
    assert_eq!(from["provider"], "file", "{from}");
    let by_inputs = core_ok(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "items", "integration": "echo", "template": "apikey-0",
               "inputs": {"token": {"provider": "file", "id": "GITHUB_TOKEN"}}}),
    )
    .await;
    assert_eq!(by_inputs["provider"], "file", "{by_inputs}");
    for name in ["filed", "items"] {
        let called = h
            .execute(&format!(
                "return await tools.echo.org.{name}.account.getMe({{}})"
            ))
            .await;
        assert_eq!(called["structured"]["result"]["ok"], true, "{called}");
        assert_eq!(
            upstream.keys.lock().unwrap().last().unwrap(),
            "ghp_from_file"
        );
    }
    assert_eq!(vault_items(&h).await.as_array().unwrap().len(), 1);

    // The §1.4 rules, as tool-level errors; nothing is stored by a refused create.
    let before = connection_names(&h, "echo").await;
    let refused = [
        (
            json!({}),
            "invalid_connection_input",
            "A connection must supply at least one credential input.",
        ),
        (
            json!({"inputs": {"token": "ghp_x", "user": {"provider": "file", "id": "OTHER"}}}),
            "invalid_connection_input",
            "A connection cannot mix pasted and external-provider inputs.",
        ),
        (
            json!({"inputs": {"token": {"provider": "file", "id": "GITHUB_TOKEN"}, "user": {"provider": "vault", "id": "x"}}}),
            "invalid_connection_input",
            "A connection's inputs must all use the same external provider.",
        ),
        (
            json!({"from": {"provider": "nope", "id": "GITHUB_TOKEN"}}),
            "credential_provider_not_registered",
            "Credential provider not registered: nope (see providers.list)",
        ),
        (
            json!({"from": {"provider": "file"}}),
            "invalid_tool_arguments",
            "executor.coreTools.connections.create: `from` must be { provider, id }, got {\"provider\":\"file\"}",
        ),
    ];
    for (origin, code, message) in refused {
        let mut args = json!({"owner": "org", "name": "refused", "integration": "echo", "template": "apikey-0"});
        for (k, v) in origin.as_object().unwrap() {
            args[k] = v.clone();
        }
        assert_eq!(
            core_err(&h, "connections.create", args).await,
            (code.to_owned(), message.to_owned())
        );
    }
    let (code, _) = core_err(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "x", "integration": "nope", "template": "none"}),
    )
    .await;
    assert_eq!(code, "integration_not_found");
    assert_eq!(connection_names(&h, "echo").await, before);
    assert_eq!(vault_items(&h).await.as_array().unwrap().len(), 1);

    // The HTTP route shares the rules.
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "refused", "integration": "echo", "template": "apikey-0", "values": {}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "A connection must supply at least one credential input."
    );

    // `template: "none"` needs no origin.
    let open = core_ok(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "open", "integration": "echo", "template": "none"}),
    )
    .await;
    assert_eq!(open["template"], "none", "{open}");

    // The listing: no values, an OAuth scope count (null without OAuth).
    let listed = core_ok(&h, "connections.list", json!({"integration": "echo"})).await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 4, "{listed}");
    assert!(
        items.iter().all(|c| c["oauthScopeCount"].is_null()),
        "{listed}"
    );
    assert!(!listed.to_string().contains("ghp_"), "{listed}");

    // Refresh answers the tools and the health; remove deletes the pasted value.
    let refreshed = core_ok(
        &h,
        "connections.refresh",
        json!({"owner": "org", "integration": "echo", "name": "workKey"}),
    )
    .await;
    assert_eq!(
        refreshed["tools"][0]["address"], "tools.echo.org.workKey.account.getMe",
        "{refreshed}"
    );
    assert!(refreshed["lastHealth"].is_null(), "{refreshed}");
    let removed = core_ok(
        &h,
        "connections.remove",
        json!({"owner": "org", "integration": "echo", "name": "workKey"}),
    )
    .await;
    assert_eq!(removed, json!({"removed": true}));
    assert_eq!(vault_items(&h).await, json!([]));
    let gone = h
        .execute("return await tools.echo.org.workKey.account.getMe({})")
        .await;
    assert_eq!(
        gone["structured"]["result"]["error"]["code"], "tool_not_found",
        "{gone}"
    );
    for tool in ["connections.remove", "connections.refresh"] {
        let (code, message) = core_err(
            &h,
            tool,
            json!({"owner": "org", "integration": "echo", "name": "workKey"}),
        )
        .await;
        assert_eq!(code, "connection_not_found");
        assert_eq!(message, "Connection not found: tools.echo.org.workKey");
    }

    // A pasted value under a name that does not look secret is still never written in clear
    // (the execution journal and history keep the calls' arguments, sealed), even when the call
    // fails.
    let history = || async {
        let (_, list) = h.get("/api/executions?limit=200").await;
        list.as_array().map_or(0, Vec::len)
    };
    let before = history().await;
    core(
        &h,
        "connections.create",
        json!({"owner": "org", "name": "journal_marker_conn", "integration": "echo",
               "template": "apikey-0", "inputs": {"username": "plain_pasted_value"}}),
    )
    .await;
    let on_disk = || {
        let mut all = String::new();
        for entry in std::fs::read_dir(h.data_dir()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
        all
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while history().await == before {
        assert!(
            std::time::Instant::now() < deadline,
            "the call was never journaled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!on_disk().contains("plain_pasted_value"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handoffs_link_to_the_web_ui_without_secrets() {
    let (_upstream, base) = serve_upstream().await;
    let h = Harness::start().await;
    add_integrations(&h, &base).await;

    // The web base is the server's own address (no EXECUTOR_WEB_BASE_URL in tests).
    let handoff = core_ok(
        &h,
        "connections.createHandoff",
        json!({"integration": "echo", "owner": "org", "template": "apikey-0", "label": "Work key"}),
    )
    .await;
    assert_eq!(
        handoff["url"],
        format!(
            "{}/integrations/echo?addAccount=1&owner=org&template=apikey-0&label=Work+key",
            h.base
        )
    );
    assert!(
        handoff["instructions"]
            .as_str()
            .unwrap()
            .contains("Do not ask them to paste"),
        "{handoff}"
    );
    let minimal = core_ok(
        &h,
        "connections.createHandoff",
        json!({"integration": "echo"}),
    )
    .await;
    assert_eq!(
        minimal["url"],
        format!("{}/integrations/echo?addAccount=1", h.base)
    );
    let (code, _) = core_err(
        &h,
        "connections.createHandoff",
        json!({"integration": "nope"}),
    )
    .await;
    assert_eq!(code, "integration_not_found");

    let handoff = core_ok(
        &h,
        "oauth.clients.createHandoff",
        json!({"integration": "notes", "owner": "user", "slug": "app", "grant": "client_credentials",
               "clientId": "cid", "tokenUrl": format!("{base}/token")}),
    )
    .await;
    let url = reqwest::Url::parse(handoff["url"].as_str().unwrap()).unwrap();
    assert_eq!(url.path(), "/integrations/notes");
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(
        query,
        HashMap::from(
            [
                ("addAccount", "1"),
                ("oauthClient", "1"),
                ("owner", "user"),
                ("clientSlug", "app"),
                ("grant", "client_credentials"),
                ("clientId", "cid"),
                ("tokenUrl", &format!("{base}/token")),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        )
    );
    // A secret is refused, and not echoed back.
    let smuggled = core(
        &h,
        "oauth.clients.createHandoff",
        json!({"integration": "notes", "clientId": "cid", "clientSecret": "SMUGGLED_SECRET"}),
    )
    .await;
    assert_eq!(
        smuggled["error"]["code"], "invalid_tool_arguments",
        "{smuggled}"
    );
    assert!(
        !smuggled.to_string().contains("SMUGGLED_SECRET"),
        "{smuggled}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_clients_probe_start_and_cancel() {
    let (upstream, base) = serve_upstream().await;
    let h = Harness::start().await;
    add_integrations(&h, &base).await;
    let callback = format!("{}/api/oauth/callback", h.base);

    let probe = core_ok(&h, "oauth.probe", json!({"url": base})).await;
    assert_eq!(probe["tokenUrl"], format!("{base}/token"), "{probe}");
    assert_eq!(probe["registrationEndpoint"], format!("{base}/register"));
    let (code, _) = core_err(&h, "oauth.probe", json!({"url": h.base})).await;
    assert_eq!(code, "oauth_probe_error");

    // Dynamic registration with this server's callback as the redirect URI.
    let registered = core_ok(
        &h,
        "oauth.clients.registerDynamic",
        json!({"owner": "org", "registrationEndpoint": probe["registrationEndpoint"],
               "authorizationUrl": probe["authorizationUrl"], "tokenUrl": probe["tokenUrl"],
               "issuer": probe["issuer"], "scopes": ["read"],
               "tokenEndpointAuthMethodsSupported": probe["tokenEndpointAuthMethodsSupported"]}),
    )
    .await;
    let dcr = registered["client"].as_str().unwrap().to_owned();
    assert_eq!(
        *upstream.registered.lock().unwrap(),
        vec![json!([callback.clone()])]
    );

    // A public client; a secret is refused with where to put it instead.
    let (code, message) = core_err(
        &h,
        "oauth.clients.create",
        json!({"owner": "org", "slug": "public", "grant": "authorization_code", "clientId": "pub",
               "authorizationUrl": format!("{base}/authorize"), "tokenUrl": format!("{base}/token"),
               "clientSecret": "s3cr3t"}),
    )
    .await;
    assert_eq!(code, "invalid_tool_arguments");
    assert!(message.contains("oauth.clients.createHandoff"), "{message}");
    let created = core_ok(
        &h,
        "oauth.clients.create",
        json!({"owner": "org", "slug": "public", "grant": "authorization_code", "clientId": "pub",
               "authorizationUrl": format!("{base}/authorize"), "tokenUrl": format!("{base}/token")}),
    )
    .await;
    assert_eq!(created, json!({"client": "public"}));

    // A confidential client is registered by a person (here: the HTTP API).
    let (status, _) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "machine", "tokenUrl": format!("{base}/token"),
                   "grant": "client_credentials", "clientId": "machine", "clientSecret": "machine-secret"}),
        )
        .await;
    assert_eq!(status, 200);
    let clients = core_ok(&h, "oauth.clients.list", json!({})).await;
    let mut slugs: Vec<&str> = clients
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect();
    slugs.sort_unstable();
    let mut expected = vec![dcr.as_str(), "machine", "public"];
    expected.sort_unstable();
    assert_eq!(slugs, expected, "{clients}");
    assert!(!clients.to_string().contains("machine-secret"), "{clients}");
    assert!(!clients.to_string().contains("clientSecret"), "{clients}");

    // Client credentials: connected at once, and the connection works.
    let started = core_ok(
        &h,
        "oauth.start",
        json!({"client": "machine", "clientOwner": "org", "owner": "org", "name": "robot",
               "integration": "notes", "template": "oauth2"}),
    )
    .await;
    assert_eq!(started["status"], "connected", "{started}");
    assert_eq!(started["connection"]["oauthClient"], "machine");
    assert!(started["connection"].get("lastHealth").is_none());
    assert!(!started.to_string().contains("access-"), "{started}");
    let me = h
        .execute("return await tools.notes.org.robot.user.me({})")
        .await;
    assert_eq!(me["structured"]["result"]["data"]["login"], "ada", "{me}");

    // Authorization code: the URL for the person, whose sign-in lands on our callback.
    let started = core_ok(
        &h,
        "oauth.start",
        json!({"client": "public", "clientOwner": "org", "owner": "org", "name": "ada",
               "integration": "notes", "template": "oauth2", "scopes": ["read"]}),
    )
    .await;
    assert_eq!(started["status"], "redirect", "{started}");
    let authorization = reqwest::Url::parse(started["authorizationUrl"].as_str().unwrap()).unwrap();
    let query: HashMap<String, String> = authorization.query_pairs().into_owned().collect();
    assert_eq!(query["redirect_uri"], callback);
    assert_eq!(query["state"], started["state"].as_str().unwrap());
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = no_redirects
        .get(authorization.as_str())
        .send()
        .await
        .unwrap();
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&callback), "{location}");
    let page = reqwest::get(&location).await.unwrap().text().await.unwrap();
    assert!(page.contains("Connected"), "{page}");
    let listed = core_ok(&h, "connections.list", json!({"integration": "notes"})).await;
    let ada = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "ada")
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(ada["oauthClient"], "public");
    assert_eq!(ada["oauthScopeCount"], 1);
    assert!(ada.get("oauthScope").is_none(), "{ada}");
    let verbose = core_ok(
        &h,
        "connections.list",
        json!({"integration": "notes", "verbose": true}),
    )
    .await;
    assert!(
        verbose["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "ada" && c["oauthScope"] == "read"),
        "{verbose}"
    );

    // A cancelled sign-in cannot complete.
    let started = core_ok(
        &h,
        "oauth.start",
        json!({"client": "public", "clientOwner": "org", "owner": "org", "name": "later",
               "integration": "notes", "template": "oauth2"}),
    )
    .await;
    let state = started["state"].as_str().unwrap();
    let cancelled = core_ok(&h, "oauth.cancel", json!({"state": state})).await;
    assert_eq!(cancelled, json!({"cancelled": true}));
    let page = reqwest::get(format!("{callback}?state={state}&code=x"))
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 400);

    let (code, _) = core_err(
        &h,
        "oauth.start",
        json!({"client": "nope", "clientOwner": "org", "owner": "org", "name": "x",
               "integration": "notes", "template": "oauth2"}),
    )
    .await;
    assert_eq!(code, "oauth_start_error");

    // Remove says whether there was a client to remove.
    let args = json!({"owner": "org", "slug": "public"});
    assert_eq!(
        core_ok(&h, "oauth.clients.remove", args.clone()).await,
        json!({"removed": true})
    );
    assert_eq!(
        core_ok(&h, "oauth.clients.remove", args).await,
        json!({"removed": false})
    );
}

/// Every core tool, with whether it asks a person first.
const CORE_TOOLS: &[(&str, bool)] = &[
    ("integrations.list", false),
    ("connections.list", false),
    ("connections.create", true),
    ("connections.createHandoff", false),
    ("connections.remove", true),
    ("connections.refresh", true),
    ("providers.list", false),
    ("providers.items", false),
    ("oauth.clients.list", false),
    ("oauth.clients.create", true),
    ("oauth.clients.createHandoff", false),
    ("oauth.clients.registerDynamic", true),
    ("oauth.clients.remove", true),
    ("oauth.probe", true),
    ("oauth.start", true),
    ("oauth.cancel", false),
    ("policies.list", false),
    ("policies.create", true),
    ("policies.update", true),
    ("policies.remove", true),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_for_approval_and_every_tool_describes_itself() {
    let (_upstream, base) = serve_upstream().await;
    let h = Harness::start().await;
    add_integrations(&h, &base).await;

    let (status, listed) = h.get("/api/tools?integration=executor").await;
    assert_eq!(status, 200);
    let listed: Vec<(String, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("coreTools.")
                    .to_owned(),
                t["requiresApproval"] == true,
            )
        })
        .collect();
    let expected: Vec<(String, bool)> = CORE_TOOLS
        .iter()
        .map(|(name, gated)| ((*name).to_owned(), *gated))
        .collect();
    assert_eq!(listed, expected);
    for (name, _) in CORE_TOOLS {
        let described = core_free(
            &h,
            &format!("return await tools.describe.tool({{ path: 'executor.coreTools.{name}' }})"),
        )
        .await;
        assert!(described["error"].is_null(), "{name}: {described}");
        assert!(
            described["inputTypeScript"].is_string(),
            "{name}: {described}"
        );
    }

    // Arguments that must fail are refused before the gate: no person is asked.
    for (args, message) in [
        (
            r#"{ owner: "org", name: "main", integration: "echo", template: "none", colour: "red" }"#,
            "executor.coreTools.connections.create: unknown argument `colour`; it takes owner, name, integration, template, identityLabel, description, replace, from, inputs.",
        ),
        (
            r#"{ owner: "org", name: "main", integration: "echo" }"#,
            "executor.coreTools.connections.create: `template` is required",
        ),
        (
            r#"{ owner: "team", name: "main", integration: "echo", template: "none" }"#,
            "executor.coreTools.connections.create: `owner` must be one of \"org\", \"user\", got \"team\"",
        ),
        (
            r#"{ owner: "org", name: 7, integration: "echo", template: "none" }"#,
            "executor.coreTools.connections.create: `name` must be string, got 7",
        ),
    ] {
        let refused = h
            .execute_gated(&format!(
                "return await tools.executor.coreTools.connections.create({args})"
            ))
            .await;
        assert_eq!(refused["status"], "completed", "{refused}");
        let result = &refused["structured"]["result"];
        assert_eq!(
            result["error"]["code"], "invalid_tool_arguments",
            "{refused}"
        );
        assert_eq!(result["error"]["message"], message, "{refused}");
    }

    // Gated writes pause for an agent, and a declined one writes nothing.
    let create = r#"return await tools.executor.coreTools.connections.create({ owner: "org", name: "main", integration: "echo", template: "apikey-0", inputs: { token: "ghp_secret" } })"#;
    let paused = h.execute_gated(create).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    // The pasted value is not shown to the approver (nor stored with the pause).
    assert!(!paused.to_string().contains("ghp_secret"), "{paused}");
    let id = paused["structured"]["executionId"].as_str().unwrap();
    let (_, declined) = h.resume(id, "decline").await;
    assert_eq!(declined["status"], "completed", "{declined}");
    assert_eq!(connection_names(&h, "echo").await, Vec::<String>::new());
    assert_eq!(vault_items(&h).await, json!([]));

    let public = json!({"owner": "org", "slug": "public", "grant": "authorization_code", "clientId": "pub",
                        "authorizationUrl": format!("{base}/authorize"), "tokenUrl": format!("{base}/token")});
    let paused = h
        .execute_gated(&format!(
            "return await tools.executor.coreTools.oauth.clients.create({public})"
        ))
        .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["structured"]["executionId"].as_str().unwrap();
    h.resume(id, "decline").await;
    assert_eq!(
        core_ok(&h, "oauth.clients.list", json!({})).await,
        json!([])
    );

    // The other gated tools pause too (cancelled here); reads and handoffs run at once.
    let gated = [
        (
            "connections.remove",
            json!({"owner": "org", "integration": "echo", "name": "main"}),
        ),
        (
            "connections.refresh",
            json!({"owner": "org", "integration": "echo", "name": "main"}),
        ),
        (
            "oauth.clients.registerDynamic",
            json!({"owner": "org", "registrationEndpoint": format!("{base}/register"),
                   "authorizationUrl": format!("{base}/authorize"), "tokenUrl": format!("{base}/token")}),
        ),
        (
            "oauth.clients.remove",
            json!({"owner": "org", "slug": "public"}),
        ),
        (
            "oauth.start",
            json!({"client": "public", "clientOwner": "org", "owner": "org", "name": "x",
                   "integration": "notes", "template": "oauth2"}),
        ),
        ("oauth.probe", json!({"url": base})),
    ];
    for (tool, args) in gated {
        let paused = h
            .execute_gated(&format!(
                "return await tools.executor.coreTools.{tool}({args})"
            ))
            .await;
        assert_eq!(paused["status"], "paused", "{tool}: {paused}");
        let id = paused["structured"]["executionId"].as_str().unwrap();
        h.resume(id, "cancel").await;
    }
    let free = [
        ("connections.createHandoff", json!({"integration": "echo"})),
        ("oauth.clients.list", json!({})),
        ("oauth.cancel", json!({"state": "nothing"})),
    ];
    for (tool, args) in free {
        let done = h
            .execute_gated(&format!(
                "return await tools.executor.coreTools.{tool}({args})"
            ))
            .await;
        assert_eq!(done["status"], "completed", "{tool}: {done}");
        assert_eq!(done["structured"]["result"]["ok"], true, "{tool}: {done}");
    }
}

/// Runs code without auto-approval and returns its result value.
async fn core_free(h: &Harness, code: &str) -> Value {
    let done = h.execute_gated(code).await;
    assert_eq!(done["status"], "completed", "{done}");
    done["structured"]["result"].clone()
}

/// Issue #17 (5): `oauth.probe` asked no one and made the server GET an internal address the code
/// chose. Tools that reach a URL the code names, or that change policies, connections, OAuth
/// clients or credentials, ask a person even under `autoApprove`; only a person's `approve` rule
/// naming the tool exactly lets them run unasked (not a wildcard, not a rule an agent wrote).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_reach_urls_or_change_access_ask_a_person() {
    // An "internal" host that counts every request it gets.
    let hits = Arc::new(AtomicU64::new(0));
    let counted = hits.clone();
    let app = Router::new().fallback(move || {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            StatusCode::NOT_FOUND
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let internal = format!("http://{}/admin/secret", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (_upstream, base) = serve_upstream().await;
    let h = Harness::start().await;
    add_integrations(&h, &base).await;
    let probe =
        format!("return await tools.executor.coreTools.oauth.probe({{ url: '{internal}' }})");

    // autoApprove does not cover it: paused, and nothing was fetched; cancelled, nothing ever is.
    let paused = h.execute(&probe).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    assert!(
        paused["text"]
            .as_str()
            .unwrap()
            .contains("a person decides"),
        "{paused}"
    );
    let id = paused["structured"]["executionId"].as_str().unwrap();
    h.resume(id, "cancel").await;
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // Every tool that changes access pauses under autoApprove too.
    for (tool, args) in [
        (
            "policies.create",
            json!({"owner": "org", "pattern": "*", "action": "approve"}),
        ),
        (
            "policies.update",
            json!({"owner": "org", "id": "pol_x", "action": "approve"}),
        ),
        ("policies.remove", json!({"owner": "org", "id": "pol_x"})),
        (
            "connections.create",
            json!({"owner": "org", "name": "main", "integration": "echo", "template": "none"}),
        ),
        (
            "connections.remove",
            json!({"owner": "org", "integration": "echo", "name": "main"}),
        ),
        (
            "oauth.clients.create",
            json!({"owner": "org", "slug": "c", "grant": "client_credentials", "clientId": "c", "tokenUrl": internal}),
        ),
        (
            "oauth.clients.registerDynamic",
            json!({"owner": "org", "registrationEndpoint": internal, "authorizationUrl": internal, "tokenUrl": internal}),
        ),
        ("oauth.clients.remove", json!({"owner": "org", "slug": "c"})),
        (
            "oauth.start",
            json!({"client": "c", "clientOwner": "org", "owner": "org", "name": "x", "integration": "notes", "template": "oauth2"}),
        ),
    ] {
        let paused = h
            .execute(&format!(
                "return await tools.executor.coreTools.{tool}({args})"
            ))
            .await;
        assert_eq!(paused["status"], "paused", "{tool}: {paused}");
        let id = paused["structured"]["executionId"].as_str().unwrap();
        h.resume(id, "cancel").await;
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let (_, policies) = h.get("/api/policies").await;
    assert_eq!(policies, json!([]));

    // Neither a person's wildcard approve nor an agent's exact one lifts the question.
    let (status, _) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "executor.*", "action": "approve"}),
        )
        .await;
    assert_eq!(status, 200);
    let written = core_ok(
        &h,
        "policies.create",
        json!({"owner": "org", "pattern": "executor.coreTools.oauth.probe", "action": "approve"}),
    )
    .await;
    assert_eq!(written["author"], "agent", "{written}");
    let paused = h.execute(&probe).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["structured"]["executionId"].as_str().unwrap();
    h.resume(id, "cancel").await;
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // A person's rule that names the tool exactly does.
    let (status, _) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "executor.coreTools.oauth.probe", "action": "approve",
                   "position": "0"}),
        )
        .await;
    assert_eq!(status, 200);
    let ran = h.execute_gated(&probe).await;
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(
        ran["structured"]["result"]["error"]["code"], "oauth_probe_error",
        "{ran}"
    );
    assert!(hits.load(Ordering::SeqCst) > 0);
}
