//! Issue #39: an MCP server that answers a call with a reset connection, a truncated body or
//! JSON that is no JSON-RPC answer threw `Internal tool error` into the script. Such answers
//! are the upstream's fault and the agent's to handle: each is an `{ok:false}` value with a
//! code, and the next call of the same execution still works.
//!
//! The server is a real streamable-HTTP endpoint on a raw socket, so that each fault is the
//! bytes a broken server really sends.

mod support;

use serde_json::{Value, json};
use support::Harness;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOOLS: &[&str] = &["fine", "reset", "truncated", "not_rpc", "html", "rpc_error"];

/// Reads one HTTP/1.1 request: `(method, body)`, or `None` at the end of the connection.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let mut chunk = [0u8; 8192];
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = buf[end + 4..end + 4 + length].to_vec();
            buf.drain(..end + 4 + length);
            let method = head.split(' ').next().unwrap_or_default().to_owned();
            return Some((method, body));
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn answer(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nmcp-session-id: s1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn result(id: &Value, result: Value) -> String {
    answer(
        "200 OK",
        "application/json",
        &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
}

/// One connection of the broken server; `false` when it closed the connection on purpose.
async fn serve_connection(mut stream: TcpStream) {
    let mut buf = Vec::new();
    while let Some((method, body)) = read_request(&mut stream, &mut buf).await {
        if method != "POST" {
            // No standalone stream; DELETE ends the session.
            let status = if method == "DELETE" {
                "200 OK"
            } else {
                "405 Method Not Allowed"
            };
            let _ = stream
                .write_all(answer(status, "text/plain", "").as_bytes())
                .await;
            continue;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = request["id"].clone();
        let reply = match request["method"].as_str().unwrap_or_default() {
            "initialize" => result(
                &id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "broken", "version": "1"}}),
            ),
            "tools/list" => result(
                &id,
                json!({"tools": TOOLS.iter().map(|t| json!({
                    "name": t, "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": true}})).collect::<Vec<_>>()}),
            ),
            "tools/call" => match request["params"]["name"].as_str().unwrap_or_default() {
                "fine" => result(&id, json!({"content": [{"type": "text", "text": "fine"}]})),
                "reset" => {
                    // The server dies mid-call: RST, no answer.
                    let _ = stream.set_zero_linger();
                    return;
                }
                "truncated" => {
                    let whole =
                        json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}).to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\ncontent-length: {}\r\n\r\n",
                        whole.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&whole.as_bytes()[..whole.len() / 2]).await;
                    return;
                }
                "not_rpc" => answer("200 OK", "application/json", r#"{"hello":"world"}"#),
                "html" => answer("200 OK", "text/html", "<html>maintenance</html>"),
                _ => answer(
                    "200 OK",
                    "application/json",
                    &json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32000, "message": "database is down"}})
                    .to_string(),
                ),
            },
            // Notifications.
            _ => "HTTP/1.1 202 Accepted\r\nmcp-session-id: s1\r\ncontent-length: 0\r\n\r\n"
                .to_owned(),
        };
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn serve_broken() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream));
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_answers_are_values_with_a_code_and_the_next_call_still_works() {
    let url = serve_broken().await;
    let h = Harness::start().await;
    h.add_mcp_server("Broken", &url, "broken").await;

    let body = h
        .execute(
            r#"
            const out = {};
            for (const name of ["reset", "truncated", "not_rpc", "html", "rpc_error"]) {
              const r = await tools.broken.org.main[name]({});
              out[name] = r.ok ? "ok" : r.error.code;
              out[name + "_after"] = (await tools.broken.org.main.fine({})).ok;
            }
            return out;
            "#,
        )
        .await;
    assert_eq!(body["status"], "completed", "{body}");
    let out = &body["structured"]["result"];
    assert_eq!(out["reset"], "upstream_connection_reset", "{body}");
    assert_eq!(out["truncated"], "upstream_protocol_error", "{body}");
    assert_eq!(out["not_rpc"], "upstream_protocol_error", "{body}");
    assert_eq!(out["html"], "upstream_protocol_error", "{body}");
    assert_eq!(out["rpc_error"], "mcp_rpc_error", "{body}");
    for name in ["reset", "truncated", "not_rpc", "html", "rpc_error"] {
        assert_eq!(out[format!("{name}_after")], true, "{name}: {body}");
    }
}
