//! The in-process server every integration test drives: a real SQLite data dir, the engine,
//! and the HTTP server on a loopback port, plus helpers for the seed fixture.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use executor_engine::{Caller, Engine, EngineConfig};
use executor_mcp::testing::StatefulMcpServer;
use executor_store::SqlStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub struct Harness {
    pub base: String,
    pub http: reqwest::Client,
    pub engine: Engine,
    /// Who the server's requests act for (the engine calls of a test act for them too).
    pub caller: Caller,
    pub shutdown: CancellationToken,
    pub dir: Arc<tempfile::TempDir>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// How to start a [`Harness`].
pub struct Options {
    pub js_timeout: Duration,
    pub allowed_hosts: Vec<String>,
    /// Reuse a data dir (a restart); a fresh one when `None`.
    pub dir: Option<Arc<tempfile::TempDir>>,
    /// Require this bearer token (the harness's own client sends it).
    pub auth_token: Option<String>,
    /// The `file` credential provider's JSON file; `<data dir>/auth.json` when `None`.
    pub auth_file: Option<std::path::PathBuf>,
    /// Tool call limits; the engine's defaults when `None`.
    pub calls: Option<executor_engine::CallLimitsConfig>,
    /// `(running, waiting, wait)` admission of executions; the defaults when `None`.
    pub admission: Option<(usize, usize, Duration)>,
    pub mcp_sessions: executor_server::McpSessionLimits,
    /// A PostgreSQL database (URL, deployment key) instead of the data dir's SQLite file.
    pub postgres: Option<(String, executor_store::MasterKey)>,
}

/// A fresh database in the test cluster (`EXECUTOR_TEST_POSTGRES_URL`, see
/// `scripts/postgres.sh`), or `None` without one (fails instead with
/// `EXECUTOR_TEST_REQUIRE_POSTGRES=1`).
pub async fn fresh_postgres() -> Option<String> {
    use sqlx::Connection as _;
    let Ok(admin) = std::env::var("EXECUTOR_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var("EXECUTOR_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "EXECUTOR_TEST_POSTGRES_URL is not set but EXECUTOR_TEST_REQUIRE_POSTGRES=1"
        );
        eprintln!("skipped: EXECUTOR_TEST_POSTGRES_URL is not set");
        return None;
    };
    let name = format!("executor_it_{}_{}", std::process::id(), rand_suffix());
    let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    let (base, _) = admin.rsplit_once('/').unwrap();
    Some(format!("{base}/{name}"))
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}_{nanos}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl Default for Options {
    fn default() -> Self {
        Options {
            js_timeout: Duration::from_secs(10),
            allowed_hosts: Vec::new(),
            dir: None,
            auth_token: None,
            auth_file: None,
            calls: None,
            admission: None,
            mcp_sessions: executor_server::McpSessionLimits::default(),
            postgres: None,
        }
    }
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_opts(Options::default()).await
    }

    pub async fn start_with(js_timeout: Duration) -> Self {
        Self::start_opts(Options {
            js_timeout,
            ..Options::default()
        })
        .await
    }

    pub async fn start_opts(options: Options) -> Self {
        let dir = options
            .dir
            .unwrap_or_else(|| Arc::new(tempfile::tempdir().unwrap()));
        let store = Arc::new(match &options.postgres {
            Some((url, key)) => SqlStore::connect_postgres(url, key.clone()).await.unwrap(),
            None => SqlStore::open(dir.path()).await.unwrap(),
        });
        let caller = Caller::local("integration-test");
        let engine = Engine::new(
            store,
            EngineConfig {
                providers: executor_engine::ProvidersConfig {
                    auth_file: Some(
                        options
                            .auth_file
                            .unwrap_or_else(|| dir.path().join(executor_engine::AUTH_FILE_NAME)),
                    ),
                    keychain: false,
                },
                // As the server runs it, when the test's runtime can host JS (multi-thread); one
                // shared slot, so that concurrent executions also take the spill path.
                js_threads: match tokio::runtime::Handle::current().runtime_flavor() {
                    tokio::runtime::RuntimeFlavor::MultiThread => {
                        executor_engine::JsThreads::Shared {
                            executions: 1,
                            spill_threads: 2,
                        }
                    }
                    _ => EngineConfig::with_js_timeout(options.js_timeout).js_threads,
                },
                calls: options.calls.unwrap_or_default(),
                max_concurrent_executions: options.admission.map_or(256, |a| a.0),
                max_queued_executions: options.admission.map_or(1024, |a| a.1),
                queue_wait: options.admission.map_or(Duration::from_secs(30), |a| a.2),
                ..EngineConfig::with_js_timeout(options.js_timeout)
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        tokio::spawn(executor_server::serve_with(
            listener,
            engine.clone(),
            executor_server::ServeConfig {
                allowed_hosts: options.allowed_hosts,
                auth_token: options.auth_token.clone(),
                mcp_sessions: options.mcp_sessions,
                caller: Some(caller.clone()),
                data_dir: Some(dir.path().display().to_string()),
                team: None,
            },
            shutdown.clone(),
            Duration::from_secs(5),
        ));
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &options.auth_token {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
        }
        Harness {
            base,
            http: reqwest::Client::builder()
                .default_headers(headers)
                .build()
                .unwrap(),
            engine,
            caller,
            shutdown,
            dir,
        }
    }

    /// Stops the server as a shutdown would and starts a new one on the same data dir.
    pub async fn restart(self) -> Harness {
        let dir = self.dir.clone();
        self.shutdown.cancel();
        self.engine.shutdown().await;
        drop(self);
        // The owner lock is released once the last engine clone (the draining server's) is gone.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match SqlStore::open(dir.path()).await {
                Ok(store) => {
                    store.close().await;
                    break;
                }
                Err(e) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "data dir still owned: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        Harness::start_opts(Options {
            dir: Some(dir),
            ..Options::default()
        })
        .await
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
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

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Adds the fixture as integration `slug` with an org connection `main`.
    pub async fn add_fixture(&self, fixture: &StatefulMcpServer, slug: &str) {
        self.add_mcp_server("Session-stateful MCP", &fixture.url, slug)
            .await;
    }

    /// Adds the streamable-HTTP MCP server at `url` as integration `slug` with an org
    /// connection `main` that needs no credentials.
    pub async fn add_mcp_server(&self, name: &str, url: &str, slug: &str) {
        let (status, body) = self
            .post(
                "/api/mcp/servers",
                json!({"transport":"remote","name":name,"endpoint":url,"slug":slug,"remoteTransport":"streamable-http"}),
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

    /// One JSON-RPC exchange with the MCP endpoint at `path` (`/mcp`, `/mcp/toolkits/<slug>`)
    /// over raw HTTP: the status, the `Mcp-Session-Id` header and the answer (JSON or the first
    /// SSE `data:`).
    pub async fn mcp_rpc(
        &self,
        path: &str,
        session: Option<&str>,
        body: Value,
    ) -> (u16, Option<String>, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .or(Some(text.as_str()))
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(Value::Null);
        (status, id, json)
    }

    /// A session of the MCP endpoint at `path` that has completed the handshake, or the
    /// JSON-RPC error of a refused one.
    pub async fn mcp_session(&self, path: &str) -> Result<String, Value> {
        let (status, id, answer) = self
            .mcp_rpc(
                path,
                None,
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                    "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        if answer.get("error").is_some() {
            return Err(answer);
        }
        let id = id.expect("a session id");
        let (status, _, _) = self
            .mcp_rpc(
                path,
                Some(&id),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            )
            .await;
        assert_eq!(status, 202);
        Ok(id)
    }

    /// Runs code as the approver (`autoApprove: true`).
    pub async fn execute(&self, code: &str) -> Value {
        let (status, body) = self
            .post(
                "/api/executions",
                json!({"code": code, "autoApprove": true}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Runs code as an agent: gated calls pause.
    pub async fn execute_gated(&self, code: &str) -> Value {
        let (status, body) = self.post("/api/executions", json!({"code": code})).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub async fn resume(&self, id: &str, action: &str) -> (u16, Value) {
        self.post(
            &format!("/api/executions/{id}/resume"),
            json!({"action": action}),
        )
        .await
    }
}
