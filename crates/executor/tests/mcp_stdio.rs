//! `executor mcp` over stdio, with the real binary: serving from the data directory when no
//! server runs, and bridging to the running server's `/mcp` (never a second writer) when one does.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_executor");

async fn stdio_client(data_dir: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("mcp")
        .env("EXECUTOR_DATA_DIR", data_dir)
        .env("EXECUTOR_SCOPE_DIR", data_dir)
        .env("EXECUTOR_LOG", "warn")
        .kill_on_drop(true);
    let transport = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap()
        .0;
    ().serve(transport).await.expect("stdio MCP initializes")
}

async fn execute(client: &RunningService<RoleClient, ()>, code: &str) -> Value {
    let args = json!({"code": code}).as_object().cloned().unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("execute").with_arguments(args))
        .await
        .unwrap();
    serde_json::to_value(result).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_from_the_data_dir_when_no_server_runs() {
    let dir = tempfile::tempdir().unwrap();
    let client = stdio_client(dir.path()).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "executor");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["execute", "skills", "resume"]);
    let one = execute(&client, "return 1").await;
    assert_eq!(one["content"][0]["text"], "1", "{one}");
    // It owns the data directory meanwhile: a server cannot start on it.
    let second = std::process::Command::new(BIN)
        .args(["web", "--port", "0"])
        .env("EXECUTOR_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!second.status.success());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_bridges_to_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = std::process::Command::new(BIN)
        .args(["web", "--port", "0", "--hostname", "127.0.0.1"])
        .env("EXECUTOR_DATA_DIR", dir.path())
        .env("EXECUTOR_SCOPE_DIR", dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let manifest = dir.path().join("server-control").join("server.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !manifest.exists() {
        assert!(
            Instant::now() < deadline,
            "the server never wrote its manifest"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&manifest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let body: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(body["pid"], server.id());
    let url = body["url"].as_str().unwrap().to_owned();

    let client = stdio_client(dir.path()).await;
    let one = execute(&client, "return 40 + 2").await;
    assert_eq!(one["content"][0]["text"], "42", "{one}");
    // The server holds the owner lock throughout, so the answer came through its `/mcp`.
    let reply = reqwest::get(format!("{url}/api/health")).await.unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    client.cancel().await.unwrap();

    // A clean shutdown removes the manifest.
    let pid = server.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = server.wait().unwrap();
    assert!(status.success());
    assert!(!manifest.exists());
}
