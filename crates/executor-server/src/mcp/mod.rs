//! The agent-facing MCP surface (spec §5): `/mcp` over streamable HTTP (rmcp), the same handler
//! for stdio, and the browser approval page `/resume/:id`.
//!
//! Both protocol generations are served: clients on 2025-11-25 and older get sessions
//! (`Mcp-Session-Id`, SSE replies as rmcp requires in session mode), 2026-07-28 clients are served
//! statelessly with JSON replies. Paused executions live in the engine, never in the MCP session,
//! so a pause created on one session can be resumed from another (or over `/api`).

mod handler;
mod sessions;
mod skills;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Html;
use axum::routing::get;
use executor_engine::Engine;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use handler::{ElicitationMode, ExecutorMcp, SERVER_NAME, SERVER_VERSION, server_config};
pub use sessions::{CappedSessions, McpSessionLimits, SESSION_LIMIT_CODE};

/// Hosts always accepted in `Host` (DNS-rebinding protection).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// `Host` values accepted on `/mcp`: loopback plus `extra` (`host` or `host:port`).
pub fn allowed_hosts(extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    for host in extra {
        let host = host.trim();
        if !host.is_empty() && !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            hosts.push(host.to_owned());
        }
    }
    hosts
}

/// Browser origins accepted on `/mcp`: http(s) on the allowed hosts, any port unless one is given.
fn allowed_origins(hosts: &[String]) -> Vec<String> {
    let mut origins = Vec::new();
    for host in hosts {
        let bare_ipv6 =
            host.contains(':') && !host.starts_with('[') && host.matches(':').count() > 1;
        let authority = if bare_ipv6 {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let has_port = !bare_ipv6
            && authority
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
        for scheme in ["http", "https"] {
            origins.push(if has_port {
                format!("{scheme}://{authority}")
            } else {
                format!("{scheme}://{authority}:*")
            });
        }
    }
    origins
}

/// The rmcp service for `/mcp`. Sessions end when `cancel` fires (server shutdown); at most
/// `limits` live at once.
pub fn http_service(
    engine: Engine,
    extra_allowed_hosts: &[String],
    limits: McpSessionLimits,
    cancel: CancellationToken,
) -> StreamableHttpService<ExecutorMcp, CappedSessions> {
    let hosts = allowed_hosts(extra_allowed_hosts);
    let origins = allowed_origins(&hosts);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_json_response(true)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(crate::MAX_BODY_BYTES)
        .with_cancellation_token(cancel);
    StreamableHttpService::new(
        move || Ok(ExecutorMcp::new(engine.clone(), ElicitationMode::Model)),
        Arc::new(CappedSessions::new(limits)),
        config,
    )
}

/// `/mcp` and `/resume/{id}`.
pub(crate) fn router(
    engine: Engine,
    extra_allowed_hosts: &[String],
    limits: McpSessionLimits,
    cancel: CancellationToken,
) -> Router {
    Router::new()
        .nest_service(
            "/mcp",
            http_service(engine.clone(), extra_allowed_hosts, limits, cancel),
        )
        .route("/resume/{id}", get(resume_page))
        .with_state(engine)
}

/// A minimal approval page for browser-mode pauses: approve or decline; a downstream server's
/// form (its requested schema's properties as inputs) or URL is shown with it.
async fn resume_page(State(engine): State<Engine>, Path(id): Path<String>) -> Html<String> {
    let id_html = escape(&id);
    let body = match engine.paused_execution(&id).await {
        Ok(paused) => {
            let interaction = &paused.structured["interaction"];
            let message = interaction["message"]
                .as_str()
                .unwrap_or(&paused.text)
                .to_owned();
            let id_js = serde_json::to_string(&id).unwrap_or_default().replace('<', "\\u003c");
            let url = interaction["url"].as_str().map(|url| {
                format!(
                    "<p>Open this page and finish there: <a href=\"{0}\" target=\"_blank\" rel=\"noopener\">{0}</a></p>",
                    escape(url)
                )
            });
            let fields = form_fields(&interaction["requestedSchema"]);
            format!(
                r##"<p>An agent asks for your approval:</p>
<pre>{}</pre>
{}<form id="form">{}</form>
<p><button id="approve">Approve</button> <button id="decline">Decline</button></p>
<p id="status"></p>
<script>
const id = {id_js};
// The API wants the server's bearer token: taken once from a `?_token=` link (the one
// `executor web` prints) and kept in this browser.
const fromLink = new URLSearchParams(location.search).get("_token");
if (fromLink) {{ localStorage.setItem("executor:token", fromLink); history.replaceState(null, "", location.pathname); }}
const token = localStorage.getItem("executor:token");
function content() {{
  const out = {{}};
  for (const el of document.querySelectorAll("#form [name]")) {{
    const kind = el.dataset.kind;
    if (kind === "boolean") out[el.name] = el.checked;
    else if (el.value === "") continue;
    else if (kind === "number" || kind === "integer") out[el.name] = Number(el.value);
    else out[el.name] = el.value;
  }}
  return out;
}}
async function answer(action) {{
  for (const b of document.querySelectorAll("button")) b.disabled = true;
  document.getElementById("status").textContent = "Sending…";
  const body = action === "accept" ? {{action, content: content()}} : {{action}};
  const r = await fetch("/api/executions/" + encodeURIComponent(id) + "/resume", {{
    method: "POST",
    headers: {{"content-type": "application/json", ...(token ? {{authorization: "Bearer " + token}} : {{}})}},
    body: JSON.stringify(body)
  }});
  document.getElementById("status").textContent = r.ok
    ? (action === "accept" ? "Approved." : "Declined.") + " You can return to your agent."
    : r.status === 401
      ? "Not signed in: open the link `executor web` printed (it ends in ?_token=…) once in this browser, then reload."
      : "Failed: HTTP " + r.status;
}}
document.getElementById("form").onsubmit = (e) => e.preventDefault();
document.getElementById("approve").onclick = () => answer("accept");
document.getElementById("decline").onclick = () => answer("decline");
</script>"##,
                escape(&message),
                url.unwrap_or_default(),
                fields,
            )
        }
        Err(_) => "<p>This execution is not waiting for approval (it was answered already, or it is unknown).</p>".to_owned(),
    };
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Executor approval {id_html}</title></head>\
<body style=\"font-family:sans-serif;max-width:50rem;margin:2rem auto\"><h1>Approval</h1><p><code>{id_html}</code></p>{body}</body></html>"
    ))
}

