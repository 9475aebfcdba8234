//! Health-check routes (spec §1.8, §3.3, §3.4): an integration's declared probe and its
//! candidates, checking a saved connection, and trying credentials before saving them.

use std::collections::{BTreeMap, HashMap};

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_core::Owner;
use executor_engine::Caller;
use executor_engine::{Engine, HealthCheckSpec, ValidateConnection};
use executor_store::ConnectionKey;
use serde::Deserialize;
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::ApiJson;
use crate::wire;

type ApiResult = Result<Response, ApiError>;

/// `ifStaleMs` is at most a day.
const MAX_IF_STALE_MS: i64 = 86_400_000;

pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route(
            "/integrations/{slug}/health-check",
            get(get_spec).put(put_spec),
        )
        .route(
            "/integrations/{slug}/health-check/candidates",
            get(candidates),
        )
        .route(
            "/connections/{owner}/{integration}/{name}/health",
            post(check_connection),
        )
        .route("/connections/validate", post(validate))
}

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::Engine(executor_engine::EngineError::Internal(e.to_string())))
}

fn owner(raw: &str) -> Result<Owner, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::schema(format!("owner must be \"org\" or \"user\", got {raw:?}")))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = HealthCheckBody)]
struct PutSpecBody {
    /// Required; `null` removes the probe.
    #[schema(value_type = Option<Object>)]
    spec: Option<HealthCheckSpec>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ValidateConnectionBody)]
struct ValidateBody {
    owner: String,
    integration: String,
    template: String,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    spec: Option<HealthCheckSpec>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    values: Option<BTreeMap<String, String>>,
    #[serde(default)]
    from: Option<wire::FromBody>,
}

#[utoipa::path(get, path = "/api/integrations/{slug}/health-check", tag = "health", summary = "Read an integration's health check", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "The health check, or null when none is set", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_spec(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let spec = engine.health_check_spec(&caller, &slug).await?;
    ok(to_json(&spec)?)
}

#[utoipa::path(put, path = "/api/integrations/{slug}/health-check", tag = "health", summary = "Set or remove an integration's health check", request_body = PutSpecBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn put_spec(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult {
    if body.get("spec").is_none() {
        return Err(ApiError::schema(
            "Expected {\"spec\": HealthCheckSpec | null}.",
        ));
    }
    let body: PutSpecBody =
        serde_json::from_value(body).map_err(|e| ApiError::schema(e.to_string()))?;
    engine
        .set_health_check_spec(&caller, &slug, body.spec)
        .await?;
    ok(json!({ "ok": true }))
}

#[utoipa::path(get, path = "/api/integrations/{slug}/health-check/candidates", tag = "health", summary = "Operations that could serve as a health check", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Vec<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn candidates(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let list = engine.health_check_candidates(&caller, &slug).await?;
    ok(to_json(&list)?)
}

#[utoipa::path(post, path = "/api/connections/{owner}/{integration}/{name}/health", tag = "health", summary = "Check a connection now", params(("owner" = String, Path, description = "`org` or `user`"), ("integration" = String, Path, description = "The integration's slug"), ("name" = String, Path, description = "The connection's name"), ("ifStaleMs" = Option<i64>, Query, description = "Answer the kept verdict when it is younger than this many ms")), responses((status = 200, description = "The verdict, also kept on the connection", body = HealthResult), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "ConnectionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn check_connection(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path((owner_raw, integration, name)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let if_stale_ms = match query.get("ifStaleMs").filter(|v| !v.is_empty()) {
        None => None,
        Some(raw) => match raw.parse::<i64>() {
            Ok(ms) if (0..=MAX_IF_STALE_MS).contains(&ms) => Some(ms),
            _ => {
                return Err(ApiError::schema(format!(
                    "ifStaleMs must be an integer between 0 and {MAX_IF_STALE_MS}, got {raw:?}"
                )));
            }
        },
    };
    let key = ConnectionKey {
        owner: owner(&owner_raw)?,
        integration,
        name,
    };
    let result = engine
        .check_connection_health(&caller, &key, if_stale_ms)
        .await?;
    ok(to_json(&result)?)
}

#[utoipa::path(post, path = "/api/connections/validate", tag = "health", summary = "Check unsaved credentials against the integration", request_body = ValidateBody, responses((status = 200, description = "The probe's answer with an unsaved credential", body = HealthResult), (status = 400, description = "HttpApiSchemaError, InvalidConnectionInputError", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 409, description = "CredentialProviderNotRegisteredError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn validate(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<ValidateBody>,
) -> ApiResult {
    let origin = wire::credential_origin(body.value, body.values, body.from)?;
    let result = engine
        .validate_connection(
            &caller,
            ValidateConnection {
                owner: owner(&body.owner)?,
                integration: body.integration,
                template: body.template,
                spec: body.spec,
                origin,
            },
        )
        .await?;
    ok(to_json(&result)?)
}
