//! stdio MCP upstreams through the real HTTP API: the `stdio-fixture` binary (an rmcp server on
//! stdin/stdout) added with `POST /api/mcp/servers {transport:"stdio"}`, called from code, its
//! env delivered from the connection's values, and its process gone (terminated and reaped)
//! after removal and after engine shutdown.

mod support;

use std::time::Duration;

use executor_mcp::stdio_fixture::stdio_fixture_path;
use serde_json::{Value, json};
use support::Harness;

fn fixture() -> String {
    stdio_fixture_path().to_string_lossy().into_owned()
}

fn alive(pid: u64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits until the process is gone from /proc (a zombie, not yet reaped, would still be there).
async fn gone(pid: u64) {
    for _ in 0..250 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("stdio server process {pid} is still there (running or not reaped)");
}

const SESSION_CODE: &str = r#"
const selected = await tools.fx.org.default.select_workspace({ workspace: "w1" });
const read = await tools.fx.org.default.get_workspace({});
const pid = await tools.fx.org.default.pid({});
return JSON.stringify({
  selected: selected.data.content[0].text,
  read: read.data.content[0].text,
  pid: Number(pid.data.content[0].text),
});
"#;

async fn run_json(h: &Harness, code: &str) -> Value {
    let executed = h.execute(code).await;
    assert_eq!(executed["status"], "completed", "{executed}");
    assert_eq!(executed["isError"], false, "{executed}");
    serde_json::from_str(executed["text"].as_str().unwrap()).expect("JSON result")
}

async fn text_of(h: &Harness, code: &str) -> String {
    let executed = h.execute(code).await;
    assert_eq!(executed["status"], "completed", "{executed}");
    executed["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_keeps_one_session_per_execution_and_dies_with_its_integration() {
    let h = Harness::start().await;
    let command = fixture();
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "Stdio fixture", "command": command, "slug": "fx"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"slug": "fx"}));

    let (_, server) = h.get("/api/mcp/servers/fx").await;
    assert_eq!(
        server["config"],
        json!({"transport": "stdio", "command": command,
               "authenticationTemplate": [{"kind": "none", "slug": "none"}]}),
        "{server}"
    );
    assert_eq!(server["canRefresh"], true);
    let (_, integration) = h.get("/api/integrations/fx").await;
    assert!(integration.get("displayUrl").is_none(), "{integration}");
    // No secrets declared: the org connection `default` is created on template `none`.
    let (_, connections) = h.get("/api/connections?integration=fx").await;
    let connections = connections.as_array().unwrap().clone();
    assert_eq!(connections.len(), 1, "{connections:?}");
    assert_eq!(connections[0]["name"], "default");
    assert_eq!(connections[0]["template"], "none");
    assert_eq!(connections[0]["address"], "tools.fx.org.default");
    let (_, tools) = h.get("/api/tools?integration=fx").await;
    assert_eq!(tools.as_array().map(Vec::len), Some(5), "{tools}");

    // Two calls of one execution ride one process: the second sees the first one's state.
    let first = run_json(&h, SESSION_CODE).await;
    assert_eq!(first["selected"], "selected:w1");
    assert_eq!(first["read"], "workspace:w1", "{first}");
    let pid = first["pid"].as_u64().unwrap();
    assert!(alive(pid), "one idle session (its process) is kept");

    // The next execution reuses it.
    let again = text_of(
        &h,
        "return (await tools.fx.org.default.pid({})).data.content[0].text",
    )
    .await;
    assert_eq!(again, pid.to_string());

    // Arguments reach the server as given.
    let echoed = run_json(
        &h,
        "return JSON.stringify((await tools.fx.org.default.echo({ a: [1, 'two'] })).data.structuredContent)",
    )
    .await;
    assert_eq!(echoed, json!({"a": [1, "two"]}));

    // Removing the integration ends the process.
    let (status, body) = h
        .call(reqwest::Method::DELETE, "/api/mcp/servers/fx", None)
        .await;
    assert_eq!(status, 200, "{body}");
    gone(pid).await;
    assert_eq!(h.engine.live_mcp_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_values_come_from_the_connection() {
    let h = Harness::start().await;
    let command = fixture();
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "fx", "command": command,
                   "envVars": ["FIXTURE_TOKEN"], "env": {"FIXTURE_TOKEN": "from-add"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["slug"], "fx");

    // The value is a connection secret, not config.
    let (_, server) = h.get("/api/mcp/servers/fx").await;
    assert_eq!(
        server["config"]["authenticationTemplate"],
        json!([{"kind": "stdio_env", "slug": "env", "vars": ["FIXTURE_TOKEN"]}])
    );
    assert!(!server.to_string().contains("from-add"), "{server}");
    let (_, integration) = h.get("/api/integrations/fx").await;
    assert_eq!(
        integration["authMethods"],
        json!([{"id": "env", "label": "Environment variables", "kind": "apikey", "template": "env",
                "placements": [{"carrier": "env", "name": "FIXTURE_TOKEN", "prefix": "", "variable": "FIXTURE_TOKEN"}]}])
    );
    let (_, connections) = h.get("/api/connections?integration=fx").await;
    assert_eq!(connections[0]["name"], "default", "{connections}");
    assert_eq!(connections[0]["template"], "env");

    let read = text_of(
        &h,
        "return (await tools.fx.org.default.env({ name: 'FIXTURE_TOKEN' })).data.content[0].text",
    )
    .await;
    assert_eq!(read, "from-add");

    // Another connection, another value, another process.
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "other", "integration": "fx", "template": "env",
                   "values": {"FIXTURE_TOKEN": "from-conn"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let both = run_json(
        &h,
        r#"
        const a = await tools.fx.org.default.env({ name: "FIXTURE_TOKEN" });
        const b = await tools.fx.org.other.env({ name: "FIXTURE_TOKEN" });
        const pa = await tools.fx.org.default.pid({});
        const pb = await tools.fx.org.other.pid({});
        return JSON.stringify([a.data.content[0].text, b.data.content[0].text,
                               pa.data.content[0].text, pb.data.content[0].text]);
        "#,
    )
    .await;
    assert_eq!(both[0], "from-add");
    assert_eq!(both[1], "from-conn");
    assert_ne!(both[2], both[3], "one process per connection identity");
    let other_pid: u64 = both[3].as_str().unwrap().parse().unwrap();

    // Removing a connection ends its process only.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            "/api/connections/org/fx/other",
            None,
        )
        .await;
    assert_eq!(status, 200);
    gone(other_pid).await;
    assert!(alive(both[2].as_str().unwrap().parse().unwrap()));

    // Declared but not supplied: no connection is made for it.
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "needs key", "command": command,
                   "envVars": ["NEEDED_KEY"]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["slug"], "needs_key");
    let (_, connections) = h.get("/api/connections?integration=needs_key").await;
    assert_eq!(connections, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_fail_are_rejected_and_nothing_is_stored() {
    let h = Harness::start().await;
    for (slug, command, args) in [
        ("missing", "/nonexistent/not-a-server", json!([])),
        (
            "notmcp",
            "sh",
            json!(["-c", "echo 'this is not MCP' >&2; exit 3"]),
        ),
    ] {
        let (status, body) = h
            .post(
                "/api/mcp/servers",
                json!({"transport": "stdio", "name": slug, "slug": slug, "command": command, "args": args}),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["_tag"], "McpConnectionError", "{body}");
        assert_eq!(body["transport"], "stdio", "{body}");
        assert!(
            body["message"].as_str().unwrap().contains(command),
            "{body}"
        );
        let (status, _) = h.get(&format!("/api/integrations/{slug}")).await;
        assert_eq!(status, 404);
        let (_, server) = h.get(&format!("/api/mcp/servers/{slug}")).await;
        assert_eq!(server, Value::Null);
    }
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "no command"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (_, connections) = h.get("/api/connections").await;
    assert_eq!(connections, json!([]));
    assert_eq!(h.engine.live_mcp_sessions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_shutdown_leaves_no_child_process() {
    let h = Harness::start().await;
    let (status, body) = h
        .post(
            "/api/mcp/servers",
            json!({"transport": "stdio", "name": "fx", "command": fixture()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let first = run_json(&h, SESSION_CODE).await;
    let pid = first["pid"].as_u64().unwrap();
    assert!(alive(pid));
    h.engine.shutdown().await;
    gone(pid).await;
}
