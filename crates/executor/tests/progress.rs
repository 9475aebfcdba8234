//! A downstream server's progress and log messages reach the agent (issue #18): progress it
//! reports with the token our `tools/call` carried arrives at the agent's MCP client as
//! `notifications/progress` with the agent's own token, and its log messages become lines of the
//! execution's logs. Against a real rmcp fixture server and the real `/mcp` endpoint.

mod support;

use std::sync::{Arc, Mutex};

use executor_mcp::testing::serve_capable;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::Harness;

/// An agent's MCP client that records the progress it hears.
#[derive(Clone, Default)]
struct Agent {
    heard: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Agent {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard.lock().unwrap().push(params);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_progress_reaches_the_agent_and_upstream_logs_the_execution() {
    let fixture = serve_capable().await;
    let h = Harness::start().await;
    h.add_mcp_server("Capable", &fixture.url, "capable").await;

    let agent = Agent::default();
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp", h.base));
    let client = agent.clone().serve(transport).await.expect("connects");
    let code = "const r = await tools.capable.org.main.report({}); \
                return r.ok ? r.data.content[0].text : r.error.message";
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("execute")
            .with_arguments(json!({"code": code}).as_object().cloned().unwrap()),
    ));
    // rmcp puts a fresh progressToken in the `_meta` of every request it sends, counting from
    // 0 per session like ours downstream: move the agent's on so the two differ.
    for _ in 0..3 {
        client.list_tools(None).await.expect("tools/list");
    }
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let result = match handle.await_response().await.expect("tools/call answers") {
        ServerResult::CallToolResult(result) => serde_json::to_value(&result).unwrap(),
        other => panic!("not a tool result: {other:?}"),
    };
    client.cancel().await.unwrap();

    // The fixture saw a token of ours (not the agent's) on its own call.
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let returned: Value = serde_json::from_str(
        result["structuredContent"]["result"]
            .as_str()
            .unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    assert!(!returned["progressToken"].is_null(), "{text}");
    assert_ne!(
        returned["progressToken"],
        serde_json::to_value(&token).unwrap(),
        "the agent's token was passed downstream"
    );

    // rmcp clients handle each notification in a task of their own (ours downstream, the
    // agent's here), so the order can change on the way and a stale step is dropped: the agent
    // hears step 2, and step 1 only before it.
    let mut heard = agent.heard.lock().unwrap().clone();
    heard.sort_by(|a, b| a.progress.total_cmp(&b.progress));
    let seen: Vec<(f64, Option<f64>, Option<&str>)> = heard
        .iter()
        .map(|p| (p.progress, p.total, p.message.as_deref()))
        .collect();
    let both = [
        (1.0, Some(2.0), Some("step 1")),
        (2.0, Some(2.0), Some("step 2")),
    ];
    assert!(seen == both || seen == both[1..], "{heard:?}");
    assert!(heard.iter().all(|p| p.progress_token == token), "{heard:?}");

    let logs: Vec<&str> = result["structuredContent"]["logs"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        logs.contains(&"[upstream capable.main warning] fixture: disk almost full"),
        "{logs:?} / {text}"
    );
}

/// An execution over HTTP (no agent to tell of progress) still gets the server's log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_logs_reach_http_executions_too() {
    let fixture = serve_capable().await;
    let h = Harness::start().await;
    h.post(
        "/api/mcp/servers",
        json!({"name": "Capable", "endpoint": fixture.url, "slug": "capable",
               "remoteTransport": "streamable-http"}),
    )
    .await;
    h.post(
        "/api/connections",
        json!({"owner": "org", "name": "main", "integration": "capable", "template": "none", "value": ""}),
    )
    .await;
    let body = h
        .execute("await tools.capable.org.main.report({}); return 1")
        .await;
    let logs = body["structured"]["logs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        logs.iter()
            .any(|l| l == "[upstream capable.main warning] fixture: disk almost full"),
        "{body}"
    );
}
