//! OpenAPI plugin routes (spec §3.10): preview, add, read, configure, update and remove OpenAPI
//! integrations. Wire shapes are camelCase as the original's; failures are `_tag`ged errors.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_core::auth::AuthMethodInput;
use executor_engine::Caller;
use executor_engine::{AddOpenApiSpec, Engine, EngineError, OpenApiConfigView, OpenApiSpecSource};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::routes::ApiJson;

type ApiResult = Result<Response, ApiError>;

pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/openapi/preview", post(preview))
        .route("/openapi/specs", post(add_spec))
        .route(
            "/openapi/integrations/{slug}",
            get(get_integration).delete(remove_integration),
        )
        .route(
            "/openapi/integrations/{slug}/config",
            get(get_config).post(configure),
        )
        .route("/openapi/integrations/{slug}/spec", post(update_spec))
}

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

// ---- request bodies -------------------------------------------------------------------------

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OpenApiPreviewBody)]
struct PreviewBody {
    /// A URL or the spec's text (an add-style `{kind, …}` object is accepted too).
    spec: Value,
    #[serde(default)]
    spec_format: Option<String>,
    #[serde(default)]
    spec_overrides: Option<Value>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AddOpenApiSpecBody)]
struct AddSpecBody {
    spec: Value,
    #[serde(default)]
    slug: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    query_params: BTreeMap<String, String>,
    #[serde(default)]
    spec_format: Option<String>,
    /// Accepted and ignored (the original uses it to group presets in its UI).
    #[serde(default)]
    #[allow(dead_code)]
    family: Option<Value>,
    #[serde(default)]
    health_check: Option<Value>,
    #[serde(default)]
    authentication_template: Option<Vec<Value>>,
    #[serde(default)]
    spec_overrides: Option<Value>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OpenApiConfigBody)]
struct ConfigureBody {
    #[serde(default)]
    authentication_template: Option<Vec<Value>>,
    #[serde(default)]
    mode: Option<String>,
    /// Absent = unchanged; `null` or `""` = cleared.
    #[serde(default, deserialize_with = "present")]
    base_url: Option<Option<String>>,
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OpenApiSpecBody)]
struct UpdateSpecBody {
    #[serde(default)]
    spec: Option<Value>,
    #[serde(default)]
    spec_overrides: Option<Value>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `{kind:"url", url}` | `{kind:"blob", value}`, or a plain string (a URL or the text).
fn spec_source(value: &Value) -> Result<OpenApiSpecSource, ApiError> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Ok(OpenApiSpecSource::url_or_text(s)),
        Value::Object(o) => {
            let field = |name: &str| {
                o.get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_owned)
            };
            match o.get("kind").and_then(Value::as_str) {
                Some("url") => field("url").map(OpenApiSpecSource::Url).ok_or_else(|| {
                    ApiError::schema("spec.url is required when spec.kind is \"url\".")
                }),
                Some("blob") => field("value").map(OpenApiSpecSource::Text).ok_or_else(|| {
                    ApiError::schema("spec.value is required when spec.kind is \"blob\".")
                }),
                _ => Err(ApiError::schema(
                    "spec must be {\"kind\":\"url\",\"url\":…} or {\"kind\":\"blob\",\"value\":…}.",
                )),
            }
        }
        _ => Err(ApiError::schema(
            "spec must be {\"kind\":\"url\",\"url\":…} or {\"kind\":\"blob\",\"value\":…}.",
        )),
    }
}

/// Only plain OpenAPI / Swagger documents are read (no Google Discovery or Microsoft Graph
/// adapters).
fn check_format(format: Option<&str>) -> Result<(), ApiError> {
    match format {
        None | Some("" | "openapi" | "auto") => Ok(()),
        Some(other) => Err(EngineError::OpenApiParse {
            message: format!(
                "specFormat {other:?} is not supported: send an OpenAPI 3.x or Swagger 2.0 document."
            ),
        }
        .into()),
    }
}

fn auth_inputs(raw: Option<Vec<Value>>) -> Result<Option<Vec<AuthMethodInput>>, ApiError> {
    raw.map(|entries| crate::wire::auth_method_inputs(&entries))
        .transpose()
}

/// Operations that did not become tools: `[{operation, message}]`.
fn skipped<T: Serialize>(failures: &[T]) -> Value {
    serde_json::to_value(failures).unwrap_or_else(|_| json!([]))
}

// ---- handlers -------------------------------------------------------------------------------

#[utoipa::path(post, path = "/api/openapi/preview", tag = "openapi", summary = "Preview an OpenAPI spec before adding it", request_body = PreviewBody, responses((status = 200, description = "Title, version, operations, tags, servers, auth methods and health-check candidates", body = Object), (status = 400, description = "HttpApiSchemaError, OpenApiParseError, OpenApiExtractionError, OpenApiSpecOverrideError", body = ErrorBody), (status = 403, description = "OrgWriteDeniedError: on the team server, a member who is not an admin (the OAuth probe: of a URL that is not an MCP integration's)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn preview(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<PreviewBody>,
) -> ApiResult {
    check_format(body.spec_format.as_deref())?;
    let spec = match spec_source(&body.spec)? {
        OpenApiSpecSource::Url(u) => u,
        OpenApiSpecSource::Text(t) => t,
    };
    let found = engine
        .preview_openapi(&caller, &spec, body.spec_overrides)
        .await?;
    let mut out = match serde_json::to_value(&found.preview) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    };
    out.remove("failures");
    out.retain(|_, v| !v.is_null());
    out.insert("skipped".to_owned(), skipped(&found.skipped));
    out.insert(
        "healthCheckCandidates".to_owned(),
        serde_json::to_value(&found.health_check_candidates).unwrap_or_else(|_| json!([])),
    );
    ok(Value::Object(out))
}

