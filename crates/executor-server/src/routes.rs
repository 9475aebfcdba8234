//! `/api` routes.

use std::collections::HashMap;

use axum::Extension;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_core::Owner;
use executor_engine::Caller;
use executor_engine::{ConnectionInput, Engine, ToolListFilter};
use executor_store::ConnectionKey;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tower_http::catch_panic::CatchPanicLayer;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use crate::error::ApiError;
use crate::wire;

type ApiResult = Result<Response, ApiError>;

/// The API (with `extra` routes under `/api`: the team server's) and the console.
pub(crate) fn router(engine: Engine, extra: Router<Engine>) -> Router {
    let api = Router::new()
        .route("/health", get(health))
        .route("/health/ready", get(readiness))
        .route("/openapi.json", get(crate::api_doc::openapi_json))
        .route("/docs", get(crate::api_doc::docs_page))
        .route("/server", get(server_info))
        .route("/integrations", get(list_integrations))
        .route(
            "/integrations/{slug}",
            get(get_integration)
                .patch(patch_integration)
                .delete(remove_integration),
        )
        .route(
            "/connections",
            get(list_connections).post(create_connection),
        )
        .route(
            "/connections/{owner}/{integration}/{name}",
            get(get_connection)
                .patch(patch_connection)
                .delete(remove_connection),
        )
        .route(
            "/connections/{owner}/{integration}/{name}/refresh",
            post(refresh_connection),
        )
        .route(
            "/connections/{owner}/{integration}/{name}/refresh/diff",
            post(refresh_connection_diff),
        )
        .route("/tool-changes", get(list_tool_changes))
        .route("/tool-changes/{id}/accept", post(accept_tool_change))
        .route("/policies", get(list_policies).post(create_policy))
        .route(
            "/policies/{id}",
            axum::routing::patch(update_policy).delete(remove_policy),
        )
        .route("/providers", get(list_providers))
        .route("/providers/{key}/items", get(provider_items))
        .route("/tools", get(list_tools))
        .route("/tools/schema", get(tool_schema))
        .route("/executions", get(list_executions).post(execute))
        .route("/executions/events", get(execution_events))
        .route("/executions/{id}", get(get_execution))
        .route("/executions/{id}/journal", get(execution_journal))
        .route("/executions/{id}/resume", post(resume_execution))
        .merge(crate::mcp_routes::router())
        .merge(crate::approval_routes::router())
        .merge(crate::graphql_routes::router())
        .merge(crate::openapi_routes::router())
        .merge(crate::health_routes::router())
        .merge(crate::oauth_routes::router())
        .merge(crate::toolkit_routes::router())
        .merge(extra)
        .fallback(not_found)
        .with_state(engine);
    Router::new()
        .nest("/api", api)
        .fallback(console)
        .layer(DefaultBodyLimit::max(crate::MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                let (status, body) = crate::error::internal("request handler panicked");
                (status, Json(body)).into_response()
            },
        ))
}

/// JSON body whose rejections are the spec's `HttpApiSchemaError` (or 413 when too large).
/// Every body of the API is a JSON object: serde's derived structs would also read an array
/// (`[]` as a struct of defaults), so the top level must be an object.
pub(crate) struct ApiJson<T>(pub(crate) T);

/// `T` read from a JSON object only.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
            .map(Object)
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<Object<T>>::from_request(req, state).await {
            Ok(Json(Object(value))) => Ok(ApiJson(value)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge)
            }
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::schema(
                "Expected a JSON body with content-type: application/json.",
            )),
            Err(rejection) => Err(ApiError::schema(rejection.body_text())),
        }
    }
}

pub(crate) fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

pub(crate) fn owner(raw: &str) -> Result<Owner, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::schema(format!("owner must be \"org\" or \"user\", got {raw:?}")))
}

/// Every path outside `/api` and `/mcp`: the web console (its shell is public and holds no data).
async fn console(request: Request) -> Response {
    executor_console::serve(request.method(), request.uri().path(), request.headers())
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found").into_response()
}

#[utoipa::path(get, path = "/api/health", tag = "meta", summary = "Whether the server is up", responses((status = 200, description = "`ok`", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)), security(()))]
async fn health() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}

