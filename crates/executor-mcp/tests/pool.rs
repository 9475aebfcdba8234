//! Downstream MCP client against real fixture servers on 127.0.0.1 (no mocks).

#[allow(dead_code, unreachable_pub)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_core::ToolOutcome;
use executor_mcp::{
    McpClient, McpClientConfig, McpError, RemoteTarget, RemoteTransport, SessionKey,
    call_result_to_outcome, error_to_outcome,
};
use serde_json::{Map, Value, json};

fn target(url: &str, transport: RemoteTransport) -> RemoteTarget {
    RemoteTarget::new(url, transport)
}

fn key(t: &RemoteTarget, label: &str) -> SessionKey {
    SessionKey::new(t, "none", &BTreeMap::new(), label)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn client() -> McpClient {
    McpClient::new(McpClientConfig::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_maps_tools_across_pages_and_closes_its_session() {
    let server = testing::serve_stateful().await;
    let client = client();
    let d = client
        .discover(&target(&server.url, RemoteTransport::StreamableHttp))
        .await
        .expect("discover");
    assert_eq!(
        d.server_name.as_deref(),
        Some("session-stateful-test-server")
    );
    assert_eq!(d.instructions.as_deref(), Some("Select a workspace first."));
    let ids: Vec<&str> = d.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "select_workspace",
            "get_workspace",
            "slow",
            "fail",
            "typed",
            "delete_everything",
            "weird_name",
            "change_tools"
        ],
        "all three pages listed, names sanitised"
    );
    let weird = &d.tools[6];
    assert_eq!(weird.real_name, "Weird Name!");
    assert_eq!(weird.annotations["realName"], "Weird Name!");
    let del = &d.tools[5];
    assert_eq!(del.description, "MCP tool: delete_everything");
    assert!(del.requires_approval());
    assert_eq!(del.annotations["approvalDescription"], "Delete everything");
    assert_eq!(
        del.annotations["upstreamAnnotations"]["destructiveHint"],
        true
    );
    assert!(!d.tools[0].requires_approval());
    assert_eq!(
        d.tools[0].input_schema["properties"]["workspace"]["type"],
        "string"
    );
    let typed = d.tools[4].output_schema.as_ref().unwrap();
    assert_eq!(
        typed["properties"]["structuredContent"]["required"],
        json!(["count"])
    );
    assert_eq!(typed["required"], json!(["content", "structuredContent"]));

    // The discovery session was closed with DELETE.
    let ids = server.ledger.session_ids();
    assert_eq!(ids.len(), 1);
    assert_eq!(server.ledger.deleted_session_ids(), ids);
    assert_eq!(server.live_sessions().await, 0);
    assert_eq!(client.live_sessions(), 0);

    // Probe reports the same.
    let p = client
        .probe(&target(&server.url, RemoteTransport::Auto))
        .await
        .unwrap();
    assert!(p.connected);
    assert_eq!(p.tool_count, Some(8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_in_one_scope_share_one_session() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let scope = client.scope();
    let selected = scope
        .call_tool(&k, &t, "select_workspace", Map::new())
        .await
        .unwrap();
    let read = scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&selected), "selected:ws-e2e");
    assert_eq!(
        text(&read),
        "workspace:ws-e2e",
        "state visible in the same session"
    );
    let calls = server.ledger.call_session_ids();
    assert_eq!(
        calls.len(),
        1,
        "both tool calls rode a single downstream session"
    );
    // Every session-bound request carried that one id.
    assert_eq!(server.ledger.session_ids(), calls);
    assert_eq!(client.live_sessions(), 1);
    scope.finish().await;
    assert_eq!(client.live_sessions(), 1, "pooled, not closed");
    assert!(server.ledger.deleted_session_ids().is_empty());
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_in_one_scope_ride_one_session() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let scope = Arc::new(client.scope());
    let calls = (0..10).map(|i| {
        let scope = scope.clone();
        let (t, k) = (t.clone(), k.clone());
        async move {
            scope
                .call_tool(&k, &t, "slow", args(json!({"ms": 50 + i * 5})))
                .await
        }
    });
    let results = futures::future::join_all(calls).await;
    for r in &results {
        assert!(text(r.as_ref().unwrap()).starts_with("slept:"));
    }
    assert_eq!(
        server.ledger.initialize_count(),
        1,
        "one dial for ten concurrent calls"
    );
    assert_eq!(server.ledger.call_session_ids().len(), 1);
    assert_eq!(client.live_sessions(), 1);
    Arc::try_unwrap(scope).unwrap().finish().await;
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_scopes_reuse_the_pooled_session() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let first = client.scope();
    first
        .call_tool(
            &k,
            &t,
            "select_workspace",
            args(json!({"workspace": "ws-1"})),
        )
        .await
        .unwrap();
    first.finish().await;
    let second = client.scope();
    let read = second
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(
        text(&read),
        "workspace:ws-1",
        "state survives across executions"
    );
    second.finish().await;
    assert_eq!(server.ledger.initialize_count(), 1);
    assert_eq!(server.ledger.call_session_ids().len(), 1);
    assert_eq!(client.live_sessions(), 1);
    assert_eq!(client.idle_sessions(), 1);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scopes_get_separate_sessions_and_only_one_is_pooled() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let a = client.scope();
    let b = client.scope();
    let (ra, rb) = tokio::join!(
        a.call_tool(&k, &t, "slow", args(json!({"ms": 200}))),
        b.call_tool(&k, &t, "slow", args(json!({"ms": 200}))),
    );
    ra.unwrap();
    rb.unwrap();
    assert_eq!(
        server.ledger.call_session_ids().len(),
        2,
        "exclusive leases"
    );
    assert_eq!(client.live_sessions(), 2);
    a.finish().await;
    b.finish().await;
    assert_eq!(client.live_sessions(), 1, "one idle session per key");
    let deleted = server.ledger.deleted_session_ids();
    assert_eq!(deleted.len(), 1, "the extra session was DELETEd");
    assert!(server.ledger.call_session_ids().is_superset(&deleted));
    assert_eq!(server.live_sessions().await, 1);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_redialled_once() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let first = client.scope();
    first
        .call_tool(&k, &t, "select_workspace", Map::new())
        .await
        .unwrap();
    first.finish().await;
    server.forget_sessions().await;
    let second = client.scope();
    let read = second
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .expect("the call succeeds on a new session");
    assert_eq!(
        text(&read),
        "no workspace selected",
        "a genuinely new session"
    );
    let again = second
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&again), "no workspace selected");
    assert_eq!(server.ledger.initialize_count(), 2, "exactly one redial");
    assert!(
        server
            .ledger
            .entries()
            .iter()
            .any(|e| e.status == 404 && e.rpc_method.as_deref() == Some("tools/call")),
        "the old session id got a 404"
    );
    second.finish().await;
    assert_eq!(client.live_sessions(), 1);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_where_and_shutdown_delete_every_session() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let mut t2 = t.clone();
    t2.headers.insert("x-tenant".into(), "b".into());
    let ka = key(&t, "int_a/org/main");
    let kb = key(&t2, "int_b/org/main");
    let scope = client.scope();
    scope
        .call_tool(&ka, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    scope
        .call_tool(&kb, &t2, "get_workspace", Map::new())
        .await
        .unwrap();
    scope.finish().await;
    assert_eq!(client.live_sessions(), 2);
    assert_eq!(server.ledger.call_session_ids().len(), 2);

    client
        .close_where(|label| label.starts_with("int_a/"))
        .await;
    assert_eq!(client.live_sessions(), 1);
    assert_eq!(server.ledger.deleted_session_ids().len(), 1);

    // A leased session matched by close_where is closed when its scope returns it.
    let leased = client.scope();
    leased
        .call_tool(&kb, &t2, "get_workspace", Map::new())
        .await
        .unwrap();
    client
        .close_where(|label| label.starts_with("int_b/"))
        .await;
    assert_eq!(client.live_sessions(), 1, "still leased");
    leased.finish().await;
    assert_eq!(client.live_sessions(), 0);
    assert_eq!(
        server.ledger.deleted_session_ids(),
        server.ledger.call_session_ids()
    );

    // Shutdown closes pooled sessions, and leased ones when they come back.
    let s = client.scope();
    s.call_tool(&ka, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    let pooled = client.scope();
    pooled
        .call_tool(&kb, &t2, "get_workspace", Map::new())
        .await
        .unwrap();
    pooled.finish().await;
    assert_eq!(client.live_sessions(), 2);
    client.shutdown().await;
    assert_eq!(client.live_sessions(), 1);
    s.finish().await;
    assert_eq!(client.live_sessions(), 0);
    assert_eq!(
        server.ledger.deleted_session_ids(),
        server.ledger.call_session_ids(),
        "every session got a DELETE"
    );
    assert_eq!(server.live_sessions().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_credentials_retire_the_sessions_of_the_old_ones() {
    let server = testing::serve_stateful().await;
    let client = client();
    let with_token = |token: &str| {
        let mut t = target(&server.url, RemoteTransport::StreamableHttp);
        t.headers
            .insert("Authorization".into(), format!("Bearer {token}"));
        t
    };
    let creds = |token: &str| BTreeMap::from([("token".to_owned(), token.to_owned())]);
    let (old, new, other) = (with_token("old"), with_token("new"), with_token("other"));
    let k_old = SessionKey::new(&old, "oauth2", &creds("old"), "mcp/org/main");
    let k_new = SessionKey::new(&new, "oauth2", &creds("new"), "mcp/org/main");
    // Another connection of the same server is not affected.
    let k_other = SessionKey::new(&other, "oauth2", &creds("other"), "mcp/org/other");
    let deletes = || -> Vec<Option<String>> {
        server
            .ledger
            .entries()
            .into_iter()
            .filter(|e| e.method == "DELETE")
            .map(|e| e.authorization)
            .collect()
    };

    // `main` has a pooled session and a leased one with the old token; `other` a pooled one.
    let pooled = client.scope();
    let leased = client.scope();
    for scope in [&pooled, &leased] {
        scope
            .call_tool(&k_old, &old, "get_workspace", Map::new())
            .await
            .unwrap();
    }
    pooled
        .call_tool(&k_other, &other, "get_workspace", Map::new())
        .await
        .unwrap();
    pooled.finish().await;
    assert_eq!((client.live_sessions(), client.idle_sessions()), (3, 2));

    // The token was refreshed: the first call with the new one dials, and retires the old
    // generation — the idle session at once, the leased one when its scope returns it.
    let refreshed = client.scope();
    refreshed
        .call_tool(&k_new, &new, "get_workspace", Map::new())
        .await
        .unwrap();
    refreshed.finish().await;
    assert_eq!(deletes(), vec![Some("Bearer old".to_owned())]);
    leased.finish().await;
    assert_eq!(deletes(), vec![Some("Bearer old".to_owned()); 2]);
    assert_eq!(
        (client.live_sessions(), client.idle_sessions()),
        (2, 2),
        "the new session of `main` and the session of `other`"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire_after_the_ttl() {
    let server = testing::serve_stateful().await;
    let client = McpClient::new(McpClientConfig {
        idle_ttl: Duration::from_millis(200),
        ..McpClientConfig::default()
    });
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let scope = client.scope();
    scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    scope.finish().await;
    assert_eq!(client.live_sessions(), 1);
    eventually("idle session reaped", || client.live_sessions() == 0).await;
    eventually("DELETE sent", || {
        server.ledger.deleted_session_ids().len() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_scope_returns_its_sessions() {
    let server = testing::serve_stateful().await;
    let client = client();
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    {
        let scope = client.scope();
        scope
            .call_tool(&k, &t, "select_workspace", Map::new())
            .await
            .unwrap();
    }
    eventually("session pooled after drop", || client.idle_sessions() == 1).await;
    let scope = client.scope();
    let read = scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&read), "workspace:ws-e2e");
    scope.finish().await;
    client.shutdown().await;
    assert_eq!(client.live_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_unknown_tools_and_list_changed() {
    let server = testing::serve_stateful().await;
    let client = client();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    client.on_list_changed(Arc::new(move |label: &str| {
        sink.lock().unwrap().push(label.to_owned())
    }));
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let scope = client.scope();

    let failed = scope.call_tool(&k, &t, "fail", Map::new()).await.unwrap();
    match call_result_to_outcome("fail", failed) {
        ToolOutcome::Err(e) => {
            assert_eq!(e.code, "mcp_tool_error");
            assert_eq!(e.message, "something went wrong");
        }
        other => panic!("{other:?}"),
    }
    let typed = scope.call_tool(&k, &t, "typed", Map::new()).await.unwrap();
    match call_result_to_outcome("typed", typed) {
        ToolOutcome::Ok { data, .. } => assert_eq!(data["structuredContent"]["count"], 3),
        other => panic!("{other:?}"),
    }

    let err = scope
        .call_tool(&k, &t, "no_such_tool", Map::new())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Rpc { code: -32602, .. }), "{err:?}");
    match error_to_outcome("no_such_tool", &err) {
        ToolOutcome::Err(e) => assert_eq!(e.code, "mcp_tool_unknown"),
        other => panic!("{other:?}"),
    }

    scope
        .call_tool(&k, &t, "change_tools", Map::new())
        .await
        .unwrap();
    eventually("list_changed callback", || !seen.lock().unwrap().is_empty()).await;
    assert_eq!(seen.lock().unwrap()[0], "stateful/org/main");

    assert_eq!(
        server.ledger.call_session_ids().len(),
        1,
        "errors kept the session"
    );
    scope.finish().await;
    assert_eq!(client.live_sessions(), 1);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_and_non_mcp_endpoints_give_readable_errors() {
    let client = client();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    for transport in [
        RemoteTransport::StreamableHttp,
        RemoteTransport::Sse,
        RemoteTransport::Auto,
    ] {
        match client.discover(&target(&url, transport)).await {
            Err(McpError::Connect { message, .. }) => {
                assert_eq!(
                    message,
                    format!("Couldn't reach {url}: connection refused"),
                    "{transport}"
                )
            }
            other => panic!("{transport}: {other:?}"),
        }
    }
    let t = target(&url, RemoteTransport::StreamableHttp);
    let err = client
        .scope()
        .call_tool(&key(&t, "x"), &t, "x", Map::new())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("Couldn't reach"), "{err}");
    assert_eq!(client.live_sessions(), 0);

    let (html, _stop) = testing::serve_static(200, "text/html", "<html>hello</html>").await;
    for transport in [RemoteTransport::StreamableHttp, RemoteTransport::Auto] {
        match client.discover(&target(&html, transport)).await {
            Err(McpError::Connect { message, .. }) => assert!(
                message.starts_with("This URL doesn't appear to host an MCP server"),
                "{transport}: {message}"
            ),
            other => panic!("{transport}: {other:?}"),
        }
    }
    let (missing, _stop2) = testing::serve_static(404, "text/plain", "Not Found").await;
    match client
        .discover(&target(&missing, RemoteTransport::Auto))
        .await
    {
        Err(McpError::Connect {
            message,
            http_status,
            ..
        }) => {
            assert!(
                message.starts_with("This URL doesn't appear to host an MCP server"),
                "{message}"
            );
            assert_eq!(http_status, Some(404));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_walls_are_reported_and_not_retried_over_sse() {
    let client = client();
    let (wall, _stop) =
        testing::serve_static(401, "application/json", "{\"error\":\"unauthorized\"}").await;
    let err = client
        .discover(&target(&wall, RemoteTransport::Auto))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(401), "{err:?}");
    assert!(err.is_auth_rejection());
    let probe = client
        .probe(&target(&wall, RemoteTransport::Auto))
        .await
        .unwrap();
    assert!(probe.requires_authentication);
    assert!(!probe.connected);
}

/// An endpoint that answers every request `status` with this `WWW-Authenticate` challenge.
async fn serve_challenge(status: u16, challenge: &'static str) -> String {
    let router = axum::Router::new().fallback(move || async move {
        axum::response::Response::builder()
            .status(status)
            .header("www-authenticate", challenge)
            .body(axum::body::Body::from("no"))
            .unwrap()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_challenges_are_told_apart() {
    let client = client();
    let url = serve_challenge(
        403,
        r#"Bearer error="insufficient_scope", scope="files:write", resource_metadata="http://x/m""#,
    )
    .await;
    let err = client
        .discover(&target(&url, RemoteTransport::Auto))
        .await
        .unwrap_err();
    match &err {
        McpError::InsufficientScope {
            stage,
            required_scope,
            message,
        } => {
            assert_eq!(*stage, "connect");
            assert_eq!(required_scope.as_deref(), Some("files:write"));
            assert!(message.contains("insufficient_scope"), "{message}");
        }
        other => panic!("expected InsufficientScope, got {other:?}"),
    }
    assert_eq!(err.http_status(), Some(403));
    assert!(err.is_auth_rejection(), "no SSE fallback, probe says auth");

    // Any other 403 challenge is a plain rejection.
    let url = serve_challenge(403, r#"Bearer error="invalid_token""#).await;
    let err = client
        .discover(&target(&url, RemoteTransport::StreamableHttp))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            McpError::Connect {
                http_status: Some(403),
                ..
            }
        ),
        "{err:?}"
    );
    let url = serve_challenge(401, r#"Bearer resource_metadata="http://x/m""#).await;
    let err = client
        .discover(&target(&url, RemoteTransport::StreamableHttp))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(401), "{err:?}");
    let outcome = error_to_outcome("t", &err);
    match outcome {
        ToolOutcome::Err(e) => assert_eq!(e.code, "connection_rejected"),
        ToolOutcome::Ok { .. } => panic!("not ok"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_query_params_reach_the_server() {
    let server = testing::serve_stateful().await;
    let client = client();
    let mut t = target(&server.url, RemoteTransport::StreamableHttp);
    t.headers
        .insert("Authorization".into(), "Bearer abc".into());
    t.query.insert("tenant".into(), "t1".into());
    let d = client.discover(&t).await.unwrap();
    assert_eq!(d.tools.len(), 8);
    let k = key(&t, "h/org/main");
    let scope = client.scope();
    scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    scope.finish().await;
    client.shutdown().await;
    let entries = server.ledger.entries();
    assert!(entries.len() >= 6);
    for e in entries {
        assert_eq!(e.authorization.as_deref(), Some("Bearer abc"), "{e:?}");
        assert!(e.uri.ends_with("?tenant=t1"), "{e:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_sessions_and_auto_fallback() {
    let server = testing::serve_legacy_sse().await;
    let client = client();
    for transport in [RemoteTransport::Sse, RemoteTransport::Auto] {
        let t = target(&server.url, transport);
        let d = client.discover(&t).await.expect("discover over SSE");
        assert_eq!(d.tools.len(), 8, "{transport}");
        assert_eq!(
            d.server_name.as_deref(),
            Some("session-stateful-test-server")
        );
    }
    eventually("discovery streams closed", || server.live_sessions() == 0).await;

    let t = target(&server.url, RemoteTransport::Auto);
    let k = key(&t, "legacy/org/main");
    let scope = client.scope();
    scope
        .call_tool(&k, &t, "select_workspace", Map::new())
        .await
        .unwrap();
    let calls = (0..5).map(|_| scope.call_tool(&k, &t, "get_workspace", Map::new()));
    for r in futures::future::join_all(calls).await {
        assert_eq!(text(&r.unwrap()), "workspace:ws-e2e");
    }
    scope.finish().await;
    let next = client.scope();
    let read = next
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&read), "workspace:ws-e2e", "pooled SSE session reused");
    next.finish().await;
    assert_eq!(server.live_sessions(), 1);
    client.shutdown().await;
    assert_eq!(client.live_sessions(), 0);
    eventually("SSE stream closed", || server.live_sessions() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_are_send_sync_and_calls_can_be_spawned() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let server = testing::serve_stateful().await;
    let client = client();
    send_sync(&client);
    let scope = Arc::new(client.scope());
    send_sync(&*scope);
    let t = target(&server.url, RemoteTransport::StreamableHttp);
    let k = key(&t, "stateful/org/main");
    let handles: Vec<_> = ["select_workspace", "get_workspace"]
        .into_iter()
        .map(|name| {
            let (scope, t, k) = (scope.clone(), t.clone(), k.clone());
            tokio::spawn(async move { scope.call_tool(&k, &t, name, Map::new()).await })
        })
        .collect();
    for h in handles {
        h.await.unwrap().unwrap();
    }
    assert_eq!(server.ledger.call_session_ids().len(), 1);
    drop(scope);
    eventually("pooled after drop", || client.idle_sessions() == 1).await;
    client.shutdown().await;
    assert_eq!(client.live_sessions(), 0);
}
