//! The API's OpenAPI document against the server's real answers: every route's success and
//! error bodies, produced by a real workflow (an MCP fixture, a connection, a policy, a paused
//! and a settled execution), must match the schemas the document gives for them.

mod support;

use executor_mcp::testing::serve_stateful;
use serde_json::{Value, json};
use support::Harness;

const SLUG: &str = "stateful";

/// Checks `body` against the document's schema of `method path`'s `status` answer.
fn conforms(doc: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let op = &doc["paths"][path][method];
    assert!(op.is_object(), "{method} {path} is not in the document");
    let schema = &op["responses"][status.to_string()]["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} documents no JSON {status} answer: {}",
        op["responses"]
    );
    // The schema, with the document's components beside it so its `$ref`s resolve.
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    let validator = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status} answered what its schema refuses:\n{}\n{body:#}",
        errors.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_matches_the_document() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, SLUG).await;
    let (status, doc) = h.get("/api/openapi.json").await;
    assert_eq!(status, 200);

    let (status, policy) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": format!("{SLUG}.*.*.get_workspace"), "action": "require_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{policy}");
    conforms(&doc, "post", "/api/policies", 200, &policy);
    let id = policy["id"].as_str().unwrap();
    let (status, changed) = h
        .call(
            reqwest::Method::PATCH,
            &format!("/api/policies/{id}"),
            Some(json!({"owner": "org", "action": "require_approval"})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    conforms(&doc, "patch", "/api/policies/{id}", 200, &changed);

    let done = h.execute("return 1").await;
    conforms(&doc, "post", "/api/executions", 200, &done);
    // A settled execution's id leads to its journal.
    let settled = done["executionId"].as_str().unwrap();
    let (status, record) = h.get(&format!("/api/executions/{settled}/journal")).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["outcome"]["text"], "1");
    let paused = h
        .execute_gated(&format!(
            "return await tools.{SLUG}.org.main.get_workspace({{}})"
        ))
        .await;
    conforms(&doc, "post", "/api/executions", 200, &paused);
    let exec = paused["structured"]["executionId"].as_str().unwrap();

    let tool = format!("tools.{SLUG}.org.main.get_workspace");
    let reads = [
        ("/api/integrations", "/api/integrations".to_owned()),
        (
            "/api/integrations/{slug}",
            format!("/api/integrations/{SLUG}"),
        ),
        ("/api/connections", "/api/connections".to_owned()),
        (
            "/api/connections/{owner}/{integration}/{name}",
            format!("/api/connections/org/{SLUG}/main"),
        ),
        ("/api/tools", "/api/tools".to_owned()),
        (
            "/api/tools/schema",
            format!("/api/tools/schema?address={tool}"),
        ),
        ("/api/policies", "/api/policies".to_owned()),
        ("/api/providers", "/api/providers".to_owned()),
        ("/api/executions", "/api/executions".to_owned()),
        ("/api/executions/{id}", format!("/api/executions/{exec}")),
        (
            "/api/executions/{id}/journal",
            format!("/api/executions/{exec}/journal"),
        ),
        (
            "/api/mcp/servers/{slug}",
            format!("/api/mcp/servers/{SLUG}"),
        ),
        (
            "/api/integrations/{slug}/health-check",
            format!("/api/integrations/{SLUG}/health-check"),
        ),
        ("/api/oauth/clients", "/api/oauth/clients".to_owned()),
        ("/api/server", "/api/server".to_owned()),
    ];
    for (template, url) in reads {
        let (status, body) = h.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        conforms(&doc, "get", template, 200, &body);
    }

    let (status, resumed) = h.resume(exec, "accept").await;
    assert_eq!(status, 200, "{resumed}");
    conforms(&doc, "post", "/api/executions/{id}/resume", 200, &resumed);
    let (status, refreshed) = h
        .post(
            &format!("/api/connections/org/{SLUG}/main/refresh"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{refreshed}");
    conforms(
        &doc,
        "post",
        "/api/connections/{owner}/{integration}/{name}/refresh",
        200,
        &refreshed,
    );

    // Errors are documented `Error` bodies.
    let errors = [
        (
            "get",
            "/api/integrations/{slug}",
            "/api/integrations/nope",
            404,
        ),
        (
            "get",
            "/api/executions/{id}",
            "/api/executions/exec_nope",
            404,
        ),
        (
            "get",
            "/api/executions/{id}/journal",
            "/api/executions/exec_nope/journal",
            404,
        ),
        ("get", "/api/tools/schema", "/api/tools/schema", 400),
        ("get", "/api/executions", "/api/executions?limit=x", 400),
    ];
    for (method, template, url, want) in errors {
        let (status, body) = h.get(url).await;
        assert_eq!(status, want, "{url}: {body}");
        conforms(&doc, method, template, status, &body);
    }
    let (status, body) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "a..b", "action": "block"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    conforms(&doc, "post", "/api/policies", 400, &body);
    let (status, removed) = h
        .call(
            reqwest::Method::DELETE,
            &format!("/api/policies/{id}"),
            Some(json!({"owner": "org"})),
        )
        .await;
    assert_eq!(status, 200, "{removed}");
    conforms(&doc, "delete", "/api/policies/{id}", 200, &removed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_and_its_reference_page_are_public() {
    let h = Harness::start_opts(support::Options {
        auth_token: Some("doc-test-token".into()),
        ..Default::default()
    })
    .await;
    let anonymous = reqwest::Client::new();
    for path in ["/api/openapi.json", "/api/docs"] {
        let response = anonymous
            .get(format!("{}{path}", h.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let page = anonymous
        .get(format!("{}/api/docs", h.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("/api/executions/{id}/resume"), "{page}");
}