#[utoipa::path(post, path = "/api/openapi/specs", tag = "openapi", summary = "Add an OpenAPI spec", request_body = AddSpecBody, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError, OpenApiParseError, OpenApiExtractionError, OpenApiSpecOverrideError", body = ErrorBody), (status = 409, description = "IntegrationAlreadyExistsError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn add_spec(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<AddSpecBody>,
) -> ApiResult {
    check_format(body.spec_format.as_deref())?;
    let spec = spec_source(&body.spec)?;
    let authentication_template = auth_inputs(body.authentication_template)?;
    let added = engine
        .add_openapi_spec(
            &caller,
            AddOpenApiSpec {
                spec,
                slug: body.slug,
                name: body.name,
                description: body.description,
                base_url: body.base_url,
                headers: body.headers,
                query_params: body.query_params,
                authentication_template,
                spec_overrides: body.spec_overrides,
                health_check: body.health_check,
            },
        )
        .await?;
    ok(json!({
        "slug": added.slug,
        "toolCount": added.tool_count,
        "skipped": skipped(&added.skipped),
    }))
}

#[utoipa::path(get, path = "/api/openapi/integrations/{slug}", tag = "openapi", summary = "Read an OpenAPI integration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK; null when the integration is of another kind", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let view = engine.get_openapi_integration(&caller, &slug).await?;
    ok(view.map_or(Value::Null, |v| {
        json!({
            "slug": v.slug,
            "description": v.description,
            "kind": v.kind,
            "canRemove": v.can_remove,
            "canRefresh": v.can_refresh,
        })
    }))
}

fn config_view(c: &OpenApiConfigView) -> Value {
    let mut body = Map::new();
    if let Some(u) = &c.spec_url {
        body.insert("specUrl".into(), json!(u));
    }
    if let Some(u) = &c.base_url {
        body.insert("baseUrl".into(), json!(u));
    }
    if !c.headers.is_empty() {
        body.insert("headers".into(), json!(c.headers));
    }
    if !c.query_params.is_empty() {
        body.insert("queryParams".into(), json!(c.query_params));
    }
    if let Some(o) = &c.spec_overrides {
        body.insert("specOverrides".into(), o.clone());
    }
    body.insert(
        "authenticationTemplate".into(),
        json!(c.authentication_template),
    );
    Value::Object(body)
}

#[utoipa::path(get, path = "/api/openapi/integrations/{slug}/config", tag = "openapi", summary = "Read an OpenAPI integration's configuration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK; null when the integration is of another kind", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_config(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let config = engine.get_openapi_config(&caller, &slug).await?;
    ok(config.as_ref().map_or(Value::Null, config_view))
}

#[utoipa::path(post, path = "/api/openapi/integrations/{slug}/config", tag = "openapi", summary = "Change an OpenAPI integration's authentication or base URL", request_body = ConfigureBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn configure(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<ConfigureBody>,
) -> ApiResult {
    let mode = crate::wire::auth_template_mode(body.mode.as_deref())?;
    let methods = auth_inputs(body.authentication_template)?;
    let stored = engine
        .configure_openapi(&caller, &slug, methods, mode, body.base_url)
        .await?;
    ok(json!({ "authenticationTemplate": stored }))
}

#[utoipa::path(post, path = "/api/openapi/integrations/{slug}/spec", tag = "openapi", summary = "Replace or re-fetch an OpenAPI integration's spec", request_body = UpdateSpecBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError, OpenApiParseError, OpenApiExtractionError", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn update_spec(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    raw: axum::body::Bytes,
) -> ApiResult {
    // An empty body means "re-fetch the stored URL".
    let body: UpdateSpecBody = if raw.iter().all(u8::is_ascii_whitespace) {
        UpdateSpecBody::default()
    } else {
        serde_json::from_slice(&raw).map_err(|e| ApiError::schema(e.to_string()))?
    };
    let spec = match &body.spec {
        None | Some(Value::Null) => None,
        Some(v) => Some(spec_source(v)?),
    };
    let updated = engine
        .update_openapi_spec(&caller, &slug, spec, body.spec_overrides)
        .await?;
    ok(json!({
        "slug": updated.slug,
        "toolCount": updated.tool_count,
        "addedTools": updated.added_tools,
        "removedTools": updated.removed_tools,
        "skipped": skipped(&updated.skipped),
    }))
}

#[utoipa::path(delete, path = "/api/openapi/integrations/{slug}", tag = "openapi", summary = "Remove an OpenAPI integration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 204, description = "Removed"), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 409, description = "IntegrationRemovalNotAllowedError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    engine.remove_openapi_integration(&caller, &slug).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
