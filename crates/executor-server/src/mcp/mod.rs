//! The agent-facing MCP surface (spec §5): `/mcp` over streamable HTTP (rmcp), the same handler
//! for stdio, and the browser approval page `/resume/:id`.
//!
//! Both protocol generations are served: clients on 2025-11-25 and older get sessions
//! (`Mcp-Session-Id`, SSE replies as rmcp requires in session mode), 2026-07-28 clients are served
//! statelessly with JSON replies. Paused executions live in the engine, never in the MCP session,
//! so a pause created on one session can be resumed from another (or over `/api`).

mod events;
mod handler;
mod progress;
mod sampling;
mod sessions;
mod skills;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::response::Html;
use axum::routing::get;
use executor_engine::{Caller, Engine};
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

/// The rmcp service for `/mcp`. Sessions end when `cancel` fires (server shutdown); `sessions`
/// caps how many live at once.
pub fn http_service(
    engine: Engine,
    caller: Caller,
    extra_allowed_hosts: &[String],
    sessions: Arc<CappedSessions>,
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
        move || {
            Ok(ExecutorMcp::new(
                engine.clone(),
                caller.clone(),
                ElicitationMode::Model,
            ))
        },
        sessions,
        config,
    )
}

/// `/mcp` and `/resume/{id}`.
pub(crate) fn router(
    engine: Engine,
    caller: Caller,
    extra_allowed_hosts: &[String],
    limits: McpSessionLimits,
    cancel: CancellationToken,
) -> Router {
    let sessions = Arc::new(CappedSessions::new(limits));
    let service = http_service(
        engine,
        caller,
        extra_allowed_hosts,
        sessions.clone(),
        cancel,
    );
    Router::new()
        .nest_service(
            "/mcp",
            axum::routing::any(move |request| {
                wire::serve(service.clone(), sessions.clone(), request)
            }),
        )
        .route("/resume/{id}", get(resume_page))
}

/// A minimal approval page for browser-mode pauses: approve or decline; a downstream server's
/// form (its requested schema's properties as inputs) or URL is shown with it. The page is
/// public (it is opened from a link) but holds nothing of the execution: the paused call's
/// message and form come from `GET /api/executions/:id`, which needs the bearer token.
async fn resume_page(Path(id): Path<String>) -> Html<String> {
    let id_html = html_escape::encode_safe(&id);
    let id_js = serde_json::to_string(&id)
        .unwrap_or_default()
        .replace('<', "\\u003c");
    Html(format!(
        r##"<!doctype html><html><head><meta charset="utf-8"><title>Executor approval {id_html}</title></head>
<body style="font-family:sans-serif;max-width:50rem;margin:2rem auto"><h1>Approval</h1><p><code>{id_html}</code></p>
<div id="pause" hidden><p>An agent asks for your approval:</p>
<pre id="message"></pre>
<p id="link" hidden>Open this page and finish there: <a id="url" target="_blank" rel="noopener"></a></p>
<form id="form"></form>
<p><button id="approve">Approve</button> <button id="decline">Decline</button></p></div>
<p id="status">Loading…</p>
<script>
const id = {id_js};
const api = "/api/executions/" + encodeURIComponent(id);
// The API wants the server's bearer token: taken once from a `?_token=` link (the one
// `executor web` prints) and kept in this browser.
const fromLink = new URLSearchParams(location.search).get("_token");
if (fromLink) {{ localStorage.setItem("executor:token", fromLink); history.replaceState(null, "", location.pathname); }}
const token = localStorage.getItem("executor:token");
const auth = token ? {{authorization: "Bearer " + token}} : {{}};
const status = document.getElementById("status");
const signIn = "Not signed in: open the link `executor web` printed (it ends in ?_token=…) once in this browser, then reload.";
function field(name, prop, required) {{
  const kind = typeof prop.type === "string" ? prop.type : "string";
  let input;
  if (Array.isArray(prop.enum)) {{
    input = document.createElement("select");
    for (const o of prop.enum) if (typeof o === "string") {{ const opt = document.createElement("option"); opt.textContent = o; input.append(opt); }}
  }} else {{
    input = document.createElement("input");
    input.type = kind === "boolean" ? "checkbox" : (kind === "number" || kind === "integer") ? "number" : "text";
  }}
  input.name = name;
  input.dataset.kind = kind;
  const label = document.createElement("label");
  label.append((prop.title || prop.description || name) + (required ? " *" : ""), document.createElement("br"), input);
  const p = document.createElement("p");
  p.append(label);
  return p;
}}
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
async function load() {{
  const r = await fetch(api, {{headers: auth}});
  if (r.status === 401) {{ status.textContent = signIn; return; }}
  if (!r.ok) {{ status.textContent = "This execution is not waiting for approval (it was answered already, or it is unknown)."; return; }}
  const paused = await r.json();
  const interaction = (paused.structured && paused.structured.interaction) || {{}};
  document.getElementById("message").textContent = typeof interaction.message === "string" ? interaction.message : paused.text;
  if (typeof interaction.url === "string") {{
    const a = document.getElementById("url");
    a.href = interaction.url; a.textContent = interaction.url;
    document.getElementById("link").hidden = false;
  }}
  const schema = interaction.requestedSchema || {{}};
  const required = Array.isArray(schema.required) ? schema.required : [];
  const form = document.getElementById("form");
  for (const [name, prop] of Object.entries(schema.properties || {{}})) form.append(field(name, prop || {{}}, required.includes(name)));
  document.getElementById("pause").hidden = false;
  status.textContent = "";
}}
async function answer(action) {{
  for (const b of document.querySelectorAll("button")) b.disabled = true;
  status.textContent = "Sending…";
  const body = action === "accept" ? {{action, content: content()}} : {{action}};
  const r = await fetch(api + "/resume", {{
    method: "POST",
    headers: {{"content-type": "application/json", ...auth}},
    body: JSON.stringify(body)
  }});
  status.textContent = r.ok
    ? (action === "accept" ? "Approved." : "Declined.") + " You can return to your agent."
    : r.status === 401 ? signIn : "Failed: HTTP " + r.status;
}}
document.getElementById("form").onsubmit = (e) => e.preventDefault();
document.getElementById("approve").onclick = () => answer("accept");
document.getElementById("decline").onclick = () => answer("decline");
load().catch((e) => {{ status.textContent = "Failed: " + e; }});
</script></body></html>"##
    ))
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
