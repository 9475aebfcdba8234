//! `/api/mcp/…` routes (spec §3.9): probe an endpoint, add a remote or stdio server, read it,
//! replace its config or its auth methods, remove it. Wire shapes are camelCase; bad payloads
//! are `HttpApiSchemaError`s, failures to reach a server `McpConnectionError`s.

use std::collections::BTreeMap;

use axum::Extension;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use executor_engine::Caller;
use executor_engine::{
    AddMcpServer, AddStdioMcpServer, Engine, McpAuthShorthand, McpServerView, ProbeView,
};
use serde::Deserialize;
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::{ApiJson, ok};
use crate::wire::{auth_method_inputs, auth_template_mode};

type ApiResult = Result<Response, ApiError>;

/// Merged into the `/api` router.
pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/mcp/probe", post(probe_mcp))
        .route("/mcp/servers", post(add_mcp_server))
        .route(
            "/mcp/servers/{slug}",
            get(get_mcp_server).delete(remove_mcp_server),
        )
        .route("/mcp/servers/{slug}/config", post(set_config))
        .route("/mcp/servers/{slug}/auth", post(set_auth))
}

// ---- request bodies -------------------------------------------------------------------------

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = McpProbeBody)]
struct ProbeBody {
    endpoint: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    query_params: BTreeMap<String, String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AddMcpServerBody)]
struct AddServerBody {
    #[serde(default)]
    transport: Option<String>,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    remote_transport: Option<String>,
    #[serde(default)]
    slug: Option<String>,
    #[serde(default)]
    query_params: BTreeMap<String, String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    /// `McpAuthMethodInput[]`, read by [`auth_method_inputs`].
    authentication_template: Option<Vec<Value>>,
    #[serde(default)]
    auth: Option<AuthShorthandBody>,
    // stdio
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env_vars: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[schema(as = McpAuthShorthand)]
enum AuthShorthandBody {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "header", rename_all = "camelCase")]
    Header {
        header_name: String,
        #[serde(default)]
        prefix: Option<String>,
    },
    #[serde(rename = "oauth2")]
    Oauth2,
}

#[derive(Deserialize, ToSchema)]
#[schema(as = McpConfigBody)]
struct SetConfigBody {
    /// `McpIntegrationConfig`: read and checked by the engine.
    config: Value,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = McpAuthBody)]
struct SetAuthBody {
    authentication_template: Vec<Value>,
    #[serde(default)]
    mode: Option<String>,
}

// ---- response shapes ------------------------------------------------------------------------

fn server_json(v: &McpServerView) -> Value {
    json!({
        "slug": v.slug,
        "description": v.description,
        "kind": v.kind,
        "canRemove": v.can_remove,
        "canRefresh": v.can_refresh,
        "config": v.config,
    })
}

fn probe_json(p: &ProbeView) -> Value {
    let mut body = json!({
        "connected": p.connected,
        "requiresAuthentication": p.requires_authentication,
        "requiresOAuth": p.requires_oauth,
        "supportsDynamicRegistration": p.supports_dynamic_registration,
        "name": p.name,
        "slug": p.slug,
        "toolCount": p.tool_count,
    });
    if let Some(s) = &p.server_name {
        body["serverName"] = json!(s);
    }
    if let Some(s) = &p.instructions {
        body["instructions"] = json!(s);
    }
    body
}

// ---- handlers -------------------------------------------------------------------------------

#[utoipa::path(post, path = "/api/mcp/probe", tag = "mcp", summary = "Probe an MCP server before adding it", request_body = ProbeBody, responses((status = 200, description = "What the server says of itself: name, tools, whether it needs OAuth or a header", body = Object), (status = 400, description = "HttpApiSchemaError, McpConnectionError", body = ErrorBody), (status = 403, description = "OrgWriteDeniedError: on the team server, a member who is not an admin (the OAuth probe: of a URL that is not an MCP integration's)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn probe_mcp(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<ProbeBody>,
) -> ApiResult {
    let probe = engine
        .probe_mcp(
            &caller,
            body.endpoint.trim(),
            body.headers,
            body.query_params,
        )
        .await?;
    ok(probe_json(&probe))
}

