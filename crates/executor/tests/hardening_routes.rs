//! Issue #17 regressions on the HTTP routes: connection names, sealed MCP static values and
//! journal, body validation, bounded names, deletes of unknown things, the approval page.

mod support;

use executor_mcp::testing::serve_stateful;
use serde_json::{Value, json};
use support::{Harness, Options};

/// Whether any file of the data directory (the database, its WAL) holds `needle` in clear.
fn on_disk(h: &Harness, needle: &str) -> bool {
    fn walk(dir: &std::path::Path, needle: &[u8]) -> bool {
        std::fs::read_dir(dir).unwrap().any(|entry| {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, needle)
            } else {
                std::fs::read(&path)
                    .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
                    .unwrap_or(false)
            }
        })
    }
    walk(h.data_dir(), needle.as_bytes())
}

async fn patch(h: &Harness, path: &str, body: Value) -> (u16, Value) {
    h.call(reqwest::Method::PATCH, path, Some(body)).await
}

async fn delete(h: &Harness, path: &str, body: Option<Value>) -> (u16, Value) {
    h.call(reqwest::Method::DELETE, path, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_names_that_normalise_alike_do_not_overwrite_each_other() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"name": "fx", "slug": "fx", "endpoint": fixture.url, "remoteTransport": "streamable-http",
                "auth": {"kind": "header", "headerName": "Authorization", "prefix": "Bearer "}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let create = |name: &str, value: &str, replace: Option<bool>| {
        let mut body = json!({"owner": "org", "name": name, "integration": "fx", "template": "header", "value": value});
        if let Some(replace) = replace {
            body["replace"] = json!(replace);
        }
        h.post("/api/connections", body)
    };
    let (status, first) = create("a/b", "first-key", None).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["name"], "aB");
    // `a.b` is the same name: refused, and the first connection's credential is untouched.
    let (status, clash) = create("a.b", "second-key", None).await;
    assert_eq!(status, 409, "{clash}");
    assert_eq!(clash["_tag"], "ConnectionAlreadyExistsError");
    assert_eq!(clash["name"], "aB");
    let call = "return await tools.fx.org.aB.get_workspace({})";
    h.execute(call).await;
    let last_auth = || {
        fixture
            .requests()
            .into_iter()
            .rev()
            .find_map(|r| r.authorization)
    };
    assert_eq!(last_auth().as_deref(), Some("Bearer first-key"));
    // Asked to replace, it does.
    let (status, replaced) = create("a.b", "second-key", Some(true)).await;
    assert_eq!(status, 200, "{replaced}");
    h.execute(call).await;
    assert_eq!(last_auth().as_deref(), Some("Bearer second-key"));

    // Letters of any script are kept, so these are distinct names and valid JS paths.
    for (input, stored) in [("é🎉", "é"), ("チーム", "チーム"), ("Équipe", "équipe")] {
        let (status, body) = create(input, "k", None).await;
        assert_eq!(status, 200, "{input}: {body}");
        assert_eq!(body["name"], stored);
    }
    let done = h
        .execute("return await tools.fx.org.チーム.get_workspace({})")
        .await;
    assert_eq!(done["isError"], false, "{done}");
    // A name with nothing left is refused with what names may contain.
    for input in ["", "..", "🎉"] {
        let (status, body) = create(input, "k", None).await;
        assert_eq!(status, 400, "{input:?}: {body}");
        assert_eq!(body["_tag"], "InvalidConnectionInputError");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("letter or digit"),
            "{body}"
        );
    }
    let (_, list) = h.get("/api/connections?integration=fx").await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_static_headers_and_query_values_are_sealed_and_shown_masked() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"name": "fx", "slug": "fx", "remoteTransport": "streamable-http",
                "endpoint": format!("{}?api_key=query-s3cret-1", fixture.url),
                "headers": {"Authorization": "Bearer header-s3cret-1"},
                "queryParams": {"region": "eu"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, server) = h.get("/api/mcp/servers/fx").await;
    assert_eq!(status, 200, "{server}");
    let config = &server["config"];
    assert_eq!(config["endpoint"], fixture.url, "{server}");
    assert_eq!(config["headers"], json!({"Authorization": "••••"}));
    assert_eq!(
        config["queryParams"],
        json!({"api_key": "••••", "region": "••••"})
    );
    assert!(!server.to_string().contains("s3cret"), "{server}");
    assert!(!on_disk(&h, "header-s3cret-1") && !on_disk(&h, "query-s3cret-1"));

    // The values still reach the server, read back from the vault.
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "fx", "template": "none", "values": {}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sent = |needle: &str| {
        fixture.requests().iter().any(|r| {
            r.authorization.as_deref() == Some("Bearer header-s3cret-1") && r.uri.contains(needle)
        })
    };
    assert!(sent("api_key=query-s3cret-1"), "{:?}", fixture.requests());

    // The config sent back as read keeps the secrets; a new value replaces one.
    fixture.clear_requests();
    let mut next = config.clone();
    next["queryParams"]["region"] = json!("us");
    let (status, body) = h
        .post("/api/mcp/servers/fx/config", json!({"config": next}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["config"]["queryParams"]["region"], "••••");
    let done = h
        .execute("return await tools.fx.org.main.get_workspace({})")
        .await;
    assert_eq!(done["isError"], false, "{done}");
    assert!(sent("region=us"), "{:?}", fixture.requests());
    assert!(sent("api_key=query-s3cret-1"), "{:?}", fixture.requests());
    assert!(!on_disk(&h, "header-s3cret-1"));

    // A mask with no stored value behind it is refused.
    let mut bad = config.clone();
    bad["headers"]["X-New"] = json!("••••");
    let (status, body) = h
        .post("/api/mcp/servers/fx/config", json!({"config": bad}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("X-New"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journaled_arguments_and_outcomes_are_sealed_at_rest() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let paused = h
        .execute_gated(
            "await tools.fx.org.main.select_workspace({workspace: 'journal-marker-' + 'x7'}); \
             return await tools.fx.org.main.delete_everything({})",
        )
        .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    // The journal holds the first call's arguments and outcome (`selected:journal-marker-x7`).
    assert!(!on_disk(&h, "journal-marker-x7"));
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, done) = h.resume(&id, "accept").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["isError"], false, "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_bodies_are_objects_of_known_fields() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let (_, policy) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "fx.*", "action": "approve"}),
        )
        .await;
    let policy_path = format!("/api/policies/{}", policy["id"].as_str().unwrap());
    for (path, body) in [
        ("/api/integrations/fx", json!([])),
        ("/api/integrations/fx", json!({"nmae": "typo"})),
        ("/api/connections/org/fx/main", json!([])),
        (
            "/api/connections/org/fx/main",
            json!({"descripton": "typo"}),
        ),
        (policy_path.as_str(), json!([{"owner": "org"}])),
        (
            policy_path.as_str(),
            json!({"owner": "org", "acton": "block"}),
        ),
    ] {
        let (status, answer) = patch(&h, path, body.clone()).await;
        assert_eq!(status, 400, "{path} {body}: {answer}");
        assert_eq!(answer["_tag"], "HttpApiSchemaError", "{answer}");
    }
    let (_, integration) = h.get("/api/integrations/fx").await;
    assert_eq!(integration["name"], "Session-stateful MCP");
    let (status, _) = patch(&h, "/api/integrations/fx", json!({"name": "Fixture"})).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_descriptions_are_bounded_and_printable() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let huge = "n".repeat(9 * 1024 * 1024);
    for body in [
        json!({"name": huge}),
        json!({"name": "nul\u{0}name"}),
        json!({"description": "d".repeat(4_001)}),
    ] {
        let (status, answer) = patch(&h, "/api/integrations/fx", body).await;
        assert_eq!(status, 400, "{answer:.200}");
        assert_eq!(answer["_tag"], "HttpApiSchemaError");
        assert!(
            answer["message"].as_str().unwrap().len() < 200,
            "a sentence"
        );
    }
    let (status, answer) = h
        .post(
            "/api/mcp/servers",
            json!({"name": huge, "endpoint": fixture.url, "slug": "big"}),
        )
        .await;
    assert_eq!(status, 400, "{answer:.200}");
    let (status, _) = h.get("/api/integrations/big").await;
    assert_eq!(status, 404, "nothing was stored");
    // Line breaks are fine in a description.
    let (status, _) = patch(
        &h,
        "/api/integrations/fx",
        json!({"description": "two\nlines"}),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_what_is_not_there_is_a_404_and_the_built_in_a_409() {
    let h = Harness::start().await;
    assert_eq!(
        delete(&h, "/api/integrations/nope", None).await,
        (
            404,
            json!({"_tag": "IntegrationNotFoundError", "message": "No integration \"nope\".", "slug": "nope"})
        )
    );
    assert_eq!(
        delete(&h, "/api/integrations/executor", None).await,
        (
            409,
            json!({"_tag": "IntegrationRemovalNotAllowedError", "message": "The integration \"executor\" is built in and cannot be removed.", "slug": "executor"})
        )
    );
    assert_eq!(
        delete(&h, "/api/policies/nope", Some(json!({"owner": "org"}))).await,
        (
            404,
            json!({"_tag": "PolicyNotFoundError", "message": "No policy nope.", "policyId": "nope"})
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_page_holds_no_data_and_html_cannot_be_framed() {
    let fixture = serve_stateful().await;
    let h = Harness::start_opts(Options {
        auth_token: Some("page-token".to_owned()),
        ..Options::default()
    })
    .await;
    h.add_fixture(&fixture, "fx").await;
    let paused = h
        .execute_gated(
            "return await tools.fx.org.main.delete_everything({note: 'page-marker-' + 'q9'})",
        )
        .await;
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The paused call's data is there, behind the token.
    let (status, view) = h.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 200);
    assert!(view.to_string().contains("page-marker-q9"), "{view}");
    let anonymous = reqwest::Client::new();
    let api = anonymous
        .get(format!("{}/api/executions/{id}", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status().as_u16(), 401);
    // The page loads without it, but shows nothing of the call.
    for path in [format!("/resume/{id}"), "/".to_owned()] {
        let page = anonymous
            .get(format!("{}{path}", h.base))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status().as_u16(), 200, "{path}");
        let headers = page.headers().clone();
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.ends_with("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        let text = page.text().await.unwrap();
        assert!(!text.contains("page-marker-q9"), "{text}");
        assert!(!text.contains("delete_everything"), "{text}");
    }
    // JSON is not rendered: no framing headers needed there.
    let health = anonymous
        .get(format!("{}/api/health", h.base))
        .send()
        .await
        .unwrap();
    assert!(!health.headers().contains_key("x-frame-options"));
}

/// Issue #17: configs written by older builds hold static values in clear; the start-up repair
/// (`seal_legacy_mcp_values`, run by the binary before serving) seals them and calls still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_values_stored_in_clear_by_older_builds_are_sealed_at_start() {
    use executor_store::Store;
    let fixture = serve_stateful().await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    {
        let store = executor_store::SqlStore::open(dir.path()).await.unwrap();
        let now = 1_000;
        store
            .insert_integration(
                &executor_store::Scope::local("integration-test"),
                &executor_store::IntegrationRecord {
                    slug: "old".to_owned(),
                    plugin_id: "mcp".to_owned(),
                    name: Some("old".to_owned()),
                    description: None,
                    config: json!({"transport": "remote", "remoteTransport": "streamable-http",
                        "endpoint": format!("{}?api_key=legacy-q", fixture.url),
                        "headers": {"Authorization": "Bearer legacy-h"},
                        "authenticationTemplate": [{"kind": "none", "slug": "none"}]}),
                    can_remove: true,
                    can_refresh: true,
                    config_revised_at: Some(now),
                    created_at: now,
                    updated_at: now,
                },
            )
            .await
            .unwrap();
        store.close().await;
    }
    let h = Harness::start_opts(Options {
        dir: Some(dir),
        ..Options::default()
    })
    .await;
    // Shown masked even before the repair.
    let (_, server) = h.get("/api/mcp/servers/old").await;
    assert!(!server.to_string().contains("legacy-"), "{server}");
    assert_eq!(h.engine.seal_legacy_mcp_values(&h.caller).await.unwrap(), 1);
    assert_eq!(h.engine.seal_legacy_mcp_values(&h.caller).await.unwrap(), 0);
    let (_, server) = h.get("/api/mcp/servers/old").await;
    assert_eq!(
        server["config"]["headers"],
        json!({"Authorization": "••••"})
    );
    assert_eq!(server["config"]["endpoint"], fixture.url);
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "old", "template": "none", "values": {}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        fixture
            .requests()
            .iter()
            .any(|r| r.authorization.as_deref() == Some("Bearer legacy-h")
                && r.uri.contains("api_key=legacy-q")),
        "{:?}",
        fixture.requests()
    );
}
