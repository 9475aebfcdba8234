//! Per-call latency of `ExecutionScope::call_tool` against a server that leaves Nagle's algorithm on
//! (no TCP_NODELAY on accepted sockets), compared with a plain rmcp client on the same server, and
//! the keep-alive connections that carry the calls (on Linux, where quick ACKs make reuse safe).

#[allow(dead_code, unreachable_pub)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use executor_mcp::{McpClient, RemoteTarget, RemoteTransport, SessionKey};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::Map;

const CALLS: usize = 50;

struct PlainHandler;

impl rmcp::ClientHandler for PlainHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("latency-plain", "0.1.0"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn ours(url: &str) -> Duration {
    ours_over(url, RemoteTransport::StreamableHttp).await
}

async fn ours_over(url: &str, transport: RemoteTransport) -> Duration {
    let client = McpClient::default();
    let target = RemoteTarget::new(url, transport);
    let key = SessionKey::new(&target, "none", &BTreeMap::new(), "latency");
    let scope = client.scope();
    // Warm-up: dial the session, then a few calls.
    for _ in 0..5 {
        scope
            .call_tool(&key, &target, "get_workspace", Map::new())
            .await
            .expect("warm-up call");
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        scope
            .call_tool(&key, &target, "get_workspace", Map::new())
            .await
            .expect("call");
        samples.push(t.elapsed());
    }
    scope.finish().await;
    client.shutdown().await;
    median(samples)
}

async fn plain(url: &str) -> Duration {
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    let client = PlainHandler.serve(transport).await.expect("plain dial");
    let call = || CallToolRequestParams::new("get_workspace").with_arguments(Map::new());
    for _ in 0..5 {
        client.peer().call_tool(call()).await.expect("warm-up call");
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        client.peer().call_tool(call()).await.expect("call");
        samples.push(t.elapsed());
    }
    let _ = client.cancel().await;
    median(samples)
}

/// `CALLS + 5` tool calls, the handshake and the session's close: a fresh connection per POST
/// would be over 60; kept alive, a few (the session's GET stream holds one of its own).
fn assert_connections_reused(accepted: usize) {
    println!("connections accepted for our session: {accepted}");
    if cfg!(target_os = "linux") {
        assert!(
            accepted <= 6,
            "{accepted} TCP connections for {} calls: not kept alive",
            CALLS + 5
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_latency_without_server_nodelay() {
    let server = testing::serve_stateful_with(false).await;
    let plain_p50 = plain(&server.url).await;
    let before = server.connections_accepted();
    let ours_p50 = ours(&server.url).await;
    assert_connections_reused(server.connections_accepted() - before);
    println!(
        "server without TCP_NODELAY: plain rmcp p50 = {plain_p50:?}, ExecutionScope::call_tool p50 = {ours_p50:?}"
    );
    assert!(
        ours_p50 < Duration::from_millis(5),
        "call_tool median {ours_p50:?} (plain rmcp client: {plain_p50:?}); Nagle/delayed-ACK stall?"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_latency_with_server_nodelay() {
    let server = testing::serve_stateful_with(true).await;
    let plain_p50 = plain(&server.url).await;
    let before = server.connections_accepted();
    let ours_p50 = ours(&server.url).await;
    assert_connections_reused(server.connections_accepted() - before);
    println!(
        "server with TCP_NODELAY: plain rmcp p50 = {plain_p50:?}, ExecutionScope::call_tool p50 = {ours_p50:?}"
    );
    assert!(
        ours_p50 < Duration::from_millis(5),
        "call_tool median {ours_p50:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_call_latency_without_server_nodelay() {
    let server = testing::serve_legacy_sse_with(false).await;
    let ours_p50 = ours_over(&server.url, RemoteTransport::Sse).await;
    println!("legacy SSE server without TCP_NODELAY: ExecutionScope::call_tool p50 = {ours_p50:?}");
    assert!(
        ours_p50 < Duration::from_millis(5),
        "call_tool median {ours_p50:?}"
    );
}