/// Beyond the original: readiness, for load balancers and operators. `/api/health` says the
/// process is up; this says whether it can serve (its database answers).
#[utoipa::path(get, path = "/api/health/ready", tag = "meta", summary = "Whether the server can serve: its database answers", responses((status = 200, description = "Ready", body = ReadinessBody), (status = 503, description = "The database does not answer (`database: unavailable`); retry after the Retry-After header", body = ReadinessBody)), security(()))]
async fn readiness(State(engine): State<Engine>) -> Response {
    if engine.database_ready() {
        Json(json!({"database": "ok"})).into_response()
    } else {
        let mut response = (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"database": "unavailable"})),
        )
            .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, 2.into());
        response
    }
}

/// While the database does not answer, every request that would need it answers 503 at once
/// (it waited for a connection and then answered 500, issue #39). Health, readiness and the
/// console's files are served as ever.
pub(crate) async fn database_gate(
    State(engine): State<Engine>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let needs_database = (path.starts_with("/api/") || path == "/mcp" || path.starts_with("/mcp/"))
        && !path.starts_with("/api/health");
    if needs_database && !engine.database_ready() {
        return ApiError::Engine(executor_engine::EngineError::Unavailable {
            retry_after_secs: executor_engine::DATABASE_RETRY_AFTER_SECS,
        })
        .into_response();
    }
    next.run(request).await
}

// ---- integrations -----------------------------------------------------------------------

/// Beyond the original: the version this server runs and where it keeps its data.
#[utoipa::path(get, path = "/api/server", tag = "meta", summary = "This server's version and data directory", responses((status = 200, description = "OK", body = ServerInfoBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain")))]
async fn server_info(
    Extension(info): Extension<crate::ServerInfo>,
    identity: Option<Extension<executor_accounts::Identity>>,
) -> ApiResult {
    // On the team server the host's paths are the operator's business: members see none.
    let data_dir = match identity {
        Some(Extension(who)) if !who.role.is_admin() => None,
        _ => info.data_dir,
    };
    ok(json!({"version": env!("CARGO_PKG_VERSION"), "dataDir": data_dir}))
}

#[utoipa::path(get, path = "/api/integrations", tag = "integrations", summary = "List integrations", responses((status = 200, description = "OK", body = Vec<Integration>), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_integrations(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    let every_tool = ToolListFilter::default();
    let (list, tools, connections) = tokio::join!(
        engine.list_integrations(&caller),
        engine.list_tools(&caller, &every_tool),
        engine.list_connections(&caller, None, None),
    );
    let (list, tools, connections) = (list?, tools?, connections?);
    // Beyond the original: what the list shows per integration, so a page needs no other
    // request (a tool is counted once however many connections carry it).
    let mut names: HashMap<&str, std::collections::HashSet<&str>> = HashMap::new();
    for tool in &tools {
        names
            .entry(&tool.integration)
            .or_default()
            .insert(&tool.name);
    }
    let mut health: HashMap<&str, [u32; 3]> = HashMap::new();
    for c in &connections {
        let counts = health.entry(&c.integration).or_default();
        let status = c
            .last_health
            .as_ref()
            .and_then(|h| h.get("status"))
            .and_then(Value::as_str);
        match status {
            Some("healthy") => counts[0] += 1,
            Some("expired" | "degraded") => counts[1] += 1,
            _ => counts[2] += 1,
        }
    }
    ok(Value::Array(
        list.iter()
            .map(|view| {
                let mut body = wire::integration(view);
                body["toolCount"] = json!(names.get(view.slug.as_str()).map_or(0, |n| n.len()));
                let [healthy, failing, unchecked] =
                    health.get(view.slug.as_str()).copied().unwrap_or_default();
                body["connections"] =
                    json!({"healthy": healthy, "failing": failing, "unchecked": unchecked});
                body
            })
            .collect(),
    ))
}

#[utoipa::path(get, path = "/api/integrations/{slug}", tag = "integrations", summary = "Read an integration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Integration), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    ok(wire::integration(
        &engine.get_integration(&caller, &slug).await?,
    ))
}

#[utoipa::path(patch, path = "/api/integrations/{slug}", tag = "integrations", summary = "Rename or redescribe an integration", request_body = wire::PatchIntegrationBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Integration), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn patch_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<wire::PatchIntegrationBody>,
) -> ApiResult {
    let updated = engine
        .update_integration(&caller, &slug, body.name, body.description)
        .await?;
    ok(wire::integration(&updated))
}

