//! A real stdio MCP server for tests (feature `testing`): the `stdio-fixture` binary serves
//! [`StdioFixture`] with rmcp over its stdin/stdout. Other crates' tests get its path from
//! [`stdio_fixture_path`], which builds it with cargo on first use.
//!
//! Tools: `select_workspace {workspace?}` / `get_workspace` (state kept per process, i.e. per
//! MCP session), `echo {…}` (answers its arguments), `env {name}` (the value of an environment
//! variable, to prove a connection's `stdio_env` values reached the process), `pid` (the server's
//! process id, to check that closed sessions leave no process behind).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The handler the `stdio-fixture` binary serves.
#[derive(Clone, Default)]
pub struct StdioFixture {
    selected: Arc<Mutex<Option<String>>>,
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("fixture tool")
}

/// The stdio fixture's tool list.
pub fn stdio_fixture_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        tool(
            json!({"name": "select_workspace", "description": "Selects the workspace for this MCP session",
            "inputSchema": {"type": "object", "properties": {"workspace": {"type": "string"}}}}),
        ),
        tool(
            json!({"name": "get_workspace", "description": "Returns the workspace selected earlier in this MCP session",
            "inputSchema": empty}),
        ),
        tool(
            json!({"name": "echo", "description": "Answers its arguments", "inputSchema": {"type": "object"}}),
        ),
        tool(
            json!({"name": "env", "description": "Returns the value of an environment variable",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
        ),
        tool(
            json!({"name": "pid", "description": "Returns the server's process id", "inputSchema": empty}),
        ),
    ]
}

fn text(text: impl Into<String>) -> CallToolResult {
    serde_json::from_value(json!({"content": [{"type": "text", "text": text.into()}]}))
        .expect("fixture result")
}

impl ServerHandler for StdioFixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stdio-fixture", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(stdio_fixture_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "select_workspace" => {
                let ws = args
                    .get("workspace")
                    .and_then(Value::as_str)
                    .unwrap_or("ws-stdio")
                    .to_owned();
                *self.selected.lock().unwrap_or_else(|p| p.into_inner()) = Some(ws.clone());
                text(format!("selected:{ws}"))
            }
            "get_workspace" => match self
                .selected
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
            {
                Some(ws) => text(format!("workspace:{ws}")),
                None => text("no workspace selected"),
            },
            "echo" => serde_json::from_value(json!({
                "content": [{"type": "text", "text": Value::Object(args.clone()).to_string()}],
                "structuredContent": Value::Object(args),
            }))
            .expect("echo result"),
            "env" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("");
                match std::env::var(name) {
                    Ok(v) => text(v),
                    Err(_) => text(format!("<unset {name}>")),
                }
            }
            "pid" => text(std::process::id().to_string()),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// Serves [`StdioFixture`] on this process's stdin/stdout until the client closes stdin.
pub async fn serve_stdio_fixture() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service = StdioFixture::default()
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}

/// Path of the `stdio-fixture` binary, built (once per process) with the cargo that runs the
/// tests: `cargo build -p executor-mcp --features testing --bin stdio-fixture`.
pub fn stdio_fixture_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let output = std::process::Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--manifest-path",
                manifest,
                "--features",
                "testing",
                "--bin",
                "stdio-fixture",
                "--message-format=json",
            ])
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run cargo to build stdio-fixture");
        assert!(output.status.success(), "building stdio-fixture failed");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|m| m["reason"] == "compiler-artifact")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo reported the stdio-fixture executable")
    })
    .clone()
}
