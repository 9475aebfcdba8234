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
    #[schema(required = false, nullable = false)]
    message: Option<String>,
    #[schema(rename = "traceId", required = false, nullable = false)]
    trace_id: Option<String>,
}

/// Who a row belongs to: the organisation (`org`, everyone) or one person (`user`).
#[derive(serde::Serialize, ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum Owner {
    Org,
    User,
}

#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum IntegrationKind {
    Mcp,
    Openapi,
    Graphql,
    #[schema(rename = "built-in")]
    BuiltIn,
}

#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum AuthKind {
    None,
    Oauth,
    Apikey,
}

#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum Carrier {
    Header,
    Query,
    Env,
}

#[derive(serde::Serialize, ToSchema)]
#[schema(rename_all = "snake_case")]
pub(crate) enum PolicyAction {
    Approve,
    RequireApproval,
    Block,
}

#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum ExecutionStatus {
    Running,
    Paused,
    Completed,
    Failed,
    Expired,
}

#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum OutcomeStatus {
    Completed,
    Paused,
}

#[derive(ToSchema)]
#[schema(as = ServerInfo, rename_all = "camelCase")]
pub(crate) struct ServerInfoBody {
    version: String,
    /// Where this server keeps its database, key and control files.
    #[schema(required = true)]
    data_dir: Option<String>,
}

#[derive(ToSchema)]
#[schema(as = Readiness)]
pub(crate) struct ReadinessBody {
    /// `ok`, or `unavailable` while the database does not answer (then the status is 503).
    database: String,
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
    #[schema(required = true)]
    description: Option<String>,
    kind: IntegrationKind,
    can_remove: bool,
    can_refresh: bool,
    auth_methods: Vec<AuthMethod>,
    /// The server URL or endpoint people recognise the integration by.
    #[schema(required = false, nullable = false)]
    display_url: Option<String>,
    /// In the list: how many distinct tools its connections carry.
    #[schema(required = false, nullable = false)]
    tool_count: Option<u32>,
    /// In the list: its connections by their last health check.
    #[schema(required = false, nullable = false)]
    connections: Option<ConnectionHealthCounts>,
}

#[derive(ToSchema)]
pub(crate) struct ConnectionHealthCounts {
    healthy: u32,
    /// Expired or degraded.
    failing: u32,
    /// Never checked, or of unknown health.
    unchecked: u32,
}

/// One way to connect an account to the integration.
#[derive(ToSchema)]
pub(crate) struct AuthMethod {
    id: String,
    label: String,
    kind: AuthKind,
    /// The `template` a connection made with this method names.
    template: String,
    #[schema(required = false, nullable = false)]
    placements: Option<Vec<Placement>>,
    /// MCP OAuth: where its endpoints are discovered.
    #[schema(required = false, nullable = false)]
    oauth: Option<OAuthDiscovery>,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct OAuthDiscovery {
    discovery_url: String,
    supports_dynamic_registration: bool,
}

/// A health check's verdict, as kept on the connection.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct HealthResult {
    /// `healthy`, `expired`, `degraded` or `unknown`.
    status: String,
    #[schema(required = false, nullable = false)]
    http_status: Option<u16>,
    #[schema(required = false, nullable = false)]
    identity: Option<String>,
    checked_at: i64,
    #[schema(required = false, nullable = false)]
    detail: Option<String>,
    /// Fields of the probe's response (credentials scrubbed), to pick an identity from.
    #[schema(required = false, nullable = false)]
    response_sample: Option<Vec<SampleField>>,
}

#[derive(ToSchema)]
pub(crate) struct SampleField {
    path: String,
    value: Value,
}

