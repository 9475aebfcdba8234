//! `/api/graphql/…` routes (spec §3.11): add a GraphQL endpoint, read it and its config, set its
//! auth methods. Wire shapes are camelCase; bad payloads are `HttpApiSchemaError`s.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_core::auth::AuthMethodInput;
use executor_engine::Caller;
use executor_engine::{AddGraphqlIntegration, Engine, GraphqlConfigView, GraphqlIntegrationView};
use serde::Deserialize;
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::ApiJson;

type ApiResult = Result<Response, ApiError>;

/// Merged into the `/api` router.
pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/graphql/integrations", post(add_integration))
        .route("/graphql/integrations/{slug}", get(get_integration))
        .route(
            "/graphql/integrations/{slug}/config",
            get(get_config).post(set_config),
        )
}

// ---- request bodies -------------------------------------------------------------------------

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AddGraphqlBody)]
struct AddBody {
    endpoint: String,
    #[serde(default)]
    slug: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    /// An introspection result as JSON, or as JSON text.
    #[serde(default)]
    introspection_json: Option<Value>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    query_params: BTreeMap<String, String>,
    #[serde(default)]
    authentication_template: Option<Value>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = GraphqlConfigBody)]
struct SetConfigBody {
    authentication_template: Value,
    #[serde(default)]
    mode: Option<String>,
}

/// `authenticationTemplate`: an array of methods (a single method object is accepted too), in
/// the input dialect or the stored form (spec §1.3).
fn auth_inputs(value: Option<&Value>) -> Result<Vec<AuthMethodInput>, ApiError> {
    let items: Vec<&Value> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        Some(_) => {
            return Err(ApiError::schema(
                "authenticationTemplate must be an array of auth methods.",
            ));
        }
    };
    crate::wire::auth_method_inputs(items)
}

// ---- response shapes ------------------------------------------------------------------------

fn config(view: &GraphqlConfigView) -> Value {
    let mut body = json!({
        "endpoint": view.endpoint,
        "name": view.name,
        "authenticationTemplate": view.authentication_template,
    });
    if !view.headers.is_empty() {
        body["headers"] = json!(view.headers);
    }
    if !view.query_params.is_empty() {
        body["queryParams"] = json!(view.query_params);
    }
    body
}

fn integration(view: &GraphqlIntegrationView) -> Value {
    json!({
        "slug": view.slug,
        "name": view.name,
        "description": view.description,
        "kind": view.kind,
        "canRemove": view.can_remove,
        "canRefresh": view.can_refresh,
        "hasSchema": view.has_schema,
        "schemaSupplied": view.schema_supplied,
        "config": config(&view.config),
    })
}

// ---- handlers -------------------------------------------------------------------------------

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

#[utoipa::path(post, path = "/api/graphql/integrations", tag = "graphql", summary = "Add a GraphQL endpoint", request_body = AddBody, responses((status = 200, description = "OK", body = Integration), (status = 400, description = "HttpApiSchemaError, GraphqlIntrospectionError, GraphqlExtractionError", body = ErrorBody), (status = 409, description = "IntegrationAlreadyExistsError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn add_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<AddBody>,
) -> ApiResult {
    if body.endpoint.trim().is_empty() {
        return Err(ApiError::schema("A GraphQL integration needs an endpoint."));
    }
    let authentication_template = auth_inputs(body.authentication_template.as_ref())?;
    let added = engine
        .add_graphql_integration(
            &caller,
            AddGraphqlIntegration {
                endpoint: body.endpoint,
                slug: body.slug,
                name: body.name,
                description: body.description,
                introspection_json: body.introspection_json,
                headers: body.headers,
                query_params: body.query_params,
                authentication_template,
            },
        )
        .await?;
    ok(json!({ "slug": added.slug, "name": added.name }))
}

#[utoipa::path(get, path = "/api/graphql/integrations/{slug}", tag = "graphql", summary = "Read a GraphQL integration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK; null when the integration is of another kind", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_integration(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let view = engine.get_graphql_integration(&caller, &slug).await?;
    ok(view.as_ref().map(integration).unwrap_or(Value::Null))
}

#[utoipa::path(get, path = "/api/graphql/integrations/{slug}/config", tag = "graphql", summary = "Read a GraphQL integration's configuration", params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK; null when the integration is of another kind", body = Option<Object>), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn get_config(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
) -> ApiResult {
    let view = engine.get_graphql_config(&caller, &slug).await?;
    ok(view.as_ref().map(config).unwrap_or(Value::Null))
}

#[utoipa::path(post, path = "/api/graphql/integrations/{slug}/config", tag = "graphql", summary = "Change a GraphQL integration's authentication methods", request_body = SetConfigBody, params(("slug" = String, Path, description = "The integration's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn set_config(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Path(slug): Path<String>,
    ApiJson(body): ApiJson<SetConfigBody>,
) -> ApiResult {
    let replace = match body.mode.as_deref() {
        None | Some("merge") => false,
        Some("replace") => true,
        Some(other) => {
            return Err(ApiError::schema(format!(
                "mode must be \"merge\" or \"replace\", got {other:?}"
            )));
        }
    };
    let methods = auth_inputs(Some(&body.authentication_template))?;
    let stored = engine
        .set_graphql_auth(&caller, &slug, methods, replace)
        .await?;
    ok(json!({ "authenticationTemplate": stored }))
}
