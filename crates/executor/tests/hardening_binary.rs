//! Issue #17 regressions that need the built binary: file modes in the data directory, a create
//! killed half-way, and the start order (lock, port, then migrations).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_executor");

/// A `executor web` process on a port of its own, under a umask that would leave files
/// world-readable, with its URL and API token.
struct Server {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Server {
    async fn start(data_dir: &Path) -> Server {
        let manifest = data_dir.join("server-control").join("server.json");
        let _ = std::fs::remove_file(&manifest);
        let child = Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" web --port 0 --hostname 127.0.0.1")
            .arg(BIN)
            .env("EXECUTOR_DATA_DIR", data_dir)
            .env("EXECUTOR_SCOPE_DIR", data_dir)
            .env("EXECUTOR_LOG", "warn,executor=info,executor_store=info")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !manifest.exists() {
            assert!(
                Instant::now() < deadline,
                "the server never wrote its manifest"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let body: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        let auth: Value = serde_json::from_slice(
            &std::fs::read(data_dir.join("server-control").join("auth.json")).unwrap(),
        )
        .unwrap();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", auth["token"].as_str().unwrap())
                .parse()
                .unwrap(),
        );
        Server {
            child,
            url: body["url"].as_str().unwrap().to_owned(),
            http: reqwest::Client::builder()
                .default_headers(headers)
                .build()
                .unwrap(),
        }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(self.child.wait().unwrap().success());
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    /// A failed assertion must not leave the server running (it would hold the test's pipes).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every entry under `dir` with its mode bits.
fn modes(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        let mode = meta.permissions().mode() & 0o777;
        out.push((entry.path(), mode, meta.is_dir()));
        if meta.is_dir() {
            out.extend(modes(&entry.path()));
        }
    }
    out
}

/// The files a running server has open; a stopped one has checkpointed and removed its WAL.
const RUNNING: [&str; 5] = [
    "data.db",
    "data.db-wal",
    "data.db-shm",
    "data.db.owner-lock",
    "secret.key",
];
const STOPPED: [&str; 3] = ["data.db", "data.db.owner-lock", "secret.key"];

fn assert_private(data_dir: &Path, expected_files: &[&str]) {
    let mode = std::fs::metadata(data_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", data_dir.display());
    let entries = modes(data_dir);
    for name in expected_files {
        assert!(
            entries.iter().any(|(p, _, _)| p.ends_with(name)),
            "{name} missing: {entries:?}"
        );
    }
    for (path, mode, is_dir) in entries {
        let expected = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(mode, expected, "{} is {mode:o}", path.display());
    }
}

/// Issue #17: `data.db` and its WAL were created 0644 in a 0755 directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_in_the_data_dir_is_the_owners_alone() {
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("data");
    // A directory an older build made, readable by everyone: tightened at start.
    std::fs::create_dir(&data_dir).unwrap();
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Server::start(&data_dir).await;
    // Writes: a policy, and an execution that pauses (its row and journal are stored).
    let (status, body) = server
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "executor.*", "action": "require_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post(
            "/api/executions",
            json!({"code": "return await tools.executor.coreTools.policies.list({})"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_private(&data_dir, &RUNNING);
    server.stop();
    assert_private(&data_dir, &STOPPED);
    // A file loosened meanwhile is tightened at the next start.
    std::fs::set_permissions(
        data_dir.join("data.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let server = Server::start(&data_dir).await;
    assert_private(&data_dir, &RUNNING);
    server.stop();
}

/// A TCP front for an upstream that can be switched to accept and never answer, so a request
/// through it hangs where the test wants.
struct Switch {
    url: String,
    hang: Arc<AtomicBool>,
}

async fn switch_to(upstream: std::net::SocketAddr, path: &str) -> Switch {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hang = Arc::new(AtomicBool::new(false));
    let flag = hang.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            if flag.load(Ordering::SeqCst) {
                held.push(socket);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut socket, &mut up).await;
                }
            });
        }
    });
    Switch {
        url: format!("http://{addr}{path}"),
        hang,
    }
}

/// Issue #17: a server killed while producing a new connection's tools left the row behind,
/// empty, though the create was never acknowledged. It is undone at the next start, so the
/// create can simply be sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_killed_half_way_is_undone_at_the_next_start() {
    let fixture = executor_mcp::testing::serve_stateful().await;
    let switch = switch_to(fixture.addr, "/mcp").await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    let (status, body) = server
        .post(
            "/api/mcp/servers",
            json!({"name": "fx", "slug": "fx", "endpoint": switch.url, "remoteTransport": "streamable-http"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The create's tool listing now hangs; the server dies meanwhile. (Kept-alive upstream
    // connections are idle for at most 1 s: new ones go through the switch.)
    switch.hang.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let create = json!({"owner": "org", "name": "main", "integration": "fx", "template": "none", "values": {}});
    let pending = {
        let http = server.http.clone();
        let url = format!("{}/api/connections", server.url);
        let create = create.clone();
        tokio::spawn(async move { http.post(url).json(&create).send().await })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        !pending.is_finished(),
        "the create should still be listing tools"
    );
    server.kill();
    assert!(
        pending.await.unwrap().is_err(),
        "the create was never answered"
    );

    switch.hang.store(false, Ordering::SeqCst);
    let server = Server::start(dir.path()).await;
    let (status, list) = server.get("/api/connections").await;
    assert_eq!((status, list), (200, json!([])));
    let (status, created) = server.post("/api/connections", create).await;
    assert_eq!(status, 200, "{created}");
    let (_, tools) = server.get("/api/tools?integration=fx").await;
    assert!(tools.as_array().is_some_and(|t| !t.is_empty()), "{tools}");
    server.stop();
}

/// Issue #17: a second server whose port is taken migrated the database before failing to
/// bind. Now it binds first and leaves the data directory's database alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_bind_touches_no_database() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["web", "--port", &port, "--hostname", "127.0.0.1"])
        .env("EXECUTOR_DATA_DIR", dir.path())
        .env("EXECUTOR_SCOPE_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("binding 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(
        !dir.path().join("data.db").exists(),
        "the database was opened (and migrated) before the bind failed"
    );
}

/// Issue #17: `RUST_LOG` was ignored; it now applies when `EXECUTOR_LOG` is not set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_log_is_honoured_beside_executor_log() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = |var: Option<(&str, &str)>| {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(BIN);
        command
            .args(["web", "--port", &port, "--hostname", "127.0.0.1"])
            .env("EXECUTOR_DATA_DIR", dir.path())
            .env_remove("RUST_LOG")
            .env_remove("EXECUTOR_LOG");
        if let Some((k, v)) = var {
            command.env(k, v);
        }
        String::from_utf8_lossy(&command.output().unwrap().stderr).into_owned()
    };
    // The default filter logs the directory being tightened (info) but no debug lines.
    let debug = "took the data directory owner lock";
    assert!(!run(None).contains(debug));
    assert!(run(Some(("RUST_LOG", "debug"))).contains(debug));
    assert!(run(Some(("EXECUTOR_LOG", "debug"))).contains(debug));
}