#[utoipa::path(delete, path = "/api/integrations/{slug}", tag = "integrations", summary = "Remove an integration with its connections and tools", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Removed), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 409, description = "IntegrationRemovalNotAllowedError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    engine.remove_integration(&caller, &slug).await?;
    ok(json!({ "removed": true }))
}

// ---- credential providers ---------------------------------------------------------------

#[utoipa::path(get, path = "/api/providers", tag = "providers", summary = "List credential providers", responses((status = 200, description = "The keys of the credential providers this caller may use", body = Vec<String>), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_providers(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    ok(json!(engine.list_providers(&caller)))
}

/// `[{id, name}]`: names only, never values; empty for unknown or non-listable providers.
#[utoipa::path(get, path = "/api/providers/{key}/items", tag = "providers", params(("key" = String, Path, description = "The credential provider's key")), responses((status = 200, description = "Names only, never values", body = Vec<ProviderItem>), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn provider_items(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
) -> ApiResult {
    let items = engine.provider_items(&caller, &key).await?;
    ok(Value::Array(
        items
            .into_iter()
            .map(|item| json!({"id": item.id, "name": item.name}))
            .collect(),
    ))
}

// ---- connections ------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/connections", tag = "connections", summary = "List connections", params(("integration" = Option<String>, Query, description = "Only this integration's"), ("owner" = Option<String>, Query, description = "`org` or `user`")), responses((status = 200, description = "OK", body = Vec<Connection>), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_connections(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let owner = query.get("owner").map(|o| owner(o)).transpose()?;
    let list = engine
        .list_connections(&caller, query.get("integration").map(String::as_str), owner)
        .await?;
    ok(Value::Array(list.iter().map(wire::connection).collect()))
}

#[utoipa::path(post, path = "/api/connections", tag = "connections", summary = "Add a connection (credentials) to an integration", request_body = wire::CreateConnectionBody, responses((status = 200, description = "OK", body = Connection), (status = 400, description = "HttpApiSchemaError, InvalidConnectionInputError", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 409, description = "ConnectionAlreadyExistsError, CredentialProviderNotRegisteredError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn create_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<wire::CreateConnectionBody>,
) -> ApiResult {
    let owner = owner(&body.owner)?;
    let origin = wire::credential_origin(body.value, body.values, body.from)?;
    let created = engine
        .create_connection(
            &caller,
            ConnectionInput {
                owner,
                name: body.name,
                integration: body.integration,
                template: body.template,
                identity_label: body.identity_label,
                description: body.description,
                origin,
                replace: body.replace,
            },
        )
        .await?;
    ok(wire::connection(&created))
}

fn connection_key(
    owner_raw: &str,
    integration: String,
    name: String,
) -> Result<ConnectionKey, ApiError> {
    Ok(ConnectionKey {
        owner: owner(owner_raw)?,
        integration,
        name,
    })
}

#[utoipa::path(get, path = "/api/connections/{owner}/{integration}/{name}", tag = "connections", summary = "Read a connection", params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name")), responses((status = 200, description = "OK", body = Connection), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner, integration, name)): Path<(String, String, String)>,
) -> ApiResult {
    let key = connection_key(&owner, integration, name)?;
    ok(wire::connection(
        &engine.get_connection(&caller, &key).await?,
    ))
}

#[utoipa::path(patch, path = "/api/connections/{owner}/{integration}/{name}", tag = "connections", summary = "Change a connection's description or identity label", request_body = wire::PatchConnectionBody, params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name")), responses((status = 200, description = "OK", body = Connection), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn patch_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner, integration, name)): Path<(String, String, String)>,
    ApiJson(body): ApiJson<wire::PatchConnectionBody>,
) -> ApiResult {
    let key = connection_key(&owner, integration, name)?;
    let updated = engine
        .update_connection(&caller, &key, body.description, body.identity_label)
        .await?;
    ok(wire::connection(&updated))
}

#[utoipa::path(delete, path = "/api/connections/{owner}/{integration}/{name}", tag = "connections", summary = "Remove a connection", params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name")), responses((status = 200, description = "OK", body = Removed), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner, integration, name)): Path<(String, String, String)>,
) -> ApiResult {
    let key = connection_key(&owner, integration, name)?;
    engine.remove_connection(&caller, &key).await?;
    ok(json!({ "removed": true }))
}

