//! The agent MCP surface at `/mcp`, driven by a real rmcp client over streamable HTTP against the
//! real server (in process), with the session-stateful rmcp fixture as the downstream integration.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_mcp::testing::serve_stateful;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{Harness, Options};
use tokio::sync::mpsc;

async fn mcp_client(
    h: &Harness,
    query: &str,
    handler: TestClient,
) -> RunningService<RoleClient, TestClient> {
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp{query}", h.base));
    handler.serve(transport).await.expect("MCP client connects")
}

async fn start() -> Harness {
    Harness::start_opts(Options {
        allowed_hosts: vec!["agents.example:8443".to_owned()],
        ..Options::default()
    })
    .await
}

/// How a [`TestClient`] answers `elicitation/create`.
#[derive(Clone)]
enum Answer {
    /// No elicitation capability advertised.
    NotSupported,
    With(ElicitationAction),
    Error,
    /// Never answers.
    Hang,
}

/// A client that records `tools/list_changed` and answers elicitations as configured.
#[derive(Clone)]
struct TestClient {
    answer: Answer,
    list_changed: mpsc::UnboundedSender<()>,
    elicited: Arc<Mutex<Vec<String>>>,
}

impl TestClient {
    fn new(answer: Answer) -> (Self, mpsc::UnboundedReceiver<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            TestClient {
                answer,
                list_changed: tx,
                elicited: Arc::default(),
            },
            rx,
        )
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = match self.answer {
            Answer::NotSupported => ClientCapabilities::default(),
            _ => serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap(),
        };
        ClientConfig::new(
            capabilities,
            Implementation::new("mcp-test-client", "0.0.1"),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.elicited.lock().unwrap().push(message);
        match self.answer.clone() {
            Answer::With(action) => Ok(ElicitResult::new(action)),
            Answer::Hang => std::future::pending().await,
            Answer::NotSupported | Answer::Error => {
                Err(ErrorData::invalid_request("no elicitation here", None))
            }
        }
    }
}

fn plain() -> TestClient {
    TestClient::new(Answer::NotSupported).0
}

async fn call(
    client: &RunningService<RoleClient, TestClient>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("tools/call answers")
}

fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