/// Where a credential goes on a request.
#[derive(ToSchema)]
pub(crate) struct Placement {
    carrier: Carrier,
    name: String,
    prefix: String,
    #[schema(required = false, nullable = false)]
    variable: Option<String>,
    #[schema(required = false, nullable = false)]
    literal: Option<String>,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Connection {
    owner: Owner,
    name: String,
    integration: String,
    template: String,
    #[schema(required = true)]
    provider: Option<String>,
    /// `tools.<integration>.<owner>.<name>`
    address: String,
    #[schema(required = true)]
    identity_label: Option<String>,
    /// Absent from the OAuth flow's projection.
    #[schema(required = false)]
    description: Option<String>,
    #[schema(required = true)]
    expires_at: Option<i64>,
    #[schema(required = true)]
    oauth_client: Option<String>,
    #[schema(required = true)]
    oauth_client_owner: Option<Owner>,
    #[schema(required = true)]
    oauth_scope: Option<String>,
    #[schema(rename = "missingOAuthScopes")]
    missing_oauth_scopes: Vec<String>,
    /// Absent from the OAuth flow's projection.
    #[schema(required = false)]
    last_health: Option<HealthResult>,
}

#[derive(serde::Serialize, ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Tool {
    address: String,
    owner: Owner,
    integration: String,
    connection: String,
    name: String,
    plugin_id: String,
    #[schema(required = true)]
    description: Option<String>,
    #[schema(rename = "static", required = false, nullable = false)]
    is_static: Option<bool>,
    #[schema(required = false, nullable = false)]
    requires_approval: Option<bool>,
    #[schema(required = false, nullable = false)]
    approval_description: Option<String>,
    #[schema(required = false, nullable = false)]
    may_elicit: Option<bool>,
}

/// A tool's schemas and their TypeScript.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolSchema {
    address: String,
    name: String,
    #[schema(required = true)]
    description: Option<String>,
    #[schema(required = false, nullable = false)]
    input_schema: Option<Value>,
    #[schema(required = false, nullable = false)]
    output_schema: Option<Value>,
    #[schema(required = false, nullable = false)]
    schema_definitions: Option<Value>,
    #[schema(required = false, nullable = false, rename = "inputTypeScript")]
    input_type_script: Option<String>,
    #[schema(rename = "outputTypeScript")]
    output_type_script: String,
    /// Named TypeScript types the declarations refer to.
    #[schema(rename = "typeScriptDefinitions")]
    type_script_definitions: std::collections::BTreeMap<String, String>,
}

#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Policy {
    id: String,
    owner: Owner,
    pattern: String,
    action: PolicyAction,
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
    status: OutcomeStatus,
    /// `POST /api/executions`, settled: the execution's id (its journal:
    /// `GET /api/executions/{id}/journal`); a paused one has it in `structured.executionId`.
    #[schema(required = false, nullable = false)]
    execution_id: Option<String>,
    text: String,
    structured: Value,
    #[schema(required = false, nullable = false)]
    is_error: Option<bool>,
    /// MCP content blocks the code emitted.
    #[schema(required = false, nullable = false)]
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
    status: ExecutionStatus,
    started_at: i64,
    tool_calls: i64,
    #[schema(required = false, nullable = false)]
    finished_at: Option<i64>,
    #[schema(required = false, nullable = false)]
    duration_ms: Option<i64>,
    #[schema(required = false, nullable = false)]
    is_error: Option<bool>,
}

/// One execution as recorded.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ExecutionRecord {
    id: String,
    status: ExecutionStatus,
    started_at: i64,
    tool_calls: i64,
    #[schema(required = false, nullable = false)]
    finished_at: Option<i64>,
    #[schema(required = false, nullable = false)]
    duration_ms: Option<i64>,
    #[schema(required = false, nullable = false)]
    is_error: Option<bool>,
    code: String,
    auto_approve: bool,
    /// `{text, structured, isError}` once settled.
    #[schema(required = false, nullable = false)]
    outcome: Option<Value>,
    #[schema(required = false, nullable = false)]
    expires_at: Option<i64>,
    /// What a person is asked, while paused.
    #[schema(required = false, nullable = false)]
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
    #[schema(required = false, nullable = false)]
    duration_ms: Option<i64>,
    /// `{resolve: value}` or `{reject: message}`; absent while in flight.
    #[schema(required = false, nullable = false)]
    outcome: Option<Value>,
    /// The person's answer when the call needed one.
    #[schema(required = false, nullable = false)]
    approval: Option<Value>,
}

#[derive(ToSchema)]
pub(crate) struct ProviderItem {
    id: String,
    name: String,
}