#[utoipa::path(post, path = "/api/connections/{owner}/{integration}/{name}/refresh", tag = "connections", summary = "Fetch a connection's tools again", params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name")), responses((status = 200, description = "OK", body = Vec<Tool>), (status = 400, description = "HttpApiSchemaError, McpConnectionError, McpToolDiscoveryError, OpenApiParseError, GraphqlIntrospectionError", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn refresh_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner, integration, name)): Path<(String, String, String)>,
) -> ApiResult {
    let key = connection_key(&owner, integration, name)?;
    let tools = engine.refresh_connection(&caller, &key).await?;
    ok(Value::Array(
        tools.iter().map(wire::refreshed_tool).collect(),
    ))
}

#[utoipa::path(post, path = "/api/connections/{owner}/{integration}/{name}/refresh/diff", tag = "connections", summary = "Fetch a connection's tools again and say what changed", description = "Re-lists the tools from the server and compares each definition (name, description, schemas, annotations) with the stored one. Every added, removed or changed tool is recorded (`GET /api/tool-changes`); a changed tool whose annotations got more dangerous, or that a person had approved, pauses each call for a person until its change is accepted.", params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name")), responses((status = 200, description = "OK", body = RefreshDiff), (status = 400, description = "HttpApiSchemaError, McpConnectionError, McpToolDiscoveryError, OpenApiParseError, GraphqlIntrospectionError", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn refresh_connection_diff(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner, integration, name)): Path<(String, String, String)>,
) -> ApiResult {
    let key = connection_key(&owner, integration, name)?;
    let refreshed = engine.refresh_connection_diff(&caller, &key).await?;
    ok(wire::refresh_diff(&refreshed))
}

#[utoipa::path(get, path = "/api/tool-changes", tag = "tools", summary = "List recorded changes of tool definitions", description = "Newest first, at most 500. A change with `requiresAcceptance` and no `acceptedAt` makes each call of its tool pause for a person.", params(("integration" = Option<String>, Query, description = "Only this integration's"), ("owner" = Option<String>, Query, description = "`org` or `user`"), ("connection" = Option<String>, Query, description = "Only this connection's"), ("pending" = Option<bool>, Query, description = "`true`: only changes waiting for acceptance"), ("limit" = Option<u32>, Query, description = "At most this many (≤ 500)")), responses((status = 200, description = "OK", body = Vec<ToolChange>), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_tool_changes(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let bad = ApiError::schema;
    let flag = |name: &str| -> Result<bool, ApiError> {
        match query.get(name).map(String::as_str) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => Err(bad(format!("{name} must be true or false, got {other:?}."))),
        }
    };
    let filter = executor_store::ToolChangeFilter {
        id: None,
        integration: query.get("integration").cloned(),
        owner: query.get("owner").map(|o| owner(o)).transpose()?,
        connection: query.get("connection").cloned(),
        pending_only: flag("pending")?,
        limit: query
            .get("limit")
            .map(|l| {
                l.parse::<u32>()
                    .map_err(|_| bad(format!("limit must be a whole number, got {l:?}.")))
            })
            .transpose()?,
    };
    let changes = engine.list_tool_changes(&caller, &filter).await?;
    ok(Value::Array(
        changes.iter().map(wire::tool_change).collect(),
    ))
}

#[utoipa::path(post, path = "/api/tool-changes/{id}/accept", tag = "tools", summary = "Accept a changed tool definition", description = "A person accepts the tool as it is now: its calls stop pausing for this change, and a later change of this definition waits again. Records who accepted. On the team server an organisation connection's change takes an admin.", params(("id" = String, Path, description = "The change's id (`tch_…`)")), responses((status = 200, description = "OK", body = ToolChange), (status = 403, description = "OrgWriteDeniedError: a member who is not an admin", body = ErrorBody), (status = 404, description = "ToolChangeNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn accept_tool_change(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let accepted = engine.accept_tool_change(&caller, &id).await?;
    ok(wire::tool_change(&accepted))
}

