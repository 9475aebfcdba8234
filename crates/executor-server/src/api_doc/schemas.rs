//! The shapes the `/api` routes answer, for the OpenAPI document. The handlers build these
//! bodies in `wire`; schemathesis (CI) checks every answer against these schemas, and the unit
//! tests in `api_doc` check the builders' output against them too.

#![allow(dead_code)] // the fields are read by the schema derive only

use serde_json::Value;
use utoipa::ToSchema;

/// Every error: `_tag` names it (each route's responses list the tags it can answer); other
/// fields depend on the tag. A 500 carries a `traceId` to find it in the server log.
#[derive(ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody {
    #[schema(rename = "_tag", example = "IntegrationNotFoundError")]
    tag: String,
    #[schema(required = false)]
    message: Option<String>,
    #[schema(rename = "traceId", required = false)]
    trace_id: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct Removed {
    removed: bool,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Integration {
    slug: String,
    name: String,
    description: Option<String>,
    /// `mcp`, `openapi`, `graphql` or `builtin`.
    kind: String,
    can_remove: bool,
    can_refresh: bool,
    auth_methods: Vec<AuthMethod>,
    /// The server URL or endpoint people recognise the integration by.
    #[schema(required = false)]
    display_url: Option<String>,
}

/// One way to connect an account to the integration.
#[derive(ToSchema)]
pub(crate) struct AuthMethod {
    id: String,
    label: String,
    /// `none`, `oauth` or `apikey`.
    kind: String,
    /// The `template` a connection made with this method names.
    template: String,
    #[schema(required = false)]
    placements: Option<Vec<Placement>>,
    /// MCP OAuth: where its endpoints are discovered.
    #[schema(required = false)]
    oauth: Option<Value>,
}

/// Where a credential goes on a request.
#[derive(ToSchema)]
pub(crate) struct Placement {
    /// `header`, `query` or `env`.
    carrier: String,
    name: String,
    prefix: String,
    #[schema(required = false)]
    variable: Option<String>,
    #[schema(required = false)]
    literal: Option<String>,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Connection {
    /// `org` or `user`.
    owner: String,
    name: String,
    integration: String,
    template: String,
    provider: Option<String>,
    /// `tools.<integration>.<owner>.<name>`
    address: String,
    identity_label: Option<String>,
    #[schema(required = false)]
    description: Option<String>,
    expires_at: Option<i64>,
    oauth_client: Option<String>,
    oauth_client_owner: Option<String>,
    oauth_scope: Option<String>,
    #[schema(rename = "missingOAuthScopes")]
    missing_oauth_scopes: Vec<String>,
    #[schema(required = false)]
    last_health: Option<Value>,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Tool {
    address: String,
    owner: String,
    integration: String,
    connection: String,
    name: String,
    plugin_id: String,
    description: Option<String>,
    #[schema(rename = "static", required = false)]
    is_static: Option<bool>,
    #[schema(required = false)]
    requires_approval: Option<bool>,
    #[schema(required = false)]
    approval_description: Option<String>,
    #[schema(required = false)]
    may_elicit: Option<bool>,
}

/// A tool's schemas and their TypeScript.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolSchema {
    address: String,
    name: String,
    description: Option<String>,
    #[schema(required = false)]
    input_schema: Option<Value>,
    #[schema(required = false)]
    output_schema: Option<Value>,
    #[schema(required = false)]
    schema_definitions: Option<Value>,
    #[schema(required = false, rename = "inputTypeScript")]
    input_type_script: Option<String>,
    #[schema(rename = "outputTypeScript")]
    output_type_script: String,
    #[schema(rename = "typeScriptDefinitions")]
    type_script_definitions: Value,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Policy {
    id: String,
    owner: String,
    pattern: String,
    /// `approve`, `require_approval` or `block`.
    action: String,
    /// Fractional index: rules of one owner apply in this order.
    position: String,
    created_at: i64,
    updated_at: i64,
    /// How many known tools the pattern matches.
    matches: i64,
    author: String,
}

/// What `POST /api/executions` and a resume answer.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ExecutionOutcome {
    /// `completed` or `paused`.
    status: String,
    text: String,
    structured: Value,
    #[schema(required = false)]
    is_error: Option<bool>,
    /// MCP content blocks the code emitted.
    #[schema(required = false)]
    content: Option<Vec<Value>>,
}

/// A paused execution's pending request.
#[derive(ToSchema)]
pub(crate) struct PausedExecution {
    text: String,
    structured: Value,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ExecutionSummary {
    id: String,
    /// `running`, `paused`, `completed`, `failed` or `expired`.
    status: String,
    started_at: i64,
    tool_calls: i64,
    #[schema(required = false)]
    finished_at: Option<i64>,
    #[schema(required = false)]
    duration_ms: Option<i64>,
    #[schema(required = false)]
    is_error: Option<bool>,
}

/// One execution as recorded.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ExecutionRecord {
    id: String,
    status: String,
    started_at: i64,
    tool_calls: i64,
    #[schema(required = false)]
    finished_at: Option<i64>,
    #[schema(required = false)]
    duration_ms: Option<i64>,
    #[schema(required = false)]
    is_error: Option<bool>,
    code: String,
    auto_approve: bool,
    /// `{text, structured, isError}` once settled.
    #[schema(required = false)]
    outcome: Option<Value>,
    #[schema(required = false)]
    expires_at: Option<i64>,
    /// What a person is asked, while paused.
    #[schema(required = false)]
    pending: Option<Value>,
    calls: Vec<ExecutionCall>,
}

/// One tool call of an execution, arguments redacted.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ExecutionCall {
    seq: i64,
    path: String,
    args: Value,
    started_at: i64,
    #[schema(required = false)]
    duration_ms: Option<i64>,
    /// `{resolve: value}` or `{reject: message}`; absent while in flight.
    #[schema(required = false)]
    outcome: Option<Value>,
    /// The person's answer when the call needed one.
    #[schema(required = false)]
    approval: Option<Value>,
}

#[derive(ToSchema)]
pub(crate) struct ProviderItem {
    id: String,
    name: String,
}