/// A named allow-list of tools, served as its own MCP endpoint `/mcp/toolkits/<slug>`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct Toolkit {
    /// `tk_…`
    id: String,
    owner: Owner,
    /// 1–63 of `[a-z0-9-]`; unique among the toolkits a caller sees.
    slug: String,
    name: String,
    created_at: i64,
    updated_at: i64,
    /// How many connection patterns it grants.
    connection_count: i64,
    policy_count: i64,
}

#[derive(ToSchema)]
pub(crate) struct ToolkitList {
    toolkits: Vec<Toolkit>,
}

/// A toolkit's rule: the first matching one (by position) decides a granted tool's calls.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolkitPolicy {
    /// `tkpol_…`
    id: String,
    toolkit_id: String,
    pattern: String,
    action: PolicyAction,
    position: String,
    created_at: i64,
    updated_at: i64,
}

#[derive(ToSchema)]
pub(crate) struct ToolkitPolicyList {
    policies: Vec<ToolkitPolicy>,
}

/// A pattern of the toolkit's allow-list: `<integration>.<owner>.<connection>.*`, or a static
/// prefix such as `executor.coreTools.*`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolkitConnection {
    /// `tkconn_…`
    id: String,
    toolkit_id: String,
    pattern: String,
    position: String,
    created_at: i64,
    updated_at: i64,
}

#[derive(ToSchema)]
pub(crate) struct ToolkitConnectionList {
    connections: Vec<ToolkitConnection>,
}

#[derive(serde::Serialize, ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum ToolkitDecisionKind {
    /// A toolkit policy matched.
    Policy,
    /// No toolkit policy matched: the tool's own default.
    Default,
}

/// What decides a tool's calls inside a toolkit.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct ToolkitDecision {
    kind: ToolkitDecisionKind,
    /// The policy's id, when one decided.
    #[schema(required = false, nullable = false)]
    id: Option<String>,
    #[schema(required = false, nullable = false)]
    pattern: Option<String>,
}

/// A tool a toolkit exposes: a [`Tool`] with the action its calls get there. (`Serialize`
/// only so that the schema can flatten `Tool`; nothing serialises it.)
#[derive(serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolkitTool {
    #[serde(flatten)]
    tool: Tool,
    /// `approve` or `require_approval` (blocked tools are not listed).
    action: PolicyAction,
    decided_by: ToolkitDecision,
}

#[derive(ToSchema)]
pub(crate) struct ToolkitToolList {
    tools: Vec<ToolkitTool>,
}

/// What a refresh saw change (`tool` names of the connection).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolDiff {
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<ChangedTool>,
}

/// A tool whose definition changed: which fields, and whether its calls now wait for a person.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ChangedTool {
    name: String,
    /// `description`, `inputSchema`, `outputSchema`, `annotations`.
    fields: Vec<String>,
    escalated: bool,
    requires_acceptance: bool,
    change_id: String,
}

/// A connection's tools after a refresh, and how they changed since the last listing.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct RefreshDiff {
    tools: Vec<Tool>,
    diff: ToolDiff,
}

/// A recorded change of a tool's definition between two listings of its connection.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct ToolChange {
    id: String,
    /// `tools.<integration>.<owner>.<connection>.<tool>`
    address: String,
    owner: Owner,
    integration: String,
    connection: String,
    tool: String,
    /// `added`, `removed` or `changed`.
    kind: String,
    fields: Vec<String>,
    /// `{name, description, inputSchema, outputSchema, annotations}`; null for an added tool.
    #[schema(required = true)]
    before: Option<Value>,
    /// Null for a removed tool.
    #[schema(required = true)]
    after: Option<Value>,
    #[schema(required = true)]
    before_fingerprint: Option<String>,
    #[schema(required = true)]
    after_fingerprint: Option<String>,
    escalated: bool,
    requires_acceptance: bool,
    /// Epoch milliseconds.
    detected_at: i64,
    #[schema(required = true)]
    accepted_at: Option<i64>,
    #[schema(required = true)]
    accepted_by: Option<String>,
}
