//! The MCP plugin routes of spec §3.9 beyond add/probe, through the real HTTP API against real
//! rmcp servers: replacing a server's config (`POST /api/mcp/servers/:slug/config`), its auth
//! methods (`…/auth`, merge and replace), removing it with the OAuth clients dynamically
//! registered for it, and RFC 6750 `insufficient_scope` answers (add, probe, legacy SSE calls).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use executor_mcp::stdio_fixture::stdio_fixture_path;
use executor_mcp::testing::{serve_legacy_sse_requiring_scope, serve_many_tools, serve_stateful};
use serde_json::{Value, json};
use support::Harness;

async fn tool_names(h: &Harness, integration: &str) -> Vec<String> {
    let (status, tools) = h
        .get(&format!("/api/tools?integration={integration}"))
        .await;
    assert_eq!(status, 200, "{tools}");
    let mut names: Vec<String> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

async fn stored_config(h: &Harness, slug: &str) -> Value {
    let (status, server) = h.get(&format!("/api/mcp/servers/{slug}")).await;
    assert_eq!(status, 200, "{server}");
    server["config"].clone()
}

/// What a tool call returned to the code (`{ok, data}` / `{ok, error}`).
async fn call(h: &Harness, code: &str) -> Value {
    h.execute(code).await["structured"]["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_replace_moves_the_server_and_revises_its_tools() {
    let first = serve_stateful().await;
    let second = serve_many_tools(3).await;
    let h = Harness::start().await;
    h.add_fixture(&first, "fx").await;
    assert!(
        tool_names(&h, "fx")
            .await
            .contains(&"get_workspace".to_owned())
    );
    let warm = call(&h, "return await tools.fx.org.main.get_workspace({})").await;
    assert_eq!(warm["ok"], true, "{warm}");
    // The call's session waits in the pool for the next execution.
    let used = first.ledger.call_session_ids();
    assert_eq!(used.len(), 1);
    assert!(used.is_disjoint(&first.ledger.deleted_session_ids()));

    // Another endpoint, static headers, the input dialect for auth: stored canonical, the
    // header's value sealed and shown masked (issue #17).
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/config",
            json!({"config": {
                "transport": "remote", "endpoint": second.url, "remoteTransport": "streamable-http",
                "headers": {"X-Team": "t1"}, "command": "ignored on a remote server",
                "authenticationTemplate": [{"type": "none"}],
            }}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let expected = json!({
        "transport": "remote", "endpoint": second.url, "remoteTransport": "streamable-http",
        "headers": {"X-Team": "••••"},
        "authenticationTemplate": [{"kind": "none", "slug": "none"}],
    });
    assert_eq!(body, json!({"config": expected}));
    assert_eq!(stored_config(&h, "fx").await, expected);

    // Tools revised at once; calls go to the new server (no cached connection, no old session).
    assert_eq!(
        tool_names(&h, "fx").await,
        ["op_0000", "op_0001", "op_0002"]
    );
    let moved = call(&h, "return await tools.fx.org.main.op_0001({id: 'x'})").await;
    assert_eq!(moved["ok"], true, "{moved}");
    assert_eq!(moved["data"]["content"][0]["text"], "ok:op_0001");
    assert!(
        used.is_subset(&first.ledger.deleted_session_ids()),
        "the session on the old endpoint was closed"
    );

    // The same server as a stdio one (stdio is allowed here, as for add).
    let command = stdio_fixture_path().to_string_lossy().into_owned();
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/config",
            json!({"config": {"transport": "stdio", "command": command, "endpoint": second.url}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["config"],
        json!({"transport": "stdio", "command": command,
               "authenticationTemplate": [{"kind": "none", "slug": "none"}]})
    );
    let names = tool_names(&h, "fx").await;
    assert!(names.contains(&"pid".to_owned()), "{names:?}");
    let pid = call(&h, "return await tools.fx.org.main.pid({})").await;
    assert_eq!(pid["ok"], true, "{pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configs_are_refused_and_change_nothing() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let before = stored_config(&h, "fx").await;
    let tools_before = tool_names(&h, "fx").await;
    let url = fixture.url.clone();
    let fixture_command = stdio_fixture_path().to_string_lossy().into_owned();

    let cases = [
        (json!({}), "HttpApiSchemaError", ""),
        (
            json!({"config": "nope"}),
            "HttpApiSchemaError",
            "JSON object",
        ),
        (
            json!({"config": {"transport": "ftp", "endpoint": url}}),
            "HttpApiSchemaError",
            "transport",
        ),
        (
            json!({"config": {"transport": "remote"}}),
            "HttpApiSchemaError",
            "endpoint",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": "not a url"}}),
            "McpConnectionError",
            "not an http(s) URL",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": url, "remoteTransport": "websocket"}}),
            "HttpApiSchemaError",
            "remoteTransport",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": url, "headers": {"X": 1}}}),
            "HttpApiSchemaError",
            "Invalid MCP config",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": url,
                              "authenticationTemplate": [{"kind": "stdio_env", "vars": ["K"]}]}}),
            "HttpApiSchemaError",
            "stdio_env",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": url,
                              "authenticationTemplate": [{"type": "apiKey"}]}}),
            "HttpApiSchemaError",
            "authenticationTemplate[0]",
        ),
        (
            json!({"config": {"transport": "remote", "endpoint": "http://127.0.0.1:1/mcp"}}),
            "McpConnectionError",
            "Couldn't reach",
        ),
        (
            json!({"config": {"transport": "stdio"}}),
            "HttpApiSchemaError",
            "command",
        ),
        (
            json!({"config": {"transport": "stdio", "command": "/nonexistent/mcp-server"}}),
            "McpConnectionError",
            "not found",
        ),
        (
            json!({"config": {"transport": "stdio", "command": fixture_command,
                              "authenticationTemplate": [{"kind": "oauth2"}]}}),
            "HttpApiSchemaError",
            "stdio_env",
        ),
    ];
    for (body, tag, needle) in cases {
        let (status, answer) = h.post("/api/mcp/servers/fx/config", body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert_eq!(answer["_tag"], tag, "{body} → {answer}");
        assert!(
            answer["message"].as_str().unwrap_or("").contains(needle),
            "{body} → {answer}"
        );
        assert_eq!(stored_config(&h, "fx").await, before, "{body}");
    }
    assert_eq!(tool_names(&h, "fx").await, tools_before);

    // Unknown slugs and integrations of another kind are not MCP servers.
    let valid = json!({"config": {"transport": "remote", "endpoint": url}});
    let (status, answer) = h.post("/api/mcp/servers/nope/config", valid.clone()).await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(
        answer,
        json!({"_tag": "IntegrationNotFoundError", "message": "No integration \"nope\".", "slug": "nope"})
    );
    let (status, answer) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": OPENAPI}, "slug": "notes",
                   "baseUrl": "http://127.0.0.1:1"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = h.post("/api/mcp/servers/notes/config", valid).await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(answer["_tag"], "IntegrationNotFoundError");
    let (status, answer) = h
        .post(
            "/api/mcp/servers/notes/auth",
            json!({"authenticationTemplate": [{"kind": "none"}]}),
        )
        .await;
    assert_eq!(status, 404, "{answer}");
}