/// One labelled input per property of an elicitation's requested schema (primitive types and
/// enums, as MCP allows).
fn form_fields(schema: &serde_json::Value) -> String {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let mut html = String::new();
    for (name, prop) in properties {
        let kind = prop
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or("string");
        let label = prop
            .get("title")
            .or_else(|| prop.get("description"))
            .and_then(|t| t.as_str())
            .unwrap_or(name);
        let star = if required.contains(&name.as_str()) {
            " *"
        } else {
            ""
        };
        let attrs = format!("name=\"{}\" data-kind=\"{}\"", escape(name), escape(kind));
        let input = match (kind, prop.get("enum").and_then(|e| e.as_array())) {
            (_, Some(options)) => format!(
                "<select {attrs}>{}</select>",
                options
                    .iter()
                    .filter_map(|o| o.as_str())
                    .map(|o| format!("<option>{}</option>", escape(o)))
                    .collect::<String>()
            ),
            ("boolean", None) => format!("<input type=\"checkbox\" {attrs}>"),
            ("number" | "integer", None) => format!("<input type=\"number\" {attrs}>"),
            _ => format!("<input type=\"text\" {attrs}>"),
        };
        html.push_str(&format!(
            "<p><label>{}{star}<br>{input}</label></p>",
            escape(label)
        ));
    }
    html
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_follow_hosts() {
        let hosts = allowed_hosts(&[
            "example.com".into(),
            "box.lan:8080".into(),
            "localhost".into(),
        ]);
        assert_eq!(
            hosts,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "example.com",
                "box.lan:8080"
            ]
        );
        let origins = allowed_origins(&hosts);
        assert!(origins.contains(&"http://[::1]:*".to_owned()));
        assert!(origins.contains(&"https://example.com:*".to_owned()));
        assert!(origins.contains(&"http://box.lan:8080".to_owned()));
    }
}