#[utoipa::path(post, path = "/api/mcp/servers", tag = "mcp", summary = "Add an MCP server (remote or stdio)", request_body = AddServerBody, responses((status = 200, description = "OK", body = Integration), (status = 400, description = "HttpApiSchemaError, McpConnectionError, McpToolDiscoveryError", body = ErrorBody), (status = 409, description = "IntegrationAlreadyExistsError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn add_mcp_server(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<AddServerBody>,
) -> ApiResult {
    match body.transport.as_deref() {
        None | Some("remote") => {}
        // Local builds allow stdio servers (the spec's `dangerouslyAllowStdioMCP` is on).
        Some("stdio") => {
            let command = body
                .command
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| ApiError::schema("A stdio MCP server needs a command."))?;
            let slug = engine
                .add_stdio_mcp_server(
                    &caller,
                    AddStdioMcpServer {
                        name: body.name,
                        description: body.description,
                        command,
                        args: body.args,
                        env_vars: body.env_vars,
                        env: body.env,
                        cwd: body.cwd,
                        slug: body.slug,
                    },
                )
                .await?;
            return ok(json!({ "slug": slug }));
        }
        Some(other) => {
            return Err(ApiError::schema(format!(
                "transport must be \"remote\" or \"stdio\", got {other:?}"
            )));
        }
    }
    let endpoint = body
        .endpoint
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty())
        .ok_or_else(|| ApiError::schema("A remote MCP server needs an endpoint."))?;
    let remote_transport = match body.remote_transport.as_deref() {
        None => executor_mcp::RemoteTransport::Auto,
        Some(raw) => raw.parse().map_err(|_| {
            ApiError::schema(format!(
                "remoteTransport must be \"streamable-http\", \"sse\" or \"auto\", got {raw:?}"
            ))
        })?,
    };
    let auth = body.auth.map(|a| match a {
        AuthShorthandBody::None => McpAuthShorthand::None,
        AuthShorthandBody::Header {
            header_name,
            prefix,
        } => McpAuthShorthand::Header {
            header_name,
            prefix,
        },
        AuthShorthandBody::Oauth2 => McpAuthShorthand::Oauth2,
    });
    let slug = engine
        .add_mcp_server(
            &caller,
            AddMcpServer {
                name: body.name,
                description: body.description,
                endpoint,
                remote_transport,
                slug: body.slug,
                query_params: body.query_params,
                headers: body.headers,
                authentication_template: body
                    .authentication_template
                    .as_deref()
                    .map(auth_method_inputs)
                    .transpose()?,
                auth,
            },
        )
        .await?;
    ok(json!({ "slug": slug }))
}

#[utoipa::path(get, path = "/api/mcp/servers/{slug}", tag = "mcp", summary = "Read an MCP server's configuration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK; null when the integration is of another kind", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_mcp_server(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let server = engine.get_mcp_server(&caller, &slug).await?;
    ok(server.as_ref().map(server_json).unwrap_or(Value::Null))
}

#[utoipa::path(delete, path = "/api/mcp/servers/{slug}", tag = "mcp", summary = "Remove an MCP server", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Removed), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 409, description = "IntegrationRemovalNotAllowedError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_mcp_server(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    engine.remove_mcp_server(&caller, &slug).await?;
    ok(json!({ "removed": true }))
}

#[utoipa::path(post, path = "/api/mcp/servers/{slug}/config", tag = "mcp", summary = "Replace an MCP server's configuration", request_body = SetConfigBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn set_config(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<SetConfigBody>,
) -> ApiResult {
    let config = engine.set_mcp_config(&caller, &slug, &body.config).await?;
    ok(json!({ "config": config }))
}

#[utoipa::path(post, path = "/api/mcp/servers/{slug}/auth", tag = "mcp", summary = "Change an MCP server's authentication methods", request_body = SetAuthBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Integration), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn set_auth(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<SetAuthBody>,
) -> ApiResult {
    let mode = auth_template_mode(body.mode.as_deref())?;
    let methods = auth_method_inputs(&body.authentication_template)?;
    let stored = engine.set_mcp_auth(&caller, &slug, methods, mode).await?;
    ok(json!({ "authenticationTemplate": stored }))
}