const OPENAPI: &str = r#"{"openapi": "3.0.3", "info": {"title": "Notes", "version": "1"},
  "paths": {"/me": {"get": {"operationId": "me", "responses": {"200": {"description": "ok"}}}}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_methods_merge_and_replace() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let bearer = json!({"type": "apiKey",
        "headers": {"Authorization": ["Bearer ", {"type": "variable", "name": "token"}]}});

    // Merge (the default): a slug-less method is appended under a fresh `custom_` slug.
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/auth",
            json!({"authenticationTemplate": [bearer]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let methods = body["authenticationTemplate"].as_array().unwrap().clone();
    assert_eq!(methods.len(), 2, "{body}");
    assert_eq!(methods[0], json!({"kind": "none", "slug": "none"}));
    assert!(
        methods[1]["slug"].as_str().unwrap().starts_with("custom_"),
        "{body}"
    );
    assert_eq!(
        methods[1]["placements"],
        json!([{"carrier": "header", "name": "Authorization", "prefix": "Bearer "}])
    );

    // Merge with a slug: appended, then replaced in place.
    let keyed = |name: &str| {
        json!({"slug": "key", "type": "apiKey",
               "headers": {name: [{"type": "variable", "name": "token"}]}})
    };
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/auth",
            json!({"authenticationTemplate": [keyed("X-Key")], "mode": "merge"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["authenticationTemplate"].as_array().unwrap().len(), 3);
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/auth",
            json!({"authenticationTemplate": [keyed("X-Other")]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let methods = body["authenticationTemplate"].clone();
    assert_eq!(methods.as_array().unwrap().len(), 3, "{methods}");
    assert_eq!(
        methods[2],
        json!({"kind": "apikey", "slug": "key",
               "placements": [{"carrier": "header", "name": "X-Other"}]})
    );
    assert_eq!(
        stored_config(&h, "fx").await["authenticationTemplate"],
        methods
    );

    // Replace: the whole list, slugs backfilled by kind.
    let (status, body) = h
        .post(
            "/api/mcp/servers/fx/auth",
            json!({"authenticationTemplate": [{"kind": "oauth2"}, bearer], "mode": "replace"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let expected = json!([
        {"kind": "oauth2", "slug": "oauth2"},
        {"kind": "apikey", "slug": "header",
         "placements": [{"carrier": "header", "name": "Authorization", "prefix": "Bearer "}]},
    ]);
    assert_eq!(body, json!({"authenticationTemplate": expected}));
    let (_, integration) = h.get("/api/integrations/fx").await;
    let ids: Vec<&str> = integration["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["oauth2", "header"]);

    // The stored method is the one rendered: a connection on `header` reaches the server with it.
    fixture.ledger.clear();
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "keyed", "integration": "fx",
                   "template": "header", "value": "s3cret"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let entries = fixture.ledger.entries();
    assert!(!entries.is_empty());
    for entry in entries {
        assert_eq!(
            entry.authorization.as_deref(),
            Some("Bearer s3cret"),
            "{entry:?}"
        );
    }

    // Refused, and nothing changes.
    for (body, needle) in [
        (
            json!({"authenticationTemplate": [{"kind": "none"}], "mode": "upsert"}),
            "mode",
        ),
        (
            json!({"authenticationTemplate": [{"kind": "stdio_env", "vars": ["K"]}]}),
            "stdio_env",
        ),
        (
            json!({"authenticationTemplate": [{"type": "apiKey", "headers": {"X": 3}}]}),
            "authenticationTemplate[0]",
        ),
        (json!({"authenticationTemplate": "none"}), ""),
    ] {
        let (status, answer) = h.post("/api/mcp/servers/fx/auth", body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert_eq!(answer["_tag"], "HttpApiSchemaError", "{answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(needle),
            "{answer}"
        );
        assert_eq!(
            stored_config(&h, "fx").await["authenticationTemplate"],
            expected
        );
    }
    let (status, _) = h
        .post(
            "/api/mcp/servers/nope/auth",
            json!({"authenticationTemplate": []}),
        )
        .await;
    assert_eq!(status, 404);

    // A stdio server takes `stdio_env` / `none` methods.
    let command = stdio_fixture_path().to_string_lossy().into_owned();
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "sx", "command": command, "envVars": ["API_KEY"]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h
        .post(
            "/api/mcp/servers/sx/auth",
            json!({"mode": "replace", "authenticationTemplate": [
                {"kind": "stdio_env", "vars": ["API_KEY", "REGION"]}, {"kind": "none"}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["authenticationTemplate"],
        json!([{"kind": "stdio_env", "slug": "env", "vars": ["API_KEY", "REGION"]},
               {"kind": "none", "slug": "none"}])
    );
    let (status, body) = h
        .post(
            "/api/mcp/servers/sx/auth",
            json!({"authenticationTemplate": [bearer]}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("stdio"),
        "{body}"
    );
}

/// A tiny authorization server: RFC 7591 registration (each client gets a secret) and a token
/// endpoint that answers every code.
async fn serve_registrar() -> String {
    async fn register(State(n): State<Arc<AtomicU64>>) -> impl IntoResponse {
        let id = n.fetch_add(1, Ordering::SeqCst);
        (
            StatusCode::CREATED,
            Json(
                json!({"client_id": format!("client-{id}"), "client_secret": format!("secret-{id}")}),
            ),
        )
    }
    async fn token() -> Json<Value> {
        Json(json!({"access_token": "at", "token_type": "Bearer", "expires_in": 3600}))
    }
    let app = axum::Router::new()
        .route("/register", axum::routing::post(register))
        .route("/token", axum::routing::post(token))
        .with_state(Arc::new(AtomicU64::new(0)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

async fn client_slugs(h: &Harness) -> Vec<String> {
    let (status, clients) = h.get("/api/oauth/clients").await;
    assert_eq!(status, 200, "{clients}");
    let mut slugs: Vec<String> = clients
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap().to_owned())
        .collect();
    slugs.sort();
    slugs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_server_removes_the_oauth_clients_only_it_used() {
    let auth = serve_registrar().await;
    let alpha = serve_stateful().await;
    let beta = serve_stateful().await;
    let h = Harness::start().await;
    for (slug, server) in [("alpha", &alpha), ("beta", &beta)] {
        let (status, body) = h
            .post(
                "/api/mcp/servers",
                json!({"name": slug, "slug": slug, "endpoint": server.url,
                       "remoteTransport": "streamable-http", "auth": {"kind": "oauth2"}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let register = |slug: &str, resource: &str, origin: Option<&str>| {
        json!({"owner": "org", "slug": slug, "issuer": auth, "registrationEndpoint": format!("{auth}/register"),
               "authorizationUrl": format!("{auth}/authorize"), "tokenUrl": format!("{auth}/token"),
               "resource": resource, "originIntegration": origin})
    };
    for (slug, resource, origin) in [
        // Used only by alpha's connections: removed with alpha.
        ("dcr-alpha", alpha.url.as_str(), Some("alpha")),
        // Registered for alpha, never used: removed with alpha.
        ("dcr-unused", "http://unused.example/mcp", Some("alpha")),
        // Registered for alpha, also used by beta: kept.
        ("dcr-shared", "http://shared.example/mcp", Some("alpha")),
        // Registered for beta, used by alpha too: kept (beta uses it).
        ("dcr-beta", beta.url.as_str(), Some("beta")),
    ] {
        let (status, body) = h
            .post(
                "/api/oauth/clients/register-dynamic",
                register(slug, resource, origin),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["client"], slug);
    }
    let (status, body) = h
        .post(
            "/api/oauth/clients",
            json!({"owner": "org", "slug": "manual", "grant": "authorization_code",
                   "authorizationUrl": format!("{auth}/authorize"), "tokenUrl": format!("{auth}/token"),
                   "clientId": "m", "clientSecret": "ms", "originIntegration": "alpha"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // Connections minted by the code flow (start, then complete with a code).
    for (integration, name, client) in [
        ("alpha", "a1", "dcr-alpha"),
        ("alpha", "a2", "dcr-shared"),
        ("alpha", "a3", "manual"),
        ("alpha", "a4", "dcr-beta"),
        ("beta", "b1", "dcr-shared"),
        ("beta", "b2", "dcr-beta"),
    ] {
        let (status, started) = h
            .post(
                "/api/oauth/start",
                json!({"client": client, "clientOwner": "org", "owner": "org", "name": name,
                       "integration": integration, "template": "oauth2", "scopes": ["read"]}),
            )
            .await;
        assert_eq!(status, 200, "{started}");
        let (status, connected) = h
            .post(
                "/api/oauth/complete",
                json!({"state": started["state"], "code": "c"}),
            )
            .await;
        assert_eq!(status, 200, "{connected}");
        assert_eq!(connected["oauthClient"], client, "{connected}");
    }
    let secrets = || async {
        let (status, items) = h.get("/api/providers/vault/items").await;
        assert_eq!(status, 200, "{items}");
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .filter(|id| id.starts_with("oauth-client:"))
            .collect::<Vec<_>>()
    };
    assert!(
        secrets()
            .await
            .contains(&"oauth-client:org:dcr-alpha:secret".to_owned())
    );

    let (status, body) = h
        .call(reqwest::Method::DELETE, "/api/mcp/servers/alpha", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"removed": true}));
    assert_eq!(client_slugs(&h).await, ["dcr-beta", "dcr-shared", "manual"]);
    let left = secrets().await;
    assert!(
        !left.contains(&"oauth-client:org:dcr-alpha:secret".to_owned()),
        "the removed client's secret left the vault: {left:?}"
    );
    assert!(
        left.contains(&"oauth-client:org:manual:secret".to_owned()),
        "{left:?}"
    );
    let (status, gone) = h.get("/api/integrations/alpha").await;
    assert_eq!(status, 404, "{gone}");
    // beta's connections still have their clients.
    let (_, connections) = h.get("/api/connections?integration=beta").await;
    assert_eq!(connections.as_array().unwrap().len(), 2, "{connections}");

    // Removing beta now removes its own and the shared one; the manual client stays.
    let (status, _) = h
        .call(reqwest::Method::DELETE, "/api/mcp/servers/beta", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(client_slugs(&h).await, ["manual"]);
    // An unknown slug is a 404, as for any integration (issue #17).
    let (status, body) = h
        .call(reqwest::Method::DELETE, "/api/mcp/servers/nope", None)
        .await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"_tag": "IntegrationNotFoundError", "message": "No integration \"nope\".", "slug": "nope"})
        )
    );
}

/// An endpoint that answers every request 403 with an RFC 6750 `insufficient_scope` challenge.
async fn serve_scope_wall() -> String {
    let app = axum::Router::new().fallback(|| async {
        (
            StatusCode::FORBIDDEN,
            [(
                axum::http::header::WWW_AUTHENTICATE,
                r#"Bearer error="insufficient_scope", scope="files:write""#,
            )],
            "insufficient scope",
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("{base}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_is_told_apart() {
    let h = Harness::start().await;

    // Probe and add (streamable HTTP, auto, legacy SSE): a McpConnectionError that says so.
    let wall = serve_scope_wall().await;
    let (status, body) = h
        .post(
            "/api/mcp/probe",
            json!({"endpoint": wall, "headers": {"Authorization": "Bearer narrow"}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["_tag"], "McpConnectionError", "{body}");
    assert_eq!(body["httpStatus"], 403);
    assert_eq!(body["insufficientScope"], true);
    for transport in ["auto", "streamable-http", "sse"] {
        let (status, body) = h
            .post(
                "/api/mcp/servers",
                json!({"name": "walled", "endpoint": wall, "remoteTransport": transport,
                       "headers": {"Authorization": "Bearer narrow"}}),
            )
            .await;
        assert_eq!(status, 400, "{transport}: {body}");
        assert_eq!(body["_tag"], "McpConnectionError", "{body}");
        assert_eq!(body["transport"], transport, "{body}");
        assert_eq!(body["httpStatus"], 403, "{body}");
        assert_eq!(body["insufficientScope"], true, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("files:write"),
            "{body}"
        );
    }
    let (_, server) = h.get("/api/mcp/servers/walled").await;
    assert_eq!(server, Value::Null, "nothing stored");

    // A tool call over legacy SSE refused with 403 insufficient_scope → oauth_scope_insufficient,
    // like streamable HTTP; calls the token covers still work.
    let sse = serve_legacy_sse_requiring_scope("delete_everything", "write").await;
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"name": "legacy", "slug": "legacy", "endpoint": sse.url, "remoteTransport": "sse"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "legacy", "template": "none", "value": ""}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let result = h
        .execute(
            r#"const denied = await tools.legacy.org.main.delete_everything({});
               const read = await tools.legacy.org.main.get_workspace({});
               return {denied, read};"#,
        )
        .await;
    let result = &result["structured"]["result"];
    let denied = &result["denied"];
    assert_eq!(denied["ok"], false, "{result}");
    assert_eq!(
        denied["error"]["code"], "oauth_scope_insufficient",
        "{result}"
    );
    assert_eq!(denied["error"]["status"], 403);
    assert!(
        denied["error"]["message"]
            .as_str()
            .unwrap()
            .contains("write"),
        "{denied}"
    );
    assert_eq!(result["read"]["ok"], true, "{result}");
}
