//! `/api/toolkits/…` routes (spec §3.12): toolkits, their policies and connection patterns, and
//! the tools a toolkit exposes. Every refusal is a `ToolkitError` with a sentence (400).

use axum::Extension;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, patch};
use executor_core::policy::Decision;
use executor_engine::{
    Caller, Engine, ToolkitEntryKind, ToolkitEntryView, ToolkitTool, ToolkitView,
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use crate::error::ApiError;
use crate::routes::{ApiJson, ok, owner};

type ApiResult = Result<Response, ApiError>;

/// Merged into the `/api` router.
pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/toolkits", get(list_toolkits).post(create_toolkit))
        .route(
            "/toolkits/{id}",
            get(get_toolkit)
                .patch(update_toolkit)
                .delete(remove_toolkit),
        )
        .route(
            "/toolkits/{id}/policies",
            get(list_policies).post(create_policy),
        )
        .route(
            "/toolkits/{id}/policies/{policyId}",
            patch(update_policy).delete(remove_policy),
        )
        .route(
            "/toolkits/{id}/connections",
            get(list_connections).post(create_connection),
        )
        .route(
            "/toolkits/{id}/connections/{connectionId}",
            delete(remove_connection),
        )
        .route("/toolkits/{id}/tools", get(toolkit_tools))
}

// ---- request bodies -------------------------------------------------------------------------

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateToolkitBody {
    /// `org` (everyone's) or `user` (yours).
    #[schema(example = "org")]
    owner: String,
    #[schema(example = "Support tools")]
    name: String,
    /// 1–63 of `[a-z0-9-]`, no leading or trailing hyphen; derived from the name when absent.
    #[serde(default)]
    slug: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UpdateToolkitBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    slug: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateToolkitPolicyBody {
    #[schema(example = "github.*.*.issues.*")]
    pattern: String,
    #[schema(example = "require_approval")]
    action: String,
    /// Fractional index; absent → above every current rule.
    #[serde(default)]
    position: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UpdateToolkitPolicyBody {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    position: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateToolkitConnectionBody {
    /// `<integration>.<owner>.<connection>.*`, or a static prefix such as `executor.coreTools.*`.
    #[schema(example = "github.org.main.*")]
    pattern: String,
    #[serde(default)]
    position: Option<String>,
}

// ---- answers --------------------------------------------------------------------------------

fn toolkit(view: &ToolkitView) -> Value {
    let t = &view.toolkit;
    json!({
        "id": t.id,
        "owner": t.owner.as_str(),
        "slug": t.slug,
        "name": t.name,
        "createdAt": t.created_at,
        "updatedAt": t.updated_at,
        "connectionCount": view.connection_count,
        "policyCount": view.policy_count,
    })
}

fn entry(e: &ToolkitEntryView) -> Value {
    let mut body = json!({
        "id": e.id,
        "toolkitId": e.toolkit_id,
        "pattern": e.pattern,
        "position": e.position,
        "createdAt": e.created_at,
        "updatedAt": e.updated_at,
    });
    if let Some(action) = e.action {
        body["action"] = json!(action.as_str());
    }
    body
}

fn toolkit_tool(t: &ToolkitTool) -> Value {
    let mut body = crate::wire::tool(&t.tool, true);
    body["action"] = json!(t.decision.action().as_str());
    body["decidedBy"] = match &t.decision {
        Decision::Rule {
            rule_id, pattern, ..
        } => json!({"kind": "policy", "id": rule_id, "pattern": pattern}),
        _ => json!({"kind": "default"}),
    };
    body
}

const POLICY: ToolkitEntryKind = ToolkitEntryKind::Policy;
const CONNECTION: ToolkitEntryKind = ToolkitEntryKind::Connection;

// ---- toolkits -------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/toolkits", tag = "toolkits", summary = "List toolkits (the organisation's first, then by name)", responses((status = 200, description = "OK", body = ToolkitList), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_toolkits(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    let list = engine.list_toolkits(&caller).await?;
    ok(json!({ "toolkits": list.iter().map(toolkit).collect::<Vec<_>>() }))
}

#[utoipa::path(post, path = "/api/toolkits", tag = "toolkits", summary = "Create a toolkit", request_body = CreateToolkitBody, responses((status = 200, description = "OK", body = Toolkit), (status = 400, description = "HttpApiSchemaError, ToolkitError (name required, bad or taken slug)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn create_toolkit(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<CreateToolkitBody>,
) -> ApiResult {
    let owner = owner(&body.owner)?;
    let created = engine
        .create_toolkit(&caller, owner, &body.name, body.slug.as_deref())
        .await?;
    ok(toolkit(&created))
}

#[utoipa::path(get, path = "/api/toolkits/{id}", tag = "toolkits", summary = "One toolkit", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = Toolkit), (status = 400, description = "ToolkitError: Toolkit not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_toolkit(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    ok(toolkit(&engine.get_toolkit(&caller, &id).await?))
}

#[utoipa::path(patch, path = "/api/toolkits/{id}", tag = "toolkits", summary = "Rename a toolkit or change its slug", request_body = UpdateToolkitBody, params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = Toolkit), (status = 400, description = "HttpApiSchemaError, ToolkitError (not found, bad or taken slug)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn update_toolkit(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateToolkitBody>,
) -> ApiResult {
    let updated = engine
        .update_toolkit(&caller, &id, body.name.as_deref(), body.slug.as_deref())
        .await?;
    ok(toolkit(&updated))
}

