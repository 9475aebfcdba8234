//! stdio upstreams: a real rmcp server in a child process (the `stdio-fixture` binary). Sessions
//! follow the remote rules (one per key per scope, one idle per key), and a closed session leaves
//! no process behind: checked in /proc (a zombie would still be listed there).

#[allow(dead_code, unreachable_pub)]
#[path = "../src/stdio_fixture.rs"]
mod stdio_fixture;

use std::collections::BTreeMap;
use std::time::Duration;

use executor_mcp::{McpClient, McpClientConfig, McpError, SessionKey, StdioTarget};
use serde_json::{Map, Value, json};

fn fixture() -> StdioTarget {
    let path = match option_env!("CARGO_BIN_EXE_stdio-fixture") {
        Some(p) => p.into(),
        None => stdio_fixture::stdio_fixture_path(),
    };
    StdioTarget::new(path.to_string_lossy())
}

fn key(t: &StdioTarget, label: &str) -> SessionKey {
    SessionKey::for_target(t, "none", &BTreeMap::new(), label)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

async fn gone(pid: u32) {
    for _ in 0..250 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {pid} is still there (running or not reaped)");
}

async fn pid_of(scope: &executor_mcp::ExecutionScope, k: &SessionKey, t: &StdioTarget) -> u32 {
    let r = scope.call_tool(k, t, "pid", Map::new()).await.unwrap();
    text(&r).parse().expect("pid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_tools_and_leaves_no_process() {
    let client = McpClient::default();
    let d = client.discover(&fixture()).await.expect("discover");
    assert_eq!(d.server_name.as_deref(), Some("stdio-fixture"));
    let ids: Vec<&str> = d.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["select_workspace", "get_workspace", "echo", "env", "pid"]
    );
    assert_eq!(client.live_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_per_key_pooled_then_closed_on_removal_and_shutdown() {
    let client = McpClient::default();
    let t = fixture();
    let k = key(&t, "fx/org/main");

    let scope = client.scope();
    let selected = scope
        .call_tool(
            &k,
            &t,
            "select_workspace",
            json!({"workspace": "w1"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(text(&selected), "selected:w1");
    let got = scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&got), "workspace:w1", "both calls rode one process");
    let pid = pid_of(&scope, &k, &t).await;
    scope.finish().await;
    assert!(alive(pid), "the idle session keeps its process");
    assert_eq!((client.live_sessions(), client.idle_sessions()), (1, 1));

    // The next execution reuses the idle process (its state too).
    let scope = client.scope();
    assert_eq!(pid_of(&scope, &k, &t).await, pid);
    let got = scope
        .call_tool(&k, &t, "get_workspace", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&got), "workspace:w1");
    scope.finish().await;

    // Removal of the connection closes it: the process is terminated and reaped.
    client.close_where(|l| l == "fx/org/main").await;
    assert_eq!(client.live_sessions(), 0);
    gone(pid).await;

    // A leased session at shutdown is closed when its scope returns it; idle ones at once.
    let scope = client.scope();
    let leased = pid_of(&scope, &k, &t).await;
    let other = fixture();
    let k2 = key(&other, "fx/org/other");
    let scope2 = client.scope();
    let idle = pid_of(&scope2, &k2, &other).await;
    scope2.finish().await;
    client.shutdown().await;
    gone(idle).await;
    assert!(alive(leased));
    scope.finish().await;
    gone(leased).await;
    assert_eq!(client.live_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_and_cwd_reach_the_process() {
    let client = McpClient::default();
    let mut t = fixture();
    t.env.insert("FIXTURE_TOKEN".into(), "s3cret".into());
    t.cwd = Some(std::env::temp_dir().to_string_lossy().into_owned());
    t.env_remove = vec!["PATH".into()];
    let k = SessionKey::for_target(
        &t,
        "env",
        &BTreeMap::from([("FIXTURE_TOKEN".to_owned(), "s3cret".to_owned())]),
        "fx/org/env",
    );
    assert!(!k.digest().contains("s3cret"));
    let scope = client.scope();
    let r = scope
        .call_tool(
            &k,
            &t,
            "env",
            json!({"name": "FIXTURE_TOKEN"})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "s3cret");
    let path = scope
        .call_tool(
            &k,
            &t,
            "env",
            json!({"name": "PATH"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&path),
        "<unset PATH>",
        "env_remove keeps it from the child"
    );
    let echoed = scope
        .call_tool(
            &k,
            &t,
            "echo",
            json!({"a": [1, 2]}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(echoed["structuredContent"], json!({"a": [1, 2]}));
    let pid = pid_of(&scope, &k, &t).await;
    drop(scope); // dropped without finish: returned to the pool in the background
    client.shutdown().await;
    gone(pid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_processes_expire_after_the_ttl() {
    let client = McpClient::new(McpClientConfig {
        idle_ttl: Duration::from_millis(200),
        ..McpClientConfig::default()
    });
    let t = fixture();
    let k = key(&t, "fx/org/ttl");
    let scope = client.scope();
    let pid = pid_of(&scope, &k, &t).await;
    scope.finish().await;
    gone(pid).await;
    assert_eq!(client.live_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_do_not_start_or_speak_mcp_fail_clearly() {
    let client = McpClient::new(McpClientConfig {
        discovery_timeout: Duration::from_secs(5),
        ..McpClientConfig::default()
    });
    let missing = StdioTarget::new("/nonexistent/definitely-not-a-command");
    match client.discover(&missing).await {
        Err(McpError::Connect {
            transport, message, ..
        }) => {
            assert_eq!(transport, "stdio");
            assert!(message.contains("Couldn't start"), "{message}");
            assert!(message.contains("definitely-not-a-command"), "{message}");
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    let mut not_mcp = StdioTarget::new("sh");
    not_mcp.args = vec!["-c".into(), "echo 'no MCP here' >&2; exit 3".into()];
    match client.discover(&not_mcp).await {
        Err(McpError::Connect {
            transport, message, ..
        }) => {
            assert_eq!(transport, "stdio");
            assert!(
                message.contains("did not complete the MCP handshake"),
                "{message}"
            );
            assert!(message.contains("no MCP here"), "{message}");
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    let mut bad_cwd = fixture();
    bad_cwd.cwd = Some("/nonexistent/dir".into());
    assert!(matches!(
        client.discover(&bad_cwd).await,
        Err(McpError::Connect { .. })
    ));
}

/// Set in the environment of the copy of this test binary that
/// `a_child_inherits_only_the_allow_list` starts.
const CHILD_MARK: &str = "EXECUTOR_MCP_TEST_ENV_CHILD";

/// Issue #39: every stdio child inherited the executor's whole environment, its API token
/// and database URL included. The executor's variables are set on a copy of this test binary
/// (setting them here would need `unsafe`), which runs [`child_env_is_the_allow_list`].
#[test]
fn a_child_inherits_only_the_allow_list() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_env_is_the_allow_list",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_MARK, "1")
        .env("EXECUTOR_AUTH_TOKEN", "tok-s3cret-0123456789")
        .env("EXECUTOR_DATABASE_URL", "postgres://u:pw-s3cret@db/x")
        .env("EXECUTOR_SECRET_KEY", "key-s3cret")
        .env("DATABASE_URL", "postgres://u:pw-s3cret@db/y")
        .env("RUST_LOG", "trace")
        .env("AWS_SECRET_ACCESS_KEY", "aws-s3cret")
        .env("LC_ALL", "C")
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_child_inherits_only_the_allow_list, with the executor's variables set"]
async fn child_env_is_the_allow_list() {
    assert_eq!(std::env::var(CHILD_MARK).as_deref(), Ok("1"));
    let client = McpClient::default();
    let mut t = fixture();
    t.env.insert("GIVEN".into(), "by-the-integration".into());
    let k = key(&t, "fx/org/env-allow-list");
    let scope = client.scope();
    let env = |name: &str| {
        let (scope, k, t) = (&scope, &k, &t);
        let name = name.to_owned();
        async move {
            let r = scope
                .call_tool(
                    k,
                    t,
                    "env",
                    json!({ "name": name }).as_object().cloned().unwrap(),
                )
                .await
                .unwrap();
            text(&r)
        }
    };
    for withheld in [
        "EXECUTOR_AUTH_TOKEN",
        "EXECUTOR_DATABASE_URL",
        "EXECUTOR_SECRET_KEY",
        "DATABASE_URL",
        "RUST_LOG",
        "AWS_SECRET_ACCESS_KEY",
        CHILD_MARK,
    ] {
        assert_eq!(
            env(withheld).await,
            format!("<unset {withheld}>"),
            "{withheld} reached the child"
        );
    }
    // The basics a program needs, and what the integration gives it.
    assert_eq!(env("LC_ALL").await, "C");
    assert_eq!(env("LANG").await, "C.UTF-8");
    assert_eq!(env("PATH").await, std::env::var("PATH").unwrap());
    assert_eq!(env("GIVEN").await, "by-the-integration");
    scope.finish().await;
    client.shutdown().await;
}

/// A client that does not allow stdio servers spawns nothing, for discovery and calls alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_stdio_spawns_nothing() {
    let client = McpClient::new(McpClientConfig {
        allow_stdio: false,
        ..McpClientConfig::default()
    });
    let marker = std::env::temp_dir().join(format!(
        "executor-stdio-off-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let mut t = StdioTarget::new("sh");
    t.args = vec!["-c".into(), format!("touch {}", marker.display())];
    assert!(matches!(
        client.discover(&t).await,
        Err(McpError::StdioDisabled)
    ));
    let scope = client.scope();
    let called = scope
        .call_tool(&key(&t, "fx/org/off"), &t, "echo", Map::new())
        .await;
    assert!(matches!(called, Err(McpError::StdioDisabled)), "{called:?}");
    scope.finish().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "the command ran");
    assert_eq!(client.live_sessions(), 0);
}
