//! Durable executions through the real HTTP API (and `/mcp`), against a real SQLite data dir and
//! the session-stateful rmcp fixture: pauses survive a restart of the server and resume by
//! replaying the journal; resume is idempotent; pauses expire; the history lists executions.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use executor_engine::{Engine, EngineConfig};
use executor_mcp::testing::{StatefulMcpServer, serve_stateful};
use executor_store::SqlStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One server process, in-process: store, engine, HTTP. `restart` stops it (as a shutdown
/// would) and starts a new one on the same data dir.
struct Server {
    base: String,
    http: reqwest::Client,
    engine: Engine,
    store: Arc<SqlStore>,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    dir: PathBuf,
    pause_ttl: Duration,
}

impl Server {
    async fn start(dir: &Path, pause_ttl: Duration) -> Self {
        let store = Arc::new(SqlStore::open(dir).await.unwrap());
        let engine = Engine::new(
            store.clone(),
            EngineConfig {
                pause_ttl,
                ..EngineConfig::with_js_timeout(Duration::from_secs(10))
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(executor_server::serve_with(
            listener,
            engine.clone(),
            executor_server::ServeConfig {
                caller: Some(executor_engine::Caller::local("durable-test")),
                ..Default::default()
            },
            shutdown.clone(),
            Duration::from_secs(5),
        ));
        Server {
            base,
            http: reqwest::Client::new(),
            engine,
            store,
            shutdown,
            served,
            dir: dir.to_owned(),
            pause_ttl,
        }
    }

    /// Stops everything and releases the data dir (owner lock included).
    async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.served.await;
        self.engine.shutdown().await;
        drop(self.engine);
        let mut store = self.store;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match Arc::try_unwrap(store) {
                Ok(store) => {
                    store.close().await;
                    return;
                }
                Err(still_shared) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the engine kept the store alive after shutdown"
                    );
                    store = still_shared;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    async fn restart(self) -> Self {
        let (dir, ttl) = (self.dir.clone(), self.pause_ttl);
        self.stop().await;
        Server::start(&dir, ttl).await
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn execute(&self, code: &str) -> Value {
        let (status, body) = self.post("/api/executions", json!({"code": code})).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn resume(&self, id: &str, action: &str) -> Value {
        let (status, body) = self
            .post(
                &format!("/api/executions/{id}/resume"),
                json!({"action": action}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn add_fixture(&self, fixture: &StatefulMcpServer) {
        let (status, body) = self
            .post(
                "/api/mcp/servers",
                json!({"transport":"remote","name":"Session-stateful MCP","endpoint":fixture.url,"slug":"stateful","remoteTransport":"streamable-http"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = self
            .post(
                "/api/connections",
                json!({"owner":"org","name":"main","integration":"stateful","template":"none","value":""}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// One `tools/call` on `/mcp` (stateless request form).
    async fn mcp_tool(&self, name: &str, arguments: Value) -> Value {
        let response = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .json(
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
                "name": name, "arguments": arguments,
                "_meta":{
                    "io.modelcontextprotocol/protocolVersion":"2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities":{},
                    "io.modelcontextprotocol/clientInfo":{"name":"durable","version":"1"}}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.json().await.unwrap();
        body["result"].clone()
    }
}

fn execution_id(paused: &Value) -> String {
    assert_eq!(paused["status"], "paused", "{paused}");
    paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `tools/call` requests the fixture answered.
fn tool_calls(fixture: &StatefulMcpServer) -> usize {
    fixture
        .requests()
        .iter()
        .filter(|r| r.rpc_method.as_deref() == Some("tools/call") && r.status < 300)
        .count()
}

/// Whether any file of the data dir contains `needle`.
fn data_dir_contains(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let path = entry.unwrap().path();
        path.is_file()
            && std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
    })
}

const DAY: Duration = Duration::from_secs(24 * 3600);

/// Values computed before the pause (clock, randomness, the result of a call) must be the same
/// after a restart: the first run shows them in the approval, the replay returns them.
const RESTART_CODE: &str = r#"
const t = Date.now();
const r = Math.random();
const d = new Date().getTime();
// The secret is built at run time: the code itself is stored verbatim (it is re-run).
const sel = await tools.stateful.org.main.select_workspace({ token: ["s3", "cret"].join("") });
const before = Date.now();
const del = await tools.stateful.org.main.delete_everything({ t, r, d });
const after = Date.now();
return { t, r, d, sel: sel.data.content[0].text, del: del.data.content[0].text,
         later: after >= before, again: Math.random() !== r };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_survives_a_restart_and_replays_its_journal() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;

    fixture.clear_requests();
    let paused = server.execute(RESTART_CODE).await;
    let id = execution_id(&paused);
    assert_eq!(tool_calls(&fixture), 1, "select_workspace ran once");
    let shown = paused["structured"]["interaction"]["args"].clone();
    assert!(shown["t"].as_f64().unwrap() > 1.6e12, "{shown}");
    let (status, view_before) = server.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 200, "{view_before}");

    let server = server.restart().await;
    fixture.clear_requests();

    // The new process knows the pause, as it was.
    let (status, view) = server.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view, view_before);

    let done = server.resume(&id, "accept").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["isError"], false, "{done}");
    let result = &done["structured"]["result"];
    assert_eq!(result["t"], shown["t"], "Date.now() replayed: {done}");
    assert_eq!(result["r"], shown["r"], "Math.random() replayed: {done}");
    assert_eq!(result["d"], shown["d"], "new Date() replayed: {done}");
    assert_eq!(
        result["sel"], "selected:ws-e2e",
        "answered from the journal: {done}"
    );
    assert_eq!(result["del"], "deleted");
    assert_eq!(result["later"], true);
    assert_eq!(result["again"], true);
    assert_eq!(
        tool_calls(&fixture),
        1,
        "only the approved call went downstream: {:#?}",
        fixture.requests()
    );

    // Idempotent, also across another restart; the pause itself is gone.
    let again = server.resume(&id, "accept").await;
    assert_eq!(again, done);
    let (status, gone) = server.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 404, "{gone}");
    assert_eq!(gone["_tag"], "ExecutionNotFoundError");
    let server = server.restart().await;
    let third = server.resume(&id, "decline").await;
    assert_eq!(third, done);
    assert_eq!(tool_calls(&fixture), 1);

    // The history has it, with its calls; the secret argument was never written.
    let (status, history) = server.get("/api/executions").await;
    assert_eq!(status, 200, "{history}");
    let row = history
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{history}"))
        .clone();
    assert_eq!(row["status"], "completed", "{row}");
    assert_eq!(row["toolCalls"], 2, "{row}");
    assert_eq!(row["isError"], false, "{row}");
    assert!(row["durationMs"].as_i64().unwrap() >= 0, "{row}");
    server.stop().await;
    // Redacted, and the journal is sealed at rest besides (issue #17).
    assert!(!data_dir_contains(dir.path(), b"s3cret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pause_accept_decline_and_idempotent_resume() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;

    let paused = server
        .execute(
            r#"
            await tools.stateful.org.main.select_workspace({});
            const r = await tools.stateful.org.main.delete_everything({ really: true });
            const after = await tools.stateful.org.main.get_workspace({});
            return [r.data.content[0].text, after.data.content[0].text];
            "#,
        )
        .await;
    let id = execution_id(&paused);
    assert!(id.starts_with("exec_"), "{id}");
    let done = server.resume(&id, "accept").await;
    assert_eq!(
        done["structured"]["result"],
        json!(["deleted", "workspace:ws-e2e"]),
        "a live resume keeps the downstream session: {done}"
    );
    assert_eq!(server.resume(&id, "accept").await, done);

    // Concurrent resumes share one answer.
    let paused = server
        .execute(
            "return (await tools.stateful.org.main.delete_everything({})).data.content[0].text",
        )
        .await;
    let id = execution_id(&paused);
    let (a, b) = tokio::join!(server.resume(&id, "accept"), server.resume(&id, "accept"));
    assert_eq!(a, b);
    assert_eq!(a["text"], "deleted", "{a}");

    // Declined, live and after a restart: a catchable rejection with the usual message.
    let code = "try { await tools.stateful.org.main.delete_everything({}); return 'ran'; } catch (e) { return String(e.message); }";
    let id = execution_id(&server.execute(code).await);
    let declined = server.resume(&id, "decline").await;
    assert_eq!(
        declined["structured"]["result"],
        "Tool \"stateful.org.main.delete_everything\" requires approval but the request was declined by the user.",
        "{declined}"
    );
    let id = execution_id(&server.execute(code).await);
    let server = server.restart().await;
    fixture.clear_requests();
    let cancelled = server.resume(&id, "cancel").await;
    assert_eq!(
        cancelled["structured"]["result"],
        "Tool \"stateful.org.main.delete_everything\" requires approval but the request was cancelled by the user.",
        "{cancelled}"
    );
    assert_eq!(tool_calls(&fixture), 0);

    // Unknown ids.
    for (status, body) in [
        server.get("/api/executions/exec_nope").await,
        server
            .post(
                "/api/executions/exec_nope/resume",
                json!({"action": "accept"}),
            )
            .await,
    ] {
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["_tag"], "ExecutionNotFoundError", "{body}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_made_over_mcp_resumes_over_mcp_after_a_restart() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;

    let paused = server
        .mcp_tool(
            "execute",
            json!({"code": "const n = Math.random(); await tools.stateful.org.main.delete_everything({ n }); return n;"}),
        )
        .await;
    assert_eq!(
        paused["structuredContent"]["status"], "waiting_for_interaction",
        "{paused}"
    );
    let id = paused["structuredContent"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let n = paused["structuredContent"]["interaction"]["args"]["n"].clone();

    let server = server.restart().await;
    let done = server
        .mcp_tool("resume", json!({"executionId": id, "action": "accept"}))
        .await;
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(done["structuredContent"]["result"], n, "{done}");
    // The other surface sees the same settled outcome.
    let http = server.resume(&id, "accept").await;
    assert_eq!(http["structured"]["result"], n, "{http}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_pauses_expire() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let ttl = Duration::from_millis(400);
    let server = Server::start(dir.path(), ttl).await;
    server.add_fixture(&fixture).await;
    let gated = "await tools.stateful.org.main.delete_everything({}); return 'ran'";

    // Resumed too late, live.
    let id = execution_id(&server.execute(gated).await);
    tokio::time::sleep(ttl * 2).await;
    let (status, body) = server.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 404, "{body}");
    let expired = server.resume(&id, "accept").await;
    assert_eq!(expired["status"], "completed", "{expired}");
    assert_eq!(expired["isError"], true, "{expired}");
    assert_eq!(expired["structured"]["expired"], true, "{expired}");
    assert!(
        expired["text"].as_str().unwrap().contains("expired"),
        "{expired}"
    );
    assert_eq!(server.resume(&id, "accept").await, expired);

    // Expired while the server was down: the sweep of the next process finds it.
    let id2 = execution_id(&server.execute(gated).await);
    server.stop().await;
    tokio::time::sleep(ttl * 2).await;
    let server = Server::start(dir.path(), ttl).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, history) = server.get("/api/executions").await;
    let statuses: Vec<(String, String)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&(id2.clone(), "expired".to_owned())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&(id.clone(), "expired".to_owned())),
        "{statuses:?}"
    );
    let late = server.resume(&id2, "accept").await;
    assert_eq!(late["structured"]["expired"], true, "{late}");
    assert_eq!(tool_calls(&fixture), 0, "nothing expired ever ran");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_recent_executions() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;

    assert_eq!(server.execute("return 1").await["text"], "1");
    let failed = server.execute("throw new Error('boom')").await;
    assert_eq!(failed["isError"], true);
    let two = server
        .execute(
            "await tools.stateful.org.main.select_workspace({}); return (await tools.stateful.org.main.get_workspace({})).ok",
        )
        .await;
    assert_eq!(two["text"], "true", "{two}");
    let paused_id = execution_id(
        &server
            .execute("await tools.stateful.org.main.delete_everything({})")
            .await,
    );

    // Settled executions are written just after they answer: wait for the last one.
    let mut history = Value::Null;
    for _ in 0..100 {
        let (status, body) = server.get("/api/executions").await;
        assert_eq!(status, 200, "{body}");
        history = body;
        if history.as_array().unwrap().len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let rows = history.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{history}");
    // Newest first.
    assert_eq!(rows[0]["id"], paused_id.as_str());
    assert_eq!(rows[0]["status"], "paused");
    assert_eq!(rows[0]["toolCalls"], 1);
    assert!(rows[0].get("finishedAt").is_none(), "{history}");
    assert_eq!(
        (
            &rows[1]["status"],
            &rows[1]["toolCalls"],
            &rows[1]["isError"]
        ),
        (&json!("completed"), &json!(2), &json!(false)),
        "{history}"
    );
    assert_eq!(
        (
            &rows[2]["status"],
            &rows[2]["toolCalls"],
            &rows[2]["isError"]
        ),
        (&json!("failed"), &json!(0), &json!(true)),
        "{history}"
    );
    assert_eq!(rows[3]["status"], "completed");
    for row in &rows[1..] {
        assert!(row["id"].as_str().unwrap().starts_with("exec_"), "{row}");
        assert!(row["durationMs"].as_i64().unwrap() >= 0, "{row}");
        assert!(
            row["finishedAt"].as_i64().unwrap() >= row["startedAt"].as_i64().unwrap(),
            "{row}"
        );
    }

    let (_, page) = server.get("/api/executions?limit=2&offset=1").await;
    assert_eq!(page.as_array().unwrap().len(), 2, "{page}");
    assert_eq!(page[0]["id"], rows[1]["id"]);
    let (status, bad) = server.get("/api/executions?limit=lots").await;
    assert_eq!(status, 400, "{bad}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_finish_while_paused_are_journaled_too() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;
    fixture.clear_requests();
    let paused = server
        .execute(
            r#"
            const [s, d] = await Promise.all([
              tools.stateful.org.main.slow({ ms: 100 }),
              tools.stateful.org.main.delete_everything({}),
            ]);
            return [s.data.content[0].text, d.data.content[0].text];
            "#,
        )
        .await;
    let id = execution_id(&paused);
    // `slow` was still in flight when the execution paused; it completes while paused.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(tool_calls(&fixture), 1);
    let server = server.restart().await;
    fixture.clear_requests();
    let done = server.resume(&id, "accept").await;
    assert_eq!(
        done["structured"]["result"],
        json!(["slept:100", "deleted"]),
        "{done}"
    );
    assert_eq!(tool_calls(&fixture), 1, "{:#?}", fixture.requests());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_waits_for_calls_still_running_in_a_paused_execution() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;
    fixture.clear_requests();
    // The execution pauses on `delete_everything` while `slow` is running downstream. The stop
    // comes at once: `slow` must finish and be journaled before the execution is abandoned, and
    // the call the code makes after it (during the shutdown) must not be sent before the restart.
    let paused = server
        .execute(
            r#"
            const d = tools.stateful.org.main.delete_everything({});
            const s = await tools.stateful.org.main.slow({ ms: 400 });
            const w = await tools.stateful.org.main.get_workspace({});
            return [s.data.content[0].text, w.data.content[0].text, (await d).data.content[0].text];
            "#,
        )
        .await;
    let id = execution_id(&paused);
    // The pause can answer before `slow` reached the server (both start at once); the stop
    // must come while it runs downstream, which is what this test is about.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while tool_calls(&fixture) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let server = server.restart().await;
    assert_eq!(
        tool_calls(&fixture),
        1,
        "only slow went downstream before the restart: {:#?}",
        fixture.requests()
    );
    fixture.clear_requests();
    let done = server.resume(&id, "accept").await;
    assert_eq!(
        done["structured"]["result"],
        json!(["slept:400", "no workspace selected", "deleted"]),
        "{done}"
    );
    assert_eq!(
        tool_calls(&fixture),
        2,
        "delete_everything and get_workspace, not slow again: {:#?}",
        fixture.requests()
    );
    server.stop().await;
}

/// The seed's journey across a restart (issue #17, 7): select a workspace, pause on an approval,
/// restart, resume. The calls after the resume reach the SAME downstream session, which still
/// has the selection; the shutdown did not DELETE it.
const SELECT_PAUSE_READ: &str = r#"
const sel = await tools.stateful.org.main.select_workspace({});
const del = await tools.stateful.org.main.delete_everything({});
const read = await tools.stateful.org.main.get_workspace({});
return { sel: sel.data.content[0].text, del: del.ok ? del.data.content[0].text : del.error.code,
         read: read.ok ? read.data.content[0].text : read.error.code,
         message: read.ok ? null : read.error.message };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_execution_comes_back_to_its_downstream_session() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;
    fixture.clear_requests();
    let paused = server.execute(SELECT_PAUSE_READ).await;
    let id = execution_id(&paused);
    let sessions = fixture.ledger.call_session_ids();
    assert_eq!(sessions.len(), 1, "{:#?}", fixture.requests());

    let server = server.restart().await;
    assert!(
        fixture.ledger.deleted_session_ids().is_empty(),
        "the paused execution's session was kept open: {:#?}",
        fixture.requests()
    );
    let initialized = fixture.ledger.initialize_count();
    let done = server.resume(&id, "accept").await;
    let result = &done["structured"]["result"];
    assert_eq!(result["sel"], "selected:ws-e2e", "{done}");
    assert_eq!(result["del"], "deleted", "{done}");
    assert_eq!(
        result["read"], "workspace:ws-e2e",
        "the seed's promise: {done}"
    );
    assert_eq!(
        fixture.ledger.call_session_ids(),
        sessions,
        "every call rode one session: {:#?}",
        fixture.requests()
    );
    assert_eq!(
        fixture.ledger.initialize_count(),
        initialized,
        "no new handshake"
    );
    server.stop().await;
}

/// When the upstream has forgotten the session meanwhile, the resumed calls answer
/// `upstream_session_lost` (with what to do) and nothing goes to a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_downstream_session_is_an_explicit_error_after_a_restart() {
    let fixture = serve_stateful().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    server.add_fixture(&fixture).await;
    let paused = server.execute(SELECT_PAUSE_READ).await;
    let id = execution_id(&paused);
    let server = server.restart().await;
    fixture.forget_sessions().await;
    let initialized = fixture.ledger.initialize_count();
    let done = server.resume(&id, "accept").await;
    let result = &done["structured"]["result"];
    assert_eq!(result["sel"], "selected:ws-e2e", "{done}");
    assert_eq!(result["del"], "upstream_session_lost", "{done}");
    assert_eq!(result["read"], "upstream_session_lost", "{done}");
    let message = result["message"].as_str().unwrap();
    assert!(message.contains("Run the code again"), "{message}");
    assert_eq!(
        fixture.ledger.initialize_count(),
        initialized,
        "no new session was opened: {:#?}",
        fixture.requests()
    );
    server.stop().await;
}

/// A stdio upstream is a child process that ends with us: after a restart its resumed calls
/// answer `upstream_session_lost` rather than run on a fresh process without the selection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_session_cannot_survive_a_restart_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), DAY).await;
    let command = executor_mcp::stdio_fixture::stdio_fixture_path()
        .to_string_lossy()
        .into_owned();
    let (status, body) = server
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "Stdio fixture", "command": command, "slug": "fx"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "fx.*.*.echo", "action": "require_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let paused = server
        .execute(
            r#"
const sel = await tools.fx.org.default.select_workspace({ workspace: "w1" });
const echo = await tools.fx.org.default.echo({});
const read = await tools.fx.org.default.get_workspace({});
return { sel: sel.data.content[0].text, echo: echo.ok ? "ran" : echo.error.code,
         read: read.ok ? read.data.content[0].text : read.error.code };
"#,
        )
        .await;
    let id = execution_id(&paused);
    let server = server.restart().await;
    let done = server.resume(&id, "accept").await;
    let result = &done["structured"]["result"];
    assert_eq!(result["echo"], "upstream_session_lost", "{done}");
    assert_eq!(result["read"], "upstream_session_lost", "{done}");
    server.stop().await;
}
