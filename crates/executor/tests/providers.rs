//! Credential providers through the real HTTP API: the registry's listing and items, and a
//! connection whose value comes from the `file` provider (`auth.json`), reaching a real HTTP
//! API (axum) in the test with the file's value, and the next value after the file is edited.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use support::Harness;

/// The keys the test API saw in `X-Api-Key`, in order.
#[derive(Clone, Default)]
struct Api {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Api {
    fn last(&self) -> Option<String> {
        self.seen.lock().unwrap().last().cloned()
    }
}

/// `GET /me`: 200 for keys that look like tokens, 401 for anything else.
async fn me(State(api): State<Api>, headers: HeaderMap) -> Response {
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    api.seen.lock().unwrap().push(key.clone());
    if key.starts_with("ghp_") {
        axum::Json(json!({"login": "tester"})).into_response()
    } else {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"message": "bad key"})),
        )
            .into_response()
    }
}

async fn serve_api() -> (Api, String) {
    let api = Api::default();
    let app = Router::new().route("/me", get(me)).with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (api, base)
}

fn spec(base: &str) -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Echo", "version": "1"},
        "servers": [{"url": base}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "security": [{"key": []}],
        "paths": {"/me": {"get": {
            "operationId": "getMe",
            "tags": ["account"],
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
        }}}
    })
    .to_string()
}