// ---- tools ------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/tools", tag = "tools", summary = "List tools", params(("integration" = Option<String>, Query, description = "Only this integration's"), ("owner" = Option<String>, Query, description = "`org` or `user`"), ("connection" = Option<String>, Query, description = "Only this connection's"), ("query" = Option<String>, Query, description = "Words the name or description contains"), ("includeBlocked" = Option<bool>, Query, description = "`false` leaves out blocked tools"), ("includeAnnotations" = Option<bool>, Query, description = "`false` leaves out approval annotations")), responses((status = 200, description = "OK", body = Vec<Tool>), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_tools(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let filter = ToolListFilter {
        integration: query.get("integration").cloned().filter(|s| !s.is_empty()),
        owner: query.get("owner").map(|o| owner(o)).transpose()?,
        connection: query.get("connection").cloned().filter(|s| !s.is_empty()),
        query: query.get("query").cloned().filter(|s| !s.is_empty()),
        // The HTTP listing includes blocked tools unless told `includeBlocked=false`.
        exclude_blocked: query.get("includeBlocked").map(String::as_str) == Some("false"),
    };
    let include_annotations = query.get("includeAnnotations").map(String::as_str) != Some("false");
    let tools = engine.list_tools(&caller, &filter).await?;
    ok(Value::Array(
        tools
            .iter()
            .map(|t| wire::tool(t, include_annotations))
            .collect(),
    ))
}

#[utoipa::path(get, path = "/api/tools/schema", tag = "tools", summary = "A tool's schemas and TypeScript declarations", params(("address" = String, Query, description = "`tools.<integration>.<owner>.<connection>.<tool>`")), responses((status = 200, description = "OK", body = ToolSchema), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ToolNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn tool_schema(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let address = query
        .get("address")
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::schema("The address query parameter is required."))?;
    let schema = engine.tool_schema(&caller, address).await?;
    ok(wire::tool_schema(&schema))
}

// ---- policies ---------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/policies", tag = "policies", summary = "List tool policies in the order they apply", responses((status = 200, description = "OK", body = Vec<Policy>), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_policies(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    let list = engine.list_policies(&caller).await?;
    ok(Value::Array(list.iter().map(wire::policy).collect()))
}

#[utoipa::path(post, path = "/api/policies", tag = "policies", summary = "Add a tool policy", request_body = wire::CreatePolicyBody, responses((status = 200, description = "OK", body = Policy), (status = 400, description = "HttpApiSchemaError, InvalidPolicyError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn create_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<wire::CreatePolicyBody>,
) -> ApiResult {
    let owner = owner(&body.owner)?;
    let created = engine
        .create_policy(&caller, owner, &body.pattern, &body.action, body.position)
        .await?;
    ok(wire::policy(&created))
}

#[utoipa::path(patch, path = "/api/policies/{id}", tag = "policies", summary = "Change a policy's pattern, action or position", request_body = wire::UpdatePolicyBody, params(("id" = String, Path, description = "The id")), responses((status = 200, description = "OK", body = Policy), (status = 400, description = "HttpApiSchemaError, InvalidPolicyError", body = ErrorBody), (status = 404, description = "PolicyNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn update_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<wire::UpdatePolicyBody>,
) -> ApiResult {
    let owner = owner(&body.owner)?;
    let updated = engine
        .update_policy(
            &caller,
            &id,
            owner,
            body.pattern.as_deref(),
            body.action.as_deref(),
            body.position,
        )
        .await?;
    ok(wire::policy(&updated))
}

#[utoipa::path(delete, path = "/api/policies/{id}", tag = "policies", summary = "Remove a policy", request_body = wire::OwnerBody, params(("id" = String, Path, description = "The id")), responses((status = 200, description = "OK", body = Removed), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "PolicyNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_policy(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<wire::OwnerBody>,
) -> ApiResult {
    if !engine
        .remove_policy(&caller, owner(&body.owner)?, &id)
        .await?
    {
        return Err(executor_engine::EngineError::PolicyNotFound { id }.into());
    }
    ok(json!({ "removed": true }))
}

// ---- executions -------------------------------------------------------------------------

#[utoipa::path(post, path = "/api/executions", tag = "executions", summary = "Run code against the tools", request_body = wire::ExecuteBody, responses((status = 200, description = "OK", body = ExecutionOutcome), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 503, description = "ServerBusyError: too many executions; retry after the Retry-After header", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn execute(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<wire::ExecuteBody>,
) -> ApiResult {
    let (id, outcome) = engine
        .execute_identified(&caller, body.code, body.auto_approve)
        .await?;
    ok(wire::outcome_of(&id, &outcome))
}

