//! The approval page's routes for a pause made on an MCP endpoint (spec §3.13, "browser
//! approval"): `GET /api/mcp-sessions/:sid/executions/:id` and `POST …/resume`.
//!
//! A pause answers only under the policy source it was made under (issue #39), so the plain
//! `/api/executions/:id` routes, which are the global source, cannot answer one made on a
//! toolkit's endpoint. These answer it under the source of the MCP session that made it, for the
//! same person (executions are the caller's own), and a resume answers only that it was sent:
//! the result goes to the agent's session, which is waiting for it, never to whoever approved.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use executor_engine::{Caller, Engine, ResumeAction};
use serde_json::json;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use crate::error::ApiError;
use crate::mcp::Resource;
use crate::routes::{ApiJson, ok};

type ApiResult = Result<Response, ApiError>;

/// Merged into the `/api` router.
pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/mcp-sessions/{sid}/executions/{id}", get(session_paused))
        .route(
            "/mcp-sessions/{sid}/executions/{id}/resume",
            post(session_resume),
        )
}

/// The caller acting on a pause of session `sid`: the person, under the session's endpoint's
/// policy source. An unknown session is an unknown pause.
async fn session_caller(
    engine: &Engine,
    caller: Caller,
    sid: &str,
    id: &str,
) -> Result<Caller, ApiError> {
    let not_found = || {
        ApiError::from(executor_engine::EngineError::ExecutionNotFound {
            execution_id: id.to_owned(),
        })
    };
    let record = engine.agent_session(sid).await?.ok_or_else(not_found)?;
    let resource = Resource::parse(&record.resource).ok_or_else(not_found)?;
    Ok(resource.caller(caller))
}

#[utoipa::path(get, path = "/api/mcp-sessions/{sid}/executions/{id}", tag = "executions", summary = "A pending request of a pause made on an MCP session", description = "What the approval page shows for `/resume/<id>?mcp_session_id=<sid>`: the pause as the session's endpoint (the default one or a toolkit's) made it. Only the person whose execution it is sees it.", params(("sid" = String, Path, description = "The MCP session id"), ("id" = String, Path, description = "The execution id")), responses((status = 200, description = "The pending request", body = PausedExecution), (status = 404, description = "ExecutionNotFoundError: no such pause on that session", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn session_paused(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((sid, id)): Path<(String, String)>,
) -> ApiResult {
    let caller = session_caller(&engine, caller, &sid, &id).await?;
    let paused = engine.paused_execution(&caller, &id).await?;
    ok(json!({ "text": paused.text, "structured": paused.structured }))
}

#[utoipa::path(post, path = "/api/mcp-sessions/{sid}/executions/{id}/resume", tag = "executions", summary = "Answer a pause made on an MCP session", description = "Accept, decline or cancel, under the rules of the session's endpoint. The answer says only what was sent (`I've approved it`); the agent's `resume` call, waiting on its session, gets the result.", request_body = crate::wire::ResumeBody, params(("sid" = String, Path, description = "The MCP session id"), ("id" = String, Path, description = "The execution id")), responses((status = 200, description = "`{status: \"completed\", text, structured: {status: \"approved\"|\"denied\"|\"canceled\", executionId}, isError: false}`", body = Object), (status = 400, description = "HttpApiSchemaError: the body is not what the route takes", body = ErrorBody), (status = 404, description = "ExecutionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn session_resume(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((sid, id)): Path<(String, String)>,
    ApiJson(body): ApiJson<crate::wire::ResumeBody>,
) -> ApiResult {
    let action = body.action()?;
    let caller = session_caller(&engine, caller, &sid, &id).await?;
    // Runs the execution on to its next pause or its end; what it returns is the agent's.
    engine.resume(&caller, &id, action, body.content).await?;
    let (text, status) = match action {
        ResumeAction::Accept => ("I've approved it", "approved"),
        ResumeAction::Decline => ("I've denied it", "denied"),
        ResumeAction::Cancel => ("I've canceled it", "canceled"),
    };
    ok(json!({
        "status": "completed",
        "text": text,
        "structured": {"status": status, "executionId": id},
        "isError": false,
    }))
}
