//! A stdio MCP server for tests: see `executor_mcp::stdio_fixture`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    executor_mcp::stdio_fixture::serve_stdio_fixture().await
}