/// Writes `auth.json` as a user would: mode 0600.
fn write_auth_file(path: &Path, body: &Value) {
    std::fs::write(path, body.to_string()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn auth_file(h: &Harness) -> std::path::PathBuf {
    h.data_dir().join("auth.json")
}

fn result(executed: &Value) -> &Value {
    &executed["structured"]["result"]
}

async fn add_echo(h: &Harness, base: &str) {
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": spec(base)}, "slug": "echo"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_are_listed_in_order_and_items_never_carry_values() {
    let (_api, base) = serve_api().await;
    let h = Harness::start().await;

    // No auth.json yet: the file provider is there, with no items.
    let (status, keys) = h.get("/api/providers").await;
    assert_eq!(status, 200);
    assert_eq!(keys, json!(["vault", "file"]));
    let (status, items) = h.get("/api/providers/file/items").await;
    assert_eq!((status, items), (200, json!([])));

    write_auth_file(
        &auth_file(&h),
        &json!({"GITHUB_TOKEN": "ghp_file_secret", "OTHER": "other_secret"}),
    );
    let (status, items) = h.get("/api/providers/file/items").await;
    assert_eq!(status, 200);
    assert_eq!(
        items,
        json!([{"id": "GITHUB_TOKEN", "name": "GITHUB_TOKEN"}, {"id": "OTHER", "name": "OTHER"}])
    );
    assert!(!items.to_string().contains("secret"), "{items}");

    // Unknown providers list nothing (not an error).
    let (status, items) = h.get("/api/providers/nope/items").await;
    assert_eq!((status, items), (200, json!([])));

    // A pasted value goes to the vault, which lists its item id, not the value.
    add_echo(&h, &base).await;
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "pasted", "integration": "echo", "template": "apikey-0", "value": "ghp_pasted_secret"}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    assert_eq!(conn["provider"], "vault");
    let (status, items) = h.get("/api/providers/vault/items").await;
    assert_eq!(status, 200);
    assert_eq!(
        items,
        json!([{"id": "connection:org:echo:pasted:token", "name": "connection:org:echo:pasted:token"}])
    );
    assert!(!items.to_string().contains("secret"), "{items}");

    // The core tools read the same registry.
    let listed = h
        .execute("return await tools.executor.coreTools.providers.list({})")
        .await;
    assert_eq!(result(&listed)["ok"], true, "{listed}");
    assert_eq!(result(&listed)["data"], json!(["vault", "file"]));
    let items = h
        .execute(r#"return await tools.executor.coreTools.providers.items({ provider: "file" })"#)
        .await;
    assert_eq!(result(&items)["ok"], true, "{items}");
    assert_eq!(
        result(&items)["data"],
        json!([{"id": "GITHUB_TOKEN", "name": "GITHUB_TOKEN"}, {"id": "OTHER", "name": "OTHER"}])
    );
    assert!(!items.to_string().contains("secret"), "{items}");
    let unknown = h
        .execute(r#"return await tools.executor.coreTools.providers.items({ provider: "nope" })"#)
        .await;
    assert_eq!(result(&unknown)["data"], json!([]), "{unknown}");
    let bad = h
        .execute("return await tools.executor.coreTools.providers.items({})")
        .await;
    assert_eq!(
        result(&bad)["error"]["code"],
        "invalid_tool_arguments",
        "{bad}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_connection_reads_the_file_on_every_call() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    add_echo(&h, &base).await;
    let path = auth_file(&h);
    write_auth_file(&path, &json!({"GITHUB_TOKEN": "ghp_one"}));

    // Unknown provider: 409, nothing saved.
    let (status, err) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "gh", "integration": "echo", "template": "apikey-0", "from": {"provider": "nope", "id": "GITHUB_TOKEN"}}),
        )
        .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(
        err,
        json!({"_tag": "CredentialProviderNotRegisteredError", "message": "No credential provider \"nope\" is available here.", "provider": "nope"})
    );
    let (_, conns) = h.get("/api/connections?integration=echo").await;
    assert_eq!(conns, json!([]));

    // Trying the reference before saving reads the file too.
    let (status, verdict) = h
        .post(
            "/api/connections/validate",
            json!({"owner": "org", "integration": "echo", "template": "apikey-0", "from": {"provider": "file", "id": "GITHUB_TOKEN"}, "spec": {"operation": "account.getMe"}}),
        )
        .await;
    assert_eq!(status, 200, "{verdict}");
    assert_eq!(verdict["status"], "healthy", "{verdict}");
    assert_eq!(api.last().as_deref(), Some("ghp_one"));
    let (status, err) = h
        .post(
            "/api/connections/validate",
            json!({"owner": "org", "integration": "echo", "template": "apikey-0", "from": {"provider": "file", "id": "MISSING"}}),
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["_tag"], "InvalidConnectionInputError", "{err}");

    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "gh", "integration": "echo", "template": "apikey-0", "from": {"provider": "file", "id": "GITHUB_TOKEN"}}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    assert_eq!(conn["provider"], "file");
    // Nothing was copied into the vault.
    let (_, vault) = h.get("/api/providers/vault/items").await;
    assert_eq!(vault, json!([]));

    let call = "return await tools.echo.org.gh.account.getMe({})";
    let got = h.execute(call).await;
    assert_eq!(result(&got)["ok"], true, "{got}");
    assert_eq!(result(&got)["data"]["login"], "tester");
    assert_eq!(api.last().as_deref(), Some("ghp_one"));

    // Edited (same length, at once): the next call carries the new value, no restart.
    write_auth_file(&path, &json!({"GITHUB_TOKEN": "ghp_two"}));
    let got = h.execute(call).await;
    assert_eq!(result(&got)["ok"], true, "{got}");
    assert_eq!(api.last().as_deref(), Some("ghp_two"));

    // Health checks read through the provider as well.
    let (status, _) = h
        .call(
            reqwest::Method::PUT,
            "/api/integrations/echo/health-check",
            Some(json!({"spec": {"operation": "account.getMe"}})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, verdict) = h
        .post("/api/connections/org/echo/gh/health", json!({}))
        .await;
    assert_eq!(status, 200, "{verdict}");
    assert_eq!(verdict["status"], "healthy", "{verdict}");
    assert_eq!(api.last().as_deref(), Some("ghp_two"));

    // The item gone from the file: the call says which value is missing, and sends nothing.
    write_auth_file(&path, &json!({"OTHER": "ghp_other"}));
    let sent = api.seen.lock().unwrap().len();
    let missing = h.execute(call).await;
    assert_eq!(result(&missing)["ok"], false, "{missing}");
    assert_eq!(
        result(&missing)["error"]["code"],
        "connection_value_missing",
        "{missing}"
    );
    assert_eq!(api.seen.lock().unwrap().len(), sent);

    // Removing the connection leaves the user's file alone.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            "/api/connections/org/echo/gh",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(file, json!({"OTHER": "ghp_other"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_is_a_provider_without_items_and_a_vault_reference_survives_removal() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    add_echo(&h, &base).await;

    // A connection may name a file item before the file exists; the call then says so.
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "later", "integration": "echo", "template": "apikey-0", "from": {"provider": "file", "id": "GITHUB_TOKEN"}}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    let missing = h
        .execute("return await tools.echo.org.later.account.getMe({})")
        .await;
    assert_eq!(
        result(&missing)["error"]["code"],
        "connection_value_missing",
        "{missing}"
    );
    write_auth_file(&auth_file(&h), &json!({"GITHUB_TOKEN": "ghp_late"}));
    let got = h
        .execute("return await tools.echo.org.later.account.getMe({})")
        .await;
    assert_eq!(result(&got)["ok"], true, "{got}");
    assert_eq!(api.last().as_deref(), Some("ghp_late"));

    // A vault item another connection references is not deleted with the referencing one.
    let (status, _) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "owner", "integration": "echo", "template": "apikey-0", "value": "ghp_vault"}),
        )
        .await;
    assert_eq!(status, 200);
    let item = "connection:org:echo:owner:token";
    let (status, _) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "borrower", "integration": "echo", "template": "apikey-0", "from": {"provider": "vault", "id": item}}),
        )
        .await;
    assert_eq!(status, 200);
    let got = h
        .execute("return await tools.echo.org.borrower.account.getMe({})")
        .await;
    assert_eq!(result(&got)["ok"], true, "{got}");
    assert_eq!(api.last().as_deref(), Some("ghp_vault"));
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            "/api/connections/org/echo/borrower",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (_, vault) = h.get("/api/providers/vault/items").await;
    assert_eq!(vault, json!([{"id": item, "name": item}]));
    // Removing the owner deletes its value.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            "/api/connections/org/echo/owner",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (_, vault) = h.get("/api/providers/vault/items").await;
    assert_eq!(vault, json!([]));
}
