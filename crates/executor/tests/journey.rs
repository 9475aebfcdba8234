//! The seed journey through the real HTTP API against a real session-stateful rmcp server:
//! state set by one tool call is visible to the next call, because both ride one downstream
//! `Mcp-Session-Id`. Variants: concurrent calls, a session the server forgot, and closing.

use std::sync::Arc;
use std::time::Duration;

use executor_engine::{Engine, EngineConfig};
use executor_mcp::testing::{StatefulMcpServer, serve_stateful};
use executor_store::{Scope, SqliteStore};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Harness {
    base: String,
    http: reqwest::Client,
    engine: Engine,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(dir.path()).await.unwrap());
        let engine = Engine::new(
            store,
            Scope::local("journey-test"),
            EngineConfig::with_js_timeout(Duration::from_secs(10)),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        tokio::spawn(executor_server::serve(
            listener,
            engine.clone(),
            shutdown.clone(),
            Duration::from_secs(5),
        ));
        Harness {
            base,
            http: reqwest::Client::new(),
            engine,
            shutdown,
            _dir: dir,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Adds the fixture as an integration with an org connection `main`; returns the slug.
    async fn add_fixture(&self, fixture: &StatefulMcpServer, slug: &str) {
        let (status, body) = self
            .post(
                "/api/mcp/servers",
                json!({"transport":"remote","name":"Session-stateful MCP","endpoint":fixture.url,"slug":slug,"remoteTransport":"streamable-http"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["slug"], slug);
        let (status, body) = self
            .post(
                "/api/connections",
                json!({"owner":"org","name":"main","integration":slug,"template":"none","value":""}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["address"], format!("tools.{slug}.org.main"));
    }

    async fn execute(&self, code: &str) -> Value {
        let (status, body) = self
            .post("/api/executions", json!({"code": code, "autoApprove": true}))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

const SEED_CODE: &str = r#"
const selected = await tools.stateful.org.main.select_workspace({});
const read = await tools.stateful.org.main.get_workspace({});
return JSON.stringify({ selected, read });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_journey_rides_one_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;

    fixture.clear_requests();
    let executed = h.execute(SEED_CODE).await;
    assert_eq!(executed["status"], "completed", "{executed}");
    assert_eq!(executed["isError"], false, "{executed}");
    let text = executed["text"].as_str().unwrap();
    assert!(text.contains("selected:ws-e2e"), "{text}");
    assert!(text.contains("workspace:ws-e2e"), "the second call must see the first call's state: {text}");
    assert_eq!(fixture.ledger.session_ids().len(), 1, "{:#?}", fixture.requests());
    assert_eq!(fixture.ledger.initialize_count(), 1);

    // A second execution leases the pooled session: the state is still there, no new dial.
    fixture.clear_requests();
    let again = h.execute("return (await tools.stateful.org.main.get_workspace({})).data.content[0].text").await;
    assert_eq!(again["text"], "workspace:ws-e2e", "{again}");
    assert_eq!(fixture.ledger.initialize_count(), 0, "{:#?}", fixture.requests());

    // Removing the connection and the integration closes the session with DELETE.
    let (status, _) = h.call(reqwest::Method::DELETE, "/api/connections/org/stateful/main", None).await;
    assert_eq!(status, 200);
    let (status, body) = h.call(reqwest::Method::DELETE, "/api/mcp/servers/stateful", None).await;
    assert_eq!((status, body), (200, json!({"removed": true})));
    assert_eq!(h.engine.live_mcp_sessions(), 0);
    assert_eq!(fixture.live_sessions().await, 0, "{:#?}", fixture.requests());
    assert!(!fixture.ledger.deleted_session_ids().is_empty());
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_in_one_execution_share_the_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    fixture.clear_requests();
    let executed = h
        .execute(
            r#"
            await tools.stateful.org.main.select_workspace({});
            const reads = await Promise.all([
              tools.stateful.org.main.get_workspace({}),
              tools.stateful.org.main.slow({ ms: 50 }),
              tools.stateful.org.main.get_workspace({}),
              tools.stateful.org.main.slow({ ms: 50 }),
              tools.stateful.org.main.get_workspace({}),
            ]);
            return reads.map(r => r.ok ? r.data.content[0].text : r.error.code);
            "#,
        )
        .await;
    assert_eq!(executed["isError"], false, "{executed}");
    let results = executed["structured"]["result"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for i in [0, 2, 4] {
        assert_eq!(results[i], "workspace:ws-e2e", "{executed}");
    }
    assert_eq!(fixture.ledger.session_ids().len(), 1, "{:#?}", fixture.requests());
    assert_eq!(fixture.ledger.initialize_count(), 1);

    // Concurrent executions each lease a session; afterwards at most one stays open upstream.
    let runs = (0..6).map(|_| h.execute("return (await tools.stateful.org.main.slow({ ms: 30 })).ok"));
    for run in futures::future::join_all(runs).await {
        assert_eq!(run["text"], "true", "{run}");
    }
    assert_eq!(h.engine.live_mcp_sessions(), 1);
    assert_eq!(fixture.live_sessions().await, 1);
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_redialled_once() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    let first = h.execute(SEED_CODE).await;
    assert_eq!(first["isError"], false, "{first}");

    fixture.forget_sessions().await;
    fixture.clear_requests();
    let second = h.execute("return (await tools.stateful.org.main.get_workspace({})).data.content[0].text").await;
    assert_eq!(second["isError"], false, "{second}");
    // The server forgot the state with the session; what matters is that the call went through.
    assert_eq!(second["text"], "no workspace selected", "{second}");
    assert!(fixture.requests().iter().any(|r| r.status == 404), "{:#?}", fixture.requests());
    assert_eq!(fixture.ledger.initialize_count(), 1, "exactly one redial");
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_every_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    for _ in 0..3 {
        let run = h.execute(SEED_CODE).await;
        assert_eq!(run["isError"], false, "{run}");
    }
    assert_eq!(fixture.live_sessions().await, 1, "one pooled session per identity");
    h.shutdown.cancel();
    h.engine.shutdown().await;
    assert_eq!(h.engine.live_mcp_sessions(), 0);
    assert_eq!(fixture.live_sessions().await, 0, "{:#?}", fixture.requests());
}