#[utoipa::path(delete, path = "/api/toolkits/{id}", tag = "toolkits", summary = "Remove a toolkit and its rules (its connections and integrations stay)", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = Removed), (status = 400, description = "ToolkitError: Toolkit not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_toolkit(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    engine.remove_toolkit(&caller, &id).await?;
    ok(json!({ "removed": true }))
}

#[utoipa::path(get, path = "/api/toolkits/{id}/tools", tag = "toolkits", summary = "The tools a toolkit exposes, and what decides each", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = ToolkitToolList), (status = 400, description = "ToolkitError: Toolkit not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn toolkit_tools(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let tools = engine.toolkit_tools(&caller, &id).await?;
    ok(json!({ "tools": tools.iter().map(toolkit_tool).collect::<Vec<_>>() }))
}

// ---- policies -------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/toolkits/{id}/policies", tag = "toolkits", summary = "A toolkit's policies, in the order they apply", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = ToolkitPolicyList), (status = 400, description = "ToolkitError: Toolkit not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_policies(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let list = engine.list_toolkit_entries(&caller, &id, POLICY).await?;
    ok(json!({ "policies": list.iter().map(entry).collect::<Vec<_>>() }))
}

#[utoipa::path(post, path = "/api/toolkits/{id}/policies", tag = "toolkits", summary = "Add a toolkit policy (above the others unless a position is given)", request_body = CreateToolkitPolicyBody, params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = ToolkitPolicy), (status = 400, description = "HttpApiSchemaError, ToolkitError (not found, invalid pattern or action)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn create_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CreateToolkitPolicyBody>,
) -> ApiResult {
    let created = engine
        .add_toolkit_policy(&caller, &id, &body.pattern, &body.action, body.position)
        .await?;
    ok(entry(&created))
}

#[utoipa::path(patch, path = "/api/toolkits/{id}/policies/{policyId}", tag = "toolkits", summary = "Change a toolkit policy", request_body = UpdateToolkitPolicyBody, params(("id" = String, Path, description = "The toolkit's id (`tk_…`)"), ("policyId" = String, Path, description = "The policy's id (`tkpol_…`)")), responses((status = 200, description = "OK", body = ToolkitPolicy), (status = 400, description = "HttpApiSchemaError, ToolkitError (not found, invalid pattern or action)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn update_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((id, policy_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<UpdateToolkitPolicyBody>,
) -> ApiResult {
    let updated = engine
        .update_toolkit_policy(
            &caller,
            &id,
            &policy_id,
            body.pattern.as_deref(),
            body.action.as_deref(),
            body.position,
        )
        .await?;
    ok(entry(&updated))
}

#[utoipa::path(delete, path = "/api/toolkits/{id}/policies/{policyId}", tag = "toolkits", summary = "Remove a toolkit policy", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)"), ("policyId" = String, Path, description = "The policy's id (`tkpol_…`)")), responses((status = 200, description = "OK", body = Removed), (status = 400, description = "ToolkitError: Toolkit not found. / Toolkit policy not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((id, policy_id)): Path<(String, String)>,
) -> ApiResult {
    engine
        .remove_toolkit_entry(&caller, &id, POLICY, &policy_id)
        .await?;
    ok(json!({ "removed": true }))
}

// ---- connections ----------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/toolkits/{id}/connections", tag = "toolkits", summary = "A toolkit's connection patterns (what it grants)", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = ToolkitConnectionList), (status = 400, description = "ToolkitError: Toolkit not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_connections(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let list = engine
        .list_toolkit_entries(&caller, &id, CONNECTION)
        .await?;
    ok(json!({ "connections": list.iter().map(entry).collect::<Vec<_>>() }))
}

#[utoipa::path(post, path = "/api/toolkits/{id}/connections", tag = "toolkits", summary = "Grant a connection (a pattern it already has answers the existing row)", request_body = CreateToolkitConnectionBody, params(("id" = String, Path, description = "The toolkit's id (`tk_…`)")), responses((status = 200, description = "OK", body = ToolkitConnection), (status = 400, description = "HttpApiSchemaError, ToolkitError (not found, invalid pattern)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn create_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CreateToolkitConnectionBody>,
) -> ApiResult {
    let created = engine
        .add_toolkit_connection(&caller, &id, &body.pattern, body.position)
        .await?;
    ok(entry(&created))
}

#[utoipa::path(delete, path = "/api/toolkits/{id}/connections/{connectionId}", tag = "toolkits", summary = "Remove a connection pattern from a toolkit (the connection itself stays)", params(("id" = String, Path, description = "The toolkit's id (`tk_…`)"), ("connectionId" = String, Path, description = "The entry's id (`tkconn_…`)")), responses((status = 200, description = "OK", body = Removed), (status = 400, description = "ToolkitError: Toolkit not found. / Toolkit connection not found.", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((id, connection_id)): Path<(String, String)>,
) -> ApiResult {
    engine
        .remove_toolkit_entry(&caller, &id, CONNECTION, &connection_id)
        .await?;
    ok(json!({ "removed": true }))
}