const SEED_CODE: &str = r#"
const selected = await tools.stateful.org.main.select_workspace({});
const read = await tools.stateful.org.main.get_workspace({});
return JSON.stringify({ selected, read });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_execute_skills_and_errors() {
    let h = start().await;
    let client = mcp_client(&h, "", plain()).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(server.name, "executor");
    assert_eq!(server.version, "1.0.0");
    assert!(info.capabilities.tools.as_ref().unwrap().list_changed == Some(true));

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["execute", "skills", "resume"]);
    let description = tools[0].description.as_deref().unwrap();
    assert!(description.starts_with("Execute TypeScript in a sandboxed runtime.\n\n"));
    assert!(
        !description.contains("## Available integrations"),
        "{description}"
    );

    let one = call(&client, "execute", json!({"code": "return 1"})).await;
    assert_eq!(text(&one), "1");
    assert_ne!(one.is_error, Some(true));
    assert_eq!(structured(&one)["status"], "completed");
    assert_eq!(structured(&one)["result"], 1);

    let thrown = call(
        &client,
        "execute",
        json!({"code": "throw new Error('boom')"}),
    )
    .await;
    assert_eq!(thrown.is_error, Some(true));
    assert!(text(&thrown).starts_with("Error: "), "{}", text(&thrown));

    for empty in [json!({"code": "   "}), json!({})] {
        let result = call(&client, "execute", empty).await;
        assert_eq!(result.is_error, Some(true));
        assert!(
            text(&result).contains("`code` must be a non-empty string"),
            "{}",
            text(&result)
        );
    }

    let unknown = call(
        &client,
        "resume",
        json!({"executionId": "exec_nope", "action": "accept"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(structured(&unknown)["status"], "execution_not_found");
    assert!(
        text(&unknown).contains("run the execute tool again"),
        "{}",
        text(&unknown)
    );

    let index = call(&client, "skills", json!({})).await;
    assert!(text(&index).contains("skills({ name: \"<name>\" })"));
    let howto = call(&client, "skills", json!({"name": "execute"})).await;
    for needle in [
        "tools.search",
        "describe.tool",
        "ok: false",
        "emit(",
        "NOT enumerable",
        "fetch",
        "offset",
    ] {
        assert!(text(&howto).contains(needle), "missing {needle}");
    }
    let missing = call(&client, "skills", json!({"name": "nope"})).await;
    assert_eq!(missing.is_error, Some(true));
    assert!(text(&missing).contains("No skill named \"nope\""));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_journey_and_model_mode_approval() {
    let fixture = serve_stateful().await;
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;
    let client = mcp_client(&h, "", plain()).await;

    let tools = client.list_all_tools().await.unwrap();
    let description = tools[0].description.as_deref().unwrap();
    assert!(
        description.contains("## Available integrations\n"),
        "{description}"
    );
    assert!(description.ends_with("- `stateful`"), "{description}");

    let seed = call(&client, "execute", json!({"code": SEED_CODE})).await;
    assert!(text(&seed).contains("workspace:ws-e2e"), "{}", text(&seed));
    assert_eq!(fixture.ledger.call_session_ids().len(), 1);

    // A destructive tool pauses; the agent resumes with the user's answer.
    let code = "const r = await tools.stateful.org.main.delete_everything({}); return r.data;";
    let paused = call(&client, "execute", json!({"code": code})).await;
    assert_eq!(
        structured(&paused)["status"],
        "waiting_for_interaction",
        "{}",
        text(&paused)
    );
    let id = structured(&paused)["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text(&paused).contains(&format!("executionId: {id}")));
    let done = call(
        &client,
        "resume",
        json!({"executionId": id, "action": "accept", "content": "{}"}),
    )
    .await;
    assert_eq!(structured(&done)["status"], "completed", "{}", text(&done));
    assert!(text(&done).contains("deleted"), "{}", text(&done));

    // Declined: the call throws inside the code.
    let paused = call(&client, "execute", json!({"code": code})).await;
    let id = structured(&paused)["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let declined = call(
        &client,
        "resume",
        json!({"executionId": id, "action": "decline"}),
    )
    .await;
    assert_eq!(declined.is_error, Some(true));
    assert!(text(&declined).contains("declined"), "{}", text(&declined));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_or_origin_is_forbidden() {
    let h = start().await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
    let send = |headers: Vec<(&'static str, &'static str)>| {
        let mut request = h
            .http
            .post(format!("{}/mcp", h.base))
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(send(vec![]).await, 200);
    assert_eq!(send(vec![("host", "evil.example")]).await, 403);
    assert_eq!(send(vec![("origin", "http://evil.example")]).await, 403);
    assert_eq!(send(vec![("origin", "http://localhost:3000")]).await, 200);
    // `--allowed-host agents.example:8443`
    assert_eq!(send(vec![("host", "agents.example:8443")]).await, 200);
    assert_eq!(send(vec![("host", "agents.example:9999")]).await, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_after_adding_a_server() {
    let fixture = serve_stateful().await;
    let h = start().await;
    let (handler, mut changes) = TestClient::new(Answer::NotSupported);
    let client = mcp_client(&h, "", handler).await;
    let before = client.list_all_tools().await.unwrap();
    assert!(
        !before[0]
            .description
            .as_deref()
            .unwrap()
            .contains("stateful")
    );
    // The client's standalone SSE stream may still be opening; give it a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;

    h.add_fixture(&fixture, "stateful").await;
    tokio::time::timeout(Duration::from_secs(5), changes.recv())
        .await
        .expect("tools/list_changed within 5 s")
        .unwrap();
    let after = client.list_all_tools().await.unwrap();
    assert!(
        after[0]
            .description
            .as_deref()
            .unwrap()
            .contains("- `stateful`")
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_mode_elicits_approval_from_the_client() {
    let fixture = serve_stateful().await;
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;
    let code = r#"
try { const r = await tools.stateful.org.main.delete_everything({}); return r.data; }
catch (e) { return "threw: " + e.message; }"#;

    let (handler, _changes) = TestClient::new(Answer::With(ElicitationAction::Accept));
    let elicited = handler.elicited.clone();
    let client = mcp_client(&h, "?elicitation_mode=native", handler).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert_eq!(
        names,
        ["execute", "skills"],
        "native mode has no resume tool"
    );
    let accepted = call(&client, "execute", json!({"code": code})).await;
    assert!(text(&accepted).contains("deleted"), "{}", text(&accepted));
    let asked = elicited.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("Delete everything\n\nArguments:"),
        "{asked:?}"
    );
    client.cancel().await.unwrap();

    let (handler, _changes) = TestClient::new(Answer::With(ElicitationAction::Decline));
    let client = mcp_client(&h, "?elicitation_mode=native", handler).await;
    let declined = call(&client, "execute", json!({"code": code})).await;
    assert!(
        text(&declined).contains("threw:") && text(&declined).contains("declined"),
        "{}",
        text(&declined)
    );
    client.cancel().await.unwrap();

    // A client error answering the elicitation cancels the call.
    let (handler, _changes) = TestClient::new(Answer::Error);
    let client = mcp_client(&h, "?elicitation_mode=native", handler).await;
    let cancelled = call(&client, "execute", json!({"code": code})).await;
    assert!(
        text(&cancelled).contains("cancelled"),
        "{}",
        text(&cancelled)
    );
    client.cancel().await.unwrap();

    // Without the elicitation capability, native mode falls back to model-mode pauses.
    let client = mcp_client(&h, "?elicitation_mode=native", plain()).await;
    let paused = call(&client, "execute", json!({"code": code})).await;
    assert_eq!(
        structured(&paused)["status"],
        "waiting_for_interaction",
        "{}",
        text(&paused)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_2026_07_28_request() {
    let h = start().await;
    let response = h
        .http
        .post(format!("{}/mcp", h.base))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .json(
            &json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
            "name":"execute","arguments":{"code":"return 40 + 2"},
            "_meta":{
                "io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{},
                "io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"1"}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap(),
        "application/json"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "42", "{body}");
    assert_eq!(body["result"]["structuredContent"]["status"], "completed");
}

/// A client that goes away mid-execution does not leak it: the execution runs to its end and
/// its downstream session goes back to the pool; an abandoned native approval is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_mid_execution_does_not_leak() {
    let fixture = serve_stateful().await;
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;

    let client = mcp_client(&h, "", plain()).await;
    let peer = client.peer().clone();
    let slow = tokio::spawn(async move {
        let args = json!({"code": "await tools.stateful.org.main.slow({ms: 800}); return 'done'"});
        peer.call_tool(
            CallToolRequestParams::new("execute")
                .with_arguments(args.as_object().cloned().unwrap()),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.cancel().await.unwrap();
    let _ = slow.await;
    // The execution ends on its own; its session returns to the pool (one idle, none leaked).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !fixture
        .requests()
        .iter()
        .any(|r| r.rpc_method.as_deref() == Some("tools/call") && r.status == 200)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "slow call never finished"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.engine.live_mcp_sessions(), 1);
    assert_eq!(fixture.live_sessions().await, 1);

    // Native approval abandoned by a client that hangs up: the pause is cancelled, the code goes on.
    let (handler, _changes) = TestClient::new(Answer::Hang);
    let elicited = handler.elicited.clone();
    let client = mcp_client(&h, "?elicitation_mode=native", handler).await;
    let code = r#"
await tools.stateful.org.main.select_workspace({});
try { await tools.stateful.org.main.delete_everything({}); } catch (e) {}
await tools.stateful.org.main.get_workspace({});
return "after";"#;
    fixture.clear_requests();
    let peer = client.peer().clone();
    let pending = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("execute")
                .with_arguments(json!({"code": code}).as_object().cloned().unwrap()),
        )
        .await
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while elicited.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never asked for approval"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.cancel().await.unwrap();
    let _ = pending.await;
    // The pause is cancelled when the session's handler is dropped, which rmcp does only after
    // draining the closed session's handlers for 5 s (`QuitReason::Closed`): measured 5.01–5.09 s
    // (already at b1072ad), so a 5 s deadline failed about one run in eight.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let calls = fixture
            .requests()
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("tools/call"))
            .count();
        if calls >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the abandoned pause was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.engine.live_mcp_sessions(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_mode_approval_page_and_long_poll() {
    let fixture = serve_stateful().await;
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;
    let client = mcp_client(&h, "?elicitation_mode=browser", plain()).await;
    let tools = client.list_all_tools().await.unwrap();
    let resume = tools.iter().find(|t| t.name == "resume").unwrap();
    assert_eq!(resume.input_schema["required"], json!(["executionId"]));

    let code = "const r = await tools.stateful.org.main.delete_everything({}); return r.data;";
    let paused = call(&client, "execute", json!({"code": code})).await;
    let s = structured(&paused);
    assert_eq!(s["status"], "user_approval_required", "{}", text(&paused));
    let id = s["executionId"].as_str().unwrap().to_owned();
    let url = s["approvalUrl"].as_str().unwrap().to_owned();
    // The link names the session (spec §4), whose approval routes answer the pause.
    let page_url = format!("{}/resume/{id}?mcp_session_id=", h.base);
    assert!(url.starts_with(&page_url), "{url}");
    assert!(text(&paused).starts_with("User approval required."));

    // The page is the console's, public, and holds no data of the call (issue #17): it loads
    // it from the API.
    let page = h.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(
        page.contains("<div id=\"root\">") && !page.contains("Delete everything"),
        "{page}"
    );
    let view: Value = h
        .http
        .get(format!("{}/api/executions/{id}", h.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(view.to_string().contains("Delete everything"), "{view}");

    let peer = client.peer().clone();
    let waiting_id = id.clone();
    let waiting = tokio::spawn(async move {
        let args = json!({"executionId": waiting_id})
            .as_object()
            .cloned()
            .unwrap();
        peer.call_tool(CallToolRequestParams::new("resume").with_arguments(args))
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!waiting.is_finished(), "resume waits for the person");
    let (status, body) = h
        .post(
            &format!("/api/executions/{id}/resume"),
            json!({"action": "accept"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let done = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("resume returns after the decision")
        .unwrap();
    assert_eq!(structured(&done)["status"], "completed", "{}", text(&done));
    assert!(text(&done).contains("deleted"), "{}", text(&done));
    client.cancel().await.unwrap();
}

async fn rpc(h: &Harness, session: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
    h.mcp_rpc("/mcp", session, body).await
}

async fn open_session(h: &Harness) -> Result<String, Value> {
    h.mcp_session("/mcp").await
}

async fn list_status(h: &Harness, session: &str) -> u16 {
    rpc(
        h,
        Some(session),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    )
    .await
    .0
}

/// Issue #17 (9): 5,000 `initialize` calls without DELETE kept 5,000 sessions (280 MB). Live
/// sessions are capped: over the cap the longest idle one is closed, and when every session
/// has a call in flight the `initialize` gets a JSON-RPC error and nothing is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_are_capped_closing_the_longest_idle_first() {
    let fixture = serve_stateful().await;
    let h = Harness::start_opts(Options {
        mcp_sessions: executor_server::McpSessionLimits {
            total: 2,
            per_token: 2,
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    h.add_fixture(&fixture, "stateful").await;
    let a = open_session(&h).await.unwrap();
    let b = open_session(&h).await.unwrap();
    assert_eq!(list_status(&h, &b).await, 200);
    // `a` has been idle longest: the third session takes its place.
    let c = open_session(&h).await.unwrap();
    assert_eq!(
        list_status(&h, &a).await,
        404,
        "the evicted session is gone"
    );
    assert_eq!(list_status(&h, &b).await, 200);

    // Both live sessions busy with a call: a new one is refused, and neither is disturbed.
    let slow = |session: String| {
        let h_http = h.http.clone();
        let base = h.base.clone();
        tokio::spawn(async move {
            h_http
                .post(format!("{base}/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", session)
                .json(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
                    "name":"execute","arguments":{"code":"return (await tools.stateful.org.main.slow({ ms: 1500 })).ok"}}}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    let calls = [slow(b.clone()), slow(c.clone())];
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = open_session(&h).await.unwrap_err();
    assert_eq!(
        refused["error"]["code"],
        executor_server::mcp::SESSION_LIMIT_CODE,
        "{refused}"
    );
    assert_eq!(
        refused["error"]["data"]["_tag"], "McpSessionLimitError",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DELETE"),
        "{refused}"
    );
    for call in calls {
        let answer = call.await.unwrap();
        assert!(answer.contains(r#""text":"true""#), "{answer}");
    }
    // Idle again: the next session evicts the longest idle one.
    let d = open_session(&h).await.unwrap();
    assert_eq!(list_status(&h, &d).await, 200);
    let alive = [list_status(&h, &b).await, list_status(&h, &c).await];
    assert_eq!(alive.iter().filter(|s| **s == 200).count(), 1, "{alive:?}");
}

/// Reads SSE events from `response` until `done` says stop (or the stream ends); each event is
/// `(id, data)`.
async fn sse_events(
    response: &mut reqwest::Response,
    done: impl Fn(&[(Option<String>, String)]) -> bool,
) -> Vec<(Option<String>, String)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    while !done(&events) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("an SSE event within 10 s");
        let Some(chunk) = chunk.unwrap() else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            if id.is_some() || !data.is_empty() {
                events.push((id, data));
            }
        }
    }
    events
}

fn execute_request(id: u64, code: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"execute","arguments":{"code":code}}})
}

/// Issue #18 (6): event ids are unique within a session, a reconnect with `Last-Event-ID` gets
/// what came after it, and a result that completes while the client is away is delivered when
/// it comes back (before, the priming event and the first message shared id `0` and the resumed
/// GET hung empty).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_resume_after_last_event_id() {
    let fixture = serve_stateful().await;
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;
    let session = open_session(&h).await.unwrap();
    let post = |body: Value| {
        h.http
            .post(format!("{}/mcp", h.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .json(&body)
            .send()
    };
    let resume = |last: String| {
        h.http
            .get(format!("{}/mcp", h.base))
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .header("last-event-id", last)
            .send()
    };

    // A quick call: every event of the stream has an id of its own.
    let mut quick = post(execute_request(10, "return 1")).await.unwrap();
    assert_eq!(quick.status(), 200);
    let events = sse_events(&mut quick, |_| false).await;
    let ids: Vec<&String> = events.iter().filter_map(|(id, _)| id.as_ref()).collect();
    assert!(
        events.iter().any(|(_, d)| d.contains("\"id\":10")),
        "{events:?}"
    );
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{events:?}");

    // Away while the call finishes: the first event is kept, then the client hangs up.
    let code = "await tools.stateful.org.main.slow({ms: 600}); return 'done late'";
    let mut slow = post(execute_request(11, code)).await.unwrap();
    let first = sse_events(&mut slow, |e| !e.is_empty()).await;
    let last_seen = first[0].0.clone().expect("the first event has an id");
    drop(slow);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let mut resumed = resume(last_seen.clone()).await.unwrap();
    assert_eq!(resumed.status(), 200);
    let replayed = sse_events(&mut resumed, |_| false).await;
    assert!(
        replayed
            .iter()
            .any(|(_, d)| d.contains("done late") && d.contains("\"id\":11")),
        "{replayed:?}"
    );
    assert!(
        replayed
            .iter()
            .all(|(id, _)| id.as_ref() != Some(&last_seen)),
        "replayed the event it had"
    );

    // Back while the call still runs: the resumed stream waits for the result, then ends.
    let code = "await tools.stateful.org.main.slow({ms: 500}); return 'done while back'";
    let mut slow = post(execute_request(12, code)).await.unwrap();
    let first = sse_events(&mut slow, |e| !e.is_empty()).await;
    drop(slow);
    let mut resumed = resume(first[0].0.clone().unwrap()).await.unwrap();
    let followed = sse_events(&mut resumed, |_| false).await;
    assert!(
        followed.iter().any(|(_, d)| d.contains("done while back")),
        "{followed:?}"
    );

    // An id this server never gave: an empty stream, not an error loop.
    let mut unknown = resume("nope.1.2".into()).await.unwrap();
    assert_eq!(unknown.status(), 200);
    assert!(sse_events(&mut unknown, |_| false).await.is_empty());
}

/// Issue #18 (5): what the code emits reaches the agent as content blocks (an image as an image,
/// a text file decoded, a resource as itself), then the result; the HTTP API gets them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emitted_output_arrives_as_content_blocks() {
    let h = start().await;
    let client = mcp_client(&h, "", plain()).await;
    let code = r#"
emit({ _tag: "ToolFile", name: "dot.png", mimeType: "image/png", encoding: "base64", data: "iVBORw0KGgo=", byteLength: 8 });
emit({ _tag: "ToolFile", name: "notes.md", mimeType: "text/markdown", encoding: "base64", data: "IyBoaQ==" });
emit({ type: "resource_link", uri: "https://example.com/a", name: "a" });
console.log("side");
return "ok";"#;
    let done = call(&client, "execute", json!({"code": code})).await;
    let content = serde_json::to_value(&done).unwrap()["content"].clone();
    let kinds: Vec<&str> = content
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "text", "text", "resource_link", "text"],
        "{content}"
    );
    assert_eq!(
        content[0]["text"],
        "File output: dot.png (image/png, 8 bytes)"
    );
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(content[1]["data"], "iVBORw0KGgo=");
    assert_eq!(content[3]["text"], "# hi");
    assert_eq!(content[5]["text"], "ok\nLogs:\n[log] side");
    assert_eq!(structured(&done)["emitted"], 3);
    client.cancel().await.unwrap();

    let (status, over_http) = h.post("/api/executions", json!({"code": code})).await;
    assert_eq!(status, 200, "{over_http}");
    assert_eq!(over_http["content"], content, "{over_http}");
    let (_, plain_run) = h.post("/api/executions", json!({"code": "return 1"})).await;
    assert!(plain_run.get("content").is_none(), "{plain_run}");
}

/// Issue #18 (7): malformed JSON is a JSON-RPC parse error (400, -32700), not a 415 in plain
/// text; a batch is served on 2025-03-26 and refused with -32600 on later versions; a DELETE of
/// an unknown session is a 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_errors_are_json_rpc() {
    let h = start().await;
    let raw = |version: Option<&str>, body: &str| {
        let mut request = h
            .http
            .post(format!("{}/mcp", h.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(v) = version {
            request = request.header("mcp-protocol-version", v);
        }
        request.send()
    };
    let malformed = raw(Some("2025-11-25"), "{not json").await.unwrap();
    assert_eq!(malformed.status(), 400);
    let body: Value = malformed.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null);

    let init = |id: u64, version: &str| {
        json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
            "protocolVersion":version,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    };
    let refused = raw(
        Some("2025-11-25"),
        &json!([init(1, "2025-11-25")]).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");

    // A 2025-03-26 client (no version header) batches its handshake, then a call.
    let batch = raw(
        None,
        &json!([init(1, "2025-03-26"), {"jsonrpc":"2.0","method":"notifications/initialized"}])
            .to_string(),
    )
    .await
    .unwrap();
    assert_eq!(batch.status(), 200);
    let session = batch.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answers: Value = batch.json().await.unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 1, "{answers}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(
        answers[0]["result"]["protocolVersion"], "2025-03-26",
        "{answers}"
    );
    let calls = h
        .http
        .post(format!("{}/mcp", h.base))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&json!([
            {"jsonrpc":"2.0","id":2,"method":"tools/list"},
            {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 6*7"}}}
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(calls.status(), 200);
    let answers: Value = calls.json().await.unwrap();
    assert_eq!(answers[0]["id"], 2, "{answers}");
    assert_eq!(answers[0]["result"]["tools"][0]["name"], "execute");
    assert_eq!(answers[1]["id"], 3);
    assert_eq!(
        answers[1]["result"]["structuredContent"]["result"], 42,
        "{answers}"
    );

    let unknown = h
        .http
        .delete(format!("{}/mcp", h.base))
        .header("mcp-session-id", "no-such-session")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let known = h
        .http
        .delete(format!("{}/mcp", h.base))
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert!(known.status().is_success(), "{}", known.status());
}

/// A raw request to `/mcp{query}` carrying `authorization` (and the session, if any).
fn raw_mcp(
    h: &Harness,
    method: reqwest::Method,
    query: &str,
    authorization: &str,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut request = h
        .http
        .request(method, format!("{}/mcp{query}", h.base))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", authorization);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request
}

/// Opens a session as `authorization` (advertising form elicitation), handshake completed.
async fn session_of(h: &Harness, query: &str, authorization: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},
        "clientInfo":{"name":"c","version":"1"}}});
    let answer = raw_mcp(h, reqwest::Method::POST, query, authorization, None)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let id = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let done = raw_mcp(h, reqwest::Method::POST, query, authorization, Some(&id))
        .json(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    id
}

/// Issue #39 (6): an MCP session was usable by anyone who knew its id. Another client could
/// answer its pending elicitation (approve a destructive call), send requests on it, listen to
/// it or delete it. A session now answers only the credential that opened it; any other gets
/// 404 as if it did not exist, whether the session is held in memory or only in its record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_credential_that_opened_it() {
    let fixture = serve_stateful().await;
    // An open server: the credential is the `Authorization` header as sent.
    let h = start().await;
    h.add_fixture(&fixture, "stateful").await;
    let (agent, intruder) = ("Bearer agent-a-token", "Bearer someone-else");
    let native = "?elicitation_mode=native";
    let session = session_of(&h, native, agent).await;

    // A destructive call asks the agent's client (native elicitation) and waits.
    let code = r#"
try { const r = await tools.stateful.org.main.delete_everything({}); return r.data; }
catch (e) { return "threw: " + e.message; }"#;
    let mut call = raw_mcp(&h, reqwest::Method::POST, native, agent, Some(&session))
        .json(&execute_request(5, code))
        .send()
        .await
        .unwrap();
    assert_eq!(call.status(), 200);
    let asked = sse_events(&mut call, |e| {
        e.iter().any(|(_, d)| d.contains("elicitation/create"))
    })
    .await;
    let ask: Value = asked
        .iter()
        .find(|(_, d)| d.contains("elicitation/create"))
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .unwrap();
    let accept = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{}}});

    // The intruder knows the session id: every use of it is a 404.
    let answered = raw_mcp(&h, reqwest::Method::POST, native, intruder, Some(&session))
        .json(&accept)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 404, "answering the elicitation");
    let listed = raw_mcp(&h, reqwest::Method::POST, "", intruder, Some(&session))
        .json(&json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 404, "a request on it");
    let listen = raw_mcp(&h, reqwest::Method::GET, "", intruder, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(listen.status(), 404, "its stream");
    let deleted = raw_mcp(&h, reqwest::Method::DELETE, "", intruder, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 404, "deleting it");
    // Nor does a request without any credential reach it.
    let bare = h
        .http
        .post(format!("{}/mcp", h.base))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 404);

    // The agent's own answer still decides: the elicitation was not answered by the intruder.
    let decline = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"decline"}});
    let answered = raw_mcp(&h, reqwest::Method::POST, native, agent, Some(&session))
        .json(&decline)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 202);
    let rest = sse_events(&mut call, |e| e.iter().any(|(_, d)| d.contains("\"id\":5"))).await;
    let result = rest.iter().find(|(_, d)| d.contains("\"id\":5")).unwrap();
    assert!(
        result.1.contains("declined") && !result.1.contains("deleted"),
        "{result:?}"
    );
    assert_eq!(list_status_as(&h, agent, &session).await, 200);

    // A session known only from its record (this server restarted) is bound the same way.
    let h = h.restart().await;
    assert_eq!(list_status_as(&h, intruder, &session).await, 404);
    let deleted = raw_mcp(&h, reqwest::Method::DELETE, "", intruder, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 404);
    assert_eq!(list_status_as(&h, agent, &session).await, 200);
}

async fn list_status_as(h: &Harness, authorization: &str, session: &str) -> u16 {
    raw_mcp(h, reqwest::Method::POST, "", authorization, Some(session))
        .json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Issue #39 (10): an agent's session idle for 330 s was gone (rmcp's 5-minute idle timeout),
/// and the official SDK's client then failed every call with 404 "Session not found". An idle
/// session now leaves memory after the idle limit but keeps its record, and its next request
/// restores it; a DELETE ends it for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_restored_from_its_record() {
    let fixture = serve_stateful().await;
    let h = Harness::start_opts(Options {
        mcp_sessions: executor_server::McpSessionLimits {
            idle: Duration::from_secs(2),
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    h.add_fixture(&fixture, "stateful").await;
    let session = open_session(&h).await.unwrap();
    assert_eq!(list_status(&h, &session).await, 200);

    // A call longer than the idle limit is not idle: the session stays in memory under it.
    let (status, _, answer) = rpc(
        &h,
        Some(&session),
        execute_request(
            3,
            "return (await tools.stateful.org.main.slow({ ms: 2600 })).ok",
        ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "true", "{answer}");

    // Idle past the limit: released, then restored by its next request.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (status, _, answer) = rpc(
        &h,
        Some(&session),
        execute_request(
            4,
            "return (await tools.stateful.org.main.get_workspace({})).ok",
        ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "true", "{answer}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(list_status(&h, &session).await, 200, "restored again");

    // Deleted (while released, then while held): gone for good.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let delete = |id: String| {
        h.http
            .delete(format!("{}/mcp", h.base))
            .header("mcp-session-id", id)
            .send()
    };
    assert_eq!(delete(session.clone()).await.unwrap().status(), 202);
    assert_eq!(list_status(&h, &session).await, 404);
    let held = open_session(&h).await.unwrap();
    assert_eq!(delete(held.clone()).await.unwrap().status(), 202);
    assert_eq!(list_status(&h, &held).await, 404);
}
