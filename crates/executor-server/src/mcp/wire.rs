//! What `/mcp` answers before rmcp sees a request (issue #18): rmcp answers a body that is not
//! one JSON-RPC message with `415` and plain text, and a DELETE of a session it does not know
//! with `202`. Clients expect JSON-RPC errors: malformed JSON is `400` with `-32700`; a batch
//! (a JSON array) is served where the protocol allows it (2025-03-26, the only version with
//! batches), one message at a time through rmcp, and is otherwise `400` with `-32600`; a DELETE
//! of an unknown session is `404`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{SessionManager, StreamableHttpService};
use serde_json::{Value, json};
use tower::ServiceExt;

use executor_engine::Caller;

use super::sessions::{CappedSessions, SessionCredential};
use super::{ExecutorMcp, Resource};

/// The only protocol version whose JSON-RPC allowed batches.
const BATCH_VERSION: &str = "2025-03-26";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

type Mcp = StreamableHttpService<ExecutorMcp, CappedSessions>;

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": null})
            .to_string(),
    )
        .into_response()
}

/// `/mcp` and `/mcp/toolkits/<slug>`: checked here, then served by rmcp.
pub(super) async fn serve(
    service: Mcp,
    sessions: Arc<CappedSessions>,
    mut request: Request<Body>,
) -> Response {
    let Some(resource) = Resource::parse(request.uri().path()) else {
        return rpc_error(StatusCode::NOT_FOUND, -32001, "MCP resource not found");
    };
    // A session answers only the credential that opened it (anyone else hears it does not
    // exist), and only on the endpoint it was opened on.
    let credential = SessionCredential::of(request.extensions(), request.headers());
    let session = session_of(&request);
    if let Some(id) = &session
        && let Some((owner, bound)) = sessions.binding(&id.as_str().into())
    {
        if *owner != *credential.digest() {
            return session_not_found();
        }
        if bound != resource {
            return wrong_resource();
        }
        if request.method() == Method::DELETE
            && let Some(engine) = sessions.kept()
            && let Err(e) = engine.forget_agent_session(id).await
        {
            tracing::warn!(error = %e, "could not forget a deleted MCP session");
        }
    } else if let Some(engine) = sessions.kept()
        && let Some(id) = &session
    {
        // Not held here: released while idle, opened before a restart or on another replica.
        match engine.agent_session(id).await {
            Ok(Some(kept)) if kept.token_hash != credential.digest() => {
                return session_not_found();
            }
            Ok(Some(kept)) if kept.resource != resource.path() => return wrong_resource(),
            Ok(Some(_)) if request.method() == Method::DELETE => {
                // Ended for every replica; one that holds it lets it idle out.
                let _ = engine.forget_agent_session(id).await;
                return StatusCode::ACCEPTED.into_response();
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not read a kept MCP session");
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32603,
                    "Session store unavailable",
                );
            }
        }
    }
    if let Some(caller) = request.extensions_mut().remove::<Caller>() {
        request.extensions_mut().insert(resource.caller(caller));
    }
    request.extensions_mut().insert(resource);
    match *request.method() {
        Method::DELETE => {
            if let Some(id) = session_of(&request)
                && !sessions.has_session(&id.into()).await.unwrap_or(false)
            {
                return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found");
            }
            forward(service, request).await
        }
        Method::POST => {
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, crate::MAX_BODY_BYTES).await else {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    INVALID_REQUEST,
                    "Request body too large",
                );
            };
            let value: Value = match serde_json::from_slice(&bytes) {
                Ok(v) => v,
                Err(e) => {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        PARSE_ERROR,
                        &format!("Parse error: {e}"),
                    );
                }
            };
            match value {
                Value::Array(batch) => serve_batch(service, parts, batch).await,
                _ => forward(service, Request::from_parts(parts, Body::from(bytes))).await,
            }
        }
        _ => forward(service, request).await,
    }
}

fn session_not_found() -> Response {
    rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found")
}

fn wrong_resource() -> Response {
    rpc_error(
        StatusCode::FORBIDDEN,
        -32003,
        "This MCP session belongs to another resource (it was created on another endpoint)",
    )
}

fn session_of(request: &Request<Body>) -> Option<String> {
    request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn forward(service: Mcp, request: Request<Body>) -> Response {
    match service.oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    }
}

/// A JSON-RPC batch: each message through rmcp in order, the answers as one JSON array (`202`
/// when the batch held only notifications and responses).
async fn serve_batch(
    service: Mcp,
    parts: axum::http::request::Parts,
    batch: Vec<Value>,
) -> Response {
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            // No header: a 2025-03-26 client (the header came later), unless the batch
            // initializes with another version.
            batch
                .iter()
                .find(|m| m["method"] == "initialize")
                .and_then(|m| m["params"]["protocolVersion"].as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| BATCH_VERSION.to_owned());
    if version != BATCH_VERSION {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            &format!(
                "JSON-RPC batches are not supported in protocol version {version} (only in {BATCH_VERSION}); send one message per request"
            ),
        );
    }
    if batch.is_empty() {
        return rpc_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, "Empty batch");
    }
    let mut answers = Vec::new();
    let mut session: Option<HeaderValue> = parts.headers.get("mcp-session-id").cloned();
    for message in batch {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(parts.uri.clone())
            .version(parts.version);
        for (name, value) in &parts.headers {
            if name != header::CONTENT_LENGTH && name != "mcp-session-id" {
                request = request.header(name, value);
            }
        }
        if let Some(id) = &session {
            request = request.header("mcp-session-id", id);
        }
        let mut request = request
            .body(Body::from(message.to_string()))
            .expect("a request built from a valid one");
        // The caller and resource the front door and `serve` set travel with each message.
        *request.extensions_mut() = parts.extensions.clone();
        let response = forward(service.clone(), request).await;
        if session.is_none() {
            session = response.headers().get("mcp-session-id").cloned();
        }
        let status = response.status();
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let body: Bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        if status == StatusCode::ACCEPTED || body.is_empty() {
            continue;
        }
        if is_sse {
            let text = String::from_utf8_lossy(&body);
            answers.extend(
                text.lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                    .filter(|m| m.get("id").is_some()),
            );
        } else if let Ok(answer) = serde_json::from_slice::<Value>(&body) {
            answers.push(answer);
        } else {
            // rmcp refused it in plain text (say, not a JSON-RPC message): its answer, as JSON-RPC.
            let message = String::from_utf8_lossy(&body).into_owned();
            answers.push(json!({"jsonrpc": "2.0", "error": {"code": INVALID_REQUEST, "message": message}, "id": id}));
        }
    }
    let mut response = if answers.is_empty() {
        StatusCode::ACCEPTED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "application/json")],
            Value::Array(answers).to_string(),
        )
            .into_response()
    };
    if let Some(id) = session {
        response.headers_mut().insert("mcp-session-id", id);
    }
    response
}