#[utoipa::path(get, path = "/api/executions", tag = "executions", summary = "The execution history", params(("limit" = Option<u32>, Query, description = "At most this many (1–100, default 50)"), ("offset" = Option<u32>, Query, description = "Skip this many"), ("status" = Option<String>, Query, description = "running, paused, completed, failed or expired"), ("integration" = Option<String>, Query, description = "Only executions that called a tool of this integration")), responses((status = 200, description = "Newest first", body = Vec<ExecutionSummary>), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_executions(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let number = |key: &str, default: u32| -> Result<u32, ApiError> {
        match query.get(key).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(raw) => raw.parse().map_err(|_| {
                ApiError::schema(format!("{key} must be a non-negative integer, got {raw:?}"))
            }),
        }
    };
    let limit = number("limit", 50)?.clamp(1, executor_engine::MAX_HISTORY_PAGE);
    let offset = number("offset", 0)?;
    let filter = executor_engine::ExecutionFilter {
        status: match query.get("status").filter(|v| !v.is_empty()) {
            None => None,
            Some(raw) => Some(executor_engine::ExecutionStatus::parse(raw).ok_or_else(|| {
                ApiError::schema(format!(
                    "status must be one of running, paused, completed, failed, expired, got {raw:?}"
                ))
            })?),
        },
        integration: query.get("integration").filter(|v| !v.is_empty()).cloned(),
    };
    let list = engine
        .list_executions(&caller, &filter, limit, offset)
        .await?;
    ok(Value::Array(
        list.iter().map(wire::execution_summary).collect(),
    ))
}

#[utoipa::path(get, path = "/api/executions/{id}", tag = "executions", summary = "A paused execution's pending request", params(("id" = String, Path, description = "The id")), responses((status = 200, description = "The pending request of a paused execution", body = PausedExecution), (status = 404, description = "ExecutionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_execution(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let paused = engine.paused_execution(&caller, &id).await?;
    ok(json!({ "text": paused.text, "structured": paused.structured }))
}

/// Beyond the original: what was recorded of one execution (code, outcome, the journal of its
/// tool calls with redacted arguments), for the console's execution page.
#[utoipa::path(get, path = "/api/executions/{id}/journal", tag = "executions", params(("id" = String, Path, description = "The id")), responses((status = 200, description = "OK", body = ExecutionRecord), (status = 404, description = "ExecutionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn execution_journal(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult {
    let (record, calls) = engine.execution_record(&caller, &id).await?;
    ok(wire::execution_record(&record, &calls))
}

/// Beyond the original: server-sent events, one `execution` event (a history item) each time
/// one of the caller's executions starts, pauses, resumes or settles; `resync` when this
/// stream fell behind and the client should read the history again.
#[utoipa::path(get, path = "/api/executions/events", tag = "executions", responses((status = 200, description = "Server-sent events: `execution` (data: an ExecutionSummary) on each start, pause, resume and settle; `resync` when the stream fell behind", body = ExecutionSummary, content_type = "text/event-stream"), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn execution_events(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use executor_engine::ExecutionEvent;
    let watch = engine.watch_executions(&caller);
    let events = futures::stream::unfold(watch, |mut watch| async move {
        let event = match watch.next().await? {
            ExecutionEvent::Changed(summary) => Event::default()
                .event("execution")
                .data(wire::execution_summary(&summary).to_string()),
            ExecutionEvent::Missed => Event::default().event("resync").data("{}"),
        };
        Some((Ok::<_, std::convert::Infallible>(event), watch))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response()
}

#[utoipa::path(post, path = "/api/executions/{id}/resume", tag = "executions", summary = "Answer a paused execution: accept, decline or cancel", request_body = wire::ResumeBody, params(("id" = String, Path, description = "The id")), responses((status = 200, description = "OK", body = ExecutionOutcome), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ExecutionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn resume_execution(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<wire::ResumeBody>,
) -> ApiResult {
    let action = body.action()?;
    let outcome = engine.resume(&caller, &id, action, body.content).await?;
    ok(wire::outcome(&outcome))
}
