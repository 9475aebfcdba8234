//! The OAuth surfaces of the team server: the documents MCP clients discover
//! (`/.well-known/oauth-protected-resource[/…]`, RFC 9728; `/.well-known/oauth-authorization-server`,
//! RFC 8414), registration, authorize, token and revocation endpoints, the consent API the
//! console's page answers, and the device login of the CLI (RFC 8628).

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use executor_accounts::{
    AccountError, AuthorizeRedirect, AuthorizeRequest, CLI_CLIENT_ID, Identity, OAuthError, SCOPE,
    TokenGrant,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::routes::signed_in;
use super::{ClientAddress, Team};
#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use crate::error::ApiError;
use crate::routes::ApiJson;

type ApiResult = Result<Response, ApiError>;

/// The discovery documents, at the root.
pub(crate) fn well_known_router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource_root),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*resource}",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization_server),
        )
}

/// `/api/auth/…` routes of OAuth and the device login.
pub(super) fn api_router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/auth/mcp/register", post(register))
        .route("/auth/mcp/authorize", get(authorize))
        .route("/auth/mcp/token", post(token))
        .route("/auth/mcp/revoke", post(revoke))
        .route(
            "/auth/mcp/requests/{id}",
            get(consent_view).post(answer_consent),
        )
        .route("/auth/cli-login", get(cli_login))
        .route("/auth/device/code", post(device_code))
        .route("/auth/device/token", post(device_token))
        .route("/auth/device/approve", post(approve_device))
        .route("/auth/device/{user_code}", get(device_status))
}

fn no_store(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    h.insert(header::PRAGMA, "no-cache".parse().expect("static header"));
    response
}

fn oauth_error(e: OAuthError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = no_store(
        (
            status,
            Json(json!({"error": e.error, "error_description": e.description})),
        )
            .into_response(),
    );
    if let Some(secs) = e.retry_after_secs {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, secs.into());
    }
    response
}

fn resource_document(team: &Team, path: &str) -> Value {
    json!({
        "resource": format!("{}{path}", team.accounts.base_url()),
        "authorization_servers": [team.accounts.base_url()],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "Executor",
    })
}

#[utoipa::path(get, path = "/.well-known/oauth-protected-resource", tag = "oauth-server", summary = "The MCP endpoint's protected-resource metadata (RFC 9728)", security(()), responses((status = 200, description = "OK", body = Object)))]
async fn protected_resource_root(Extension(team): Extension<Team>) -> Response {
    Json(resource_document(&team, "/mcp")).into_response()
}

#[utoipa::path(get, path = "/.well-known/oauth-protected-resource/{resource}", tag = "oauth-server", summary = "A path's protected-resource metadata (`mcp`, `mcp/toolkits/<slug>`)", security(()), params(("resource" = String, Path, description = "The endpoint path without its leading slash")), responses((status = 200, description = "OK", body = Object), (status = 404, description = "No MCP endpoint there", body = Object)))]
async fn protected_resource(
    Extension(team): Extension<Team>,
    Path(resource): Path<String>,
) -> Response {
    let path = format!("/{resource}");
    if !team
        .accounts
        .known_resource(&format!("{}{path}", team.accounts.base_url()))
    {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "not_found", "error_description": "No MCP endpoint lives at that path."})),
        )
            .into_response();
    }
    Json(resource_document(&team, &path)).into_response()
}

#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "oauth-server", summary = "The authorization server metadata (RFC 8414)", security(()), responses((status = 200, description = "OK", body = Object)))]
async fn authorization_server(Extension(team): Extension<Team>) -> Response {
    let base = team.accounts.base_url();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/api/auth/mcp/authorize"),
        "token_endpoint": format!("{base}/api/auth/mcp/token"),
        "registration_endpoint": format!("{base}/api/auth/mcp/register"),
        "revocation_endpoint": format!("{base}/api/auth/mcp/revoke"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [SCOPE],
    }))
    .into_response()
}

/// A form (`application/x-www-form-urlencoded`) or JSON object body as string pairs.
fn fields(headers: &HeaderMap, body: &Bytes) -> Vec<(String, String)> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        return match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(map)) => map
                .into_iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k, s)),
                    Value::Number(n) => Some((k, n.to_string())),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
    }
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field(fields: &[(String, String)], name: &str) -> Option<String> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
}

#[derive(Deserialize)]
struct Registration {
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
    #[serde(default)]
    scope: Option<String>,
}

#[utoipa::path(post, path = "/api/auth/mcp/register", tag = "oauth-server", summary = "Register an MCP client (RFC 7591, public clients)", security(()), request_body = Object, responses((status = 201, description = "The registered client", body = Object), (status = 400, description = "An RFC 6749 error: `{error, error_description}`", body = Object)))]
async fn register(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    body: Bytes,
) -> Response {
    let Ok(reg) = serde_json::from_slice::<Registration>(&body) else {
        return oauth_error(OAuthError {
            error: "invalid_client_metadata",
            description: "The registration must be a JSON object.".to_owned(),
            status: 400,
            retry_after_secs: None,
        });
    };
    if reg
        .token_endpoint_auth_method
        .as_deref()
        .is_some_and(|m| m != "none")
    {
        // Public clients only: there is nowhere a client could keep a secret for us.
        tracing::debug!(method = ?reg.token_endpoint_auth_method, "registering as a public client");
    }
    match team
        .accounts
        .register_client(
            reg.client_name.as_deref(),
            &reg.redirect_uris,
            address.0.as_deref(),
        )
        .await
    {
        Ok(client) => no_store(
            (
                StatusCode::CREATED,
                Json(json!({
                    "client_id": client.client_id,
                    "client_id_issued_at": client.issued_at,
                    "client_name": client.client_name,
                    "redirect_uris": client.redirect_uris,
                    "token_endpoint_auth_method": "none",
                    "grant_types": reg.grant_types.unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]),
                    "response_types": reg.response_types.unwrap_or_else(|| vec!["code".into()]),
                    "scope": reg.scope.unwrap_or_else(|| SCOPE.to_owned()),
                })),
            )
                .into_response(),
        ),
        Err(e) => oauth_error(e),
    }
}

/// A page for a request that cannot be sent back to its client.
fn error_page(message: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Cannot connect</title></head>\
         <body style=\"font-family:system-ui;max-width:36rem;margin:4rem auto\"><h1>This application cannot connect</h1><p>{}</p></body></html>",
        html_escape::encode_text(message)
    );
    (StatusCode::BAD_REQUEST, Html(body)).into_response()
}

fn redirect(location: &str) -> Response {
    match axum::http::HeaderValue::from_str(location) {
        Ok(value) => no_store((StatusCode::FOUND, [(header::LOCATION, value)]).into_response()),
        Err(_) => error_page("The redirect address is not valid."),
    }
}

#[utoipa::path(get, path = "/api/auth/mcp/authorize", tag = "oauth-server", summary = "Start an authorization (PKCE S256): to the consent page, or back to the client with an error", security(()), responses((status = 302, description = "To the consent page or back to the client"), (status = 400, description = "An unknown client or redirect URI: a page, never a redirect", body = String, content_type = "text/html"), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn authorize(
    Extension(team): Extension<Team>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let get = |k: &str| field(&query, k);
    let request = AuthorizeRequest {
        response_type: get("response_type"),
        client_id: get("client_id"),
        redirect_uri: get("redirect_uri"),
        code_challenge: get("code_challenge"),
        code_challenge_method: get("code_challenge_method"),
        state: get("state"),
        scope: get("scope"),
        resource: get("resource"),
    };
    match team.accounts.authorize(&request).await {
        Ok(AuthorizeRedirect::Consent(path)) => redirect(&path),
        Ok(AuthorizeRedirect::Client(uri)) => redirect(&uri),
        Ok(AuthorizeRedirect::Page(message)) => error_page(&message),
        Err(e) => ApiError::Account(e).into_response(),
    }
}

#[utoipa::path(post, path = "/api/auth/mcp/token", tag = "oauth-server", summary = "Exchange a code or a refresh token (form-encoded)", security(()), responses((status = 200, description = "OK", body = Object), (status = 400, description = "An RFC 6749 error: `{error, error_description}`", body = Object), (status = 401, description = "invalid_client", body = Object), (status = 500, description = "server_error", body = Object)))]
async fn token(Extension(team): Extension<Team>, headers: HeaderMap, body: Bytes) -> Response {
    let f = fields(&headers, &body);
    let grant = TokenGrant {
        grant_type: field(&f, "grant_type"),
        code: field(&f, "code"),
        code_verifier: field(&f, "code_verifier"),
        redirect_uri: field(&f, "redirect_uri"),
        client_id: field(&f, "client_id"),
        refresh_token: field(&f, "refresh_token"),
        resource: field(&f, "resource"),
    };
    match team.accounts.exchange(&grant).await {
        Ok(t) => no_store(
            Json(json!({
                "access_token": t.access_token,
                "token_type": "Bearer",
                "expires_in": t.expires_in,
                "refresh_token": t.refresh_token,
                "scope": t.scope,
            }))
            .into_response(),
        ),
        Err(e) => oauth_error(e),
    }
}

#[utoipa::path(post, path = "/api/auth/mcp/revoke", tag = "oauth-server", summary = "Revoke a token (RFC 7009, form-encoded)", security(()), responses((status = 200, description = "Revoked, or unknown"), (status = 400, description = "An RFC 6749 error: `{error, error_description}`", body = Object), (status = 500, description = "server_error", body = Object)))]
async fn revoke(Extension(team): Extension<Team>, headers: HeaderMap, body: Bytes) -> Response {
    let f = fields(&headers, &body);
    let Some(token) = field(&f, "token") else {
        return oauth_error(OAuthError {
            error: "invalid_request",
            description: "token is required.".to_owned(),
            status: 400,
            retry_after_secs: None,
        });
    };
    match team.accounts.revoke_token(&token).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => oauth_error(e),
    }
}

#[utoipa::path(get, path = "/api/auth/mcp/requests/{id}", tag = "oauth-server", summary = "What an authorization request asks (the consent page)", params(("id" = String, Path, description = "The request id")), responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn consent_view(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult {
    signed_in(identity)?;
    let view = team.accounts.consent_view(&id).await?;
    Ok(Json(json!({
        "clientName": view.client_name,
        "clientId": view.client_id,
        "redirectOrigin": view.redirect_origin,
        "resource": view.resource,
        "scopes": view.scopes.iter().map(|(scope, description)| json!({"scope": scope, "description": description})).collect::<Vec<_>>(),
    }))
    .into_response())
}

#[derive(Deserialize)]
struct Answer {
    approve: bool,
}

#[utoipa::path(post, path = "/api/auth/mcp/requests/{id}", tag = "oauth-server", summary = "Approve or deny an authorization request", request_body = Object, params(("id" = String, Path, description = "The request id")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AccountForbidden or InvalidOriginError", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn answer_consent(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Answer>,
) -> ApiResult {
    let me = signed_in(identity)?;
    if matches!(me.via, executor_accounts::Via::OAuth { .. }) {
        return Err(
            AccountError::Forbidden("An agent cannot consent for a person.".to_owned()).into(),
        );
    }
    let to = team.accounts.answer_consent(&me, &id, body.approve).await?;
    Ok(no_store(Json(json!({"redirectTo": to})).into_response()))
}

#[utoipa::path(get, path = "/api/auth/cli-login", tag = "oauth-server", summary = "The CLI's sign-in endpoints", security(()), responses((status = 200, description = "OK", body = Object)))]
async fn cli_login(Extension(team): Extension<Team>) -> Response {
    let base = team.accounts.base_url();
    Json(json!({
        "provider": "executor",
        "deviceAuthorizationEndpoint": format!("{base}/api/auth/device/code"),
        "tokenEndpoint": format!("{base}/api/auth/device/token"),
        "clientId": CLI_CLIENT_ID,
        "requestFormat": "json",
    }))
    .into_response()
}

#[utoipa::path(post, path = "/api/auth/device/code", tag = "oauth-server", summary = "Start a device login (RFC 8628)", security(()), request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn device_code(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let f = fields(&headers, &body);
    let code = team
        .accounts
        .device_code(field(&f, "client_id").as_deref(), address.0.as_deref())
        .await?;
    Ok(no_store(
        Json(json!({
            "device_code": code.device_code,
            "user_code": code.user_code,
            "verification_uri": code.verification_uri,
            "verification_uri_complete": code.verification_uri_complete,
            "expires_in": code.expires_in,
            "interval": code.interval,
        }))
        .into_response(),
    ))
}

#[utoipa::path(post, path = "/api/auth/device/token", tag = "oauth-server", summary = "Poll a device login: a session token once approved", security(()), request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "authorization_pending, slow_down, access_denied, expired_token or invalid_grant", body = Object), (status = 401, description = "invalid_client", body = Object)))]
async fn device_token(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let f = fields(&headers, &body);
    match team
        .accounts
        .device_token(
            field(&f, "grant_type").as_deref(),
            field(&f, "device_code").as_deref(),
            field(&f, "client_id").as_deref(),
            address.0.as_deref(),
        )
        .await
    {
        Ok(signed) => no_store(
            Json(json!({
                "access_token": signed.token,
                "token_type": "Bearer",
                "expires_in": signed.max_age,
                "user": super::routes::user_view(&signed.user),
            }))
            .into_response(),
        ),
        Err(e) => oauth_error(OAuthError {
            error: e.code(),
            description: match e {
                executor_accounts::DeviceTokenError::AuthorizationPending => {
                    "Waiting for the person to approve the code."
                }
                executor_accounts::DeviceTokenError::SlowDown => {
                    "Polling too fast: wait the interval between polls."
                }
                executor_accounts::DeviceTokenError::AccessDenied => "The person declined.",
                executor_accounts::DeviceTokenError::ExpiredToken => {
                    "The code expired: start the login again."
                }
                executor_accounts::DeviceTokenError::TooManyAttempts { .. } => {
                    "Too many unknown device codes from this address: wait before polling again."
                }
                executor_accounts::DeviceTokenError::Busy => "The server is busy; try again.",
                _ => "The request was not accepted.",
            }
            .to_owned(),
            status: match e {
                executor_accounts::DeviceTokenError::InvalidClient => 401,
                executor_accounts::DeviceTokenError::TooManyAttempts { .. } => 429,
                executor_accounts::DeviceTokenError::Busy => 503,
                _ => 400,
            },
            retry_after_secs: match e {
                executor_accounts::DeviceTokenError::TooManyAttempts { retry_after_secs } => {
                    Some(retry_after_secs)
                }
                _ => None,
            },
        }),
    }
}

fn device_view(status: &executor_accounts::DeviceStatus) -> Value {
    json!({"userCode": status.user_code, "clientId": status.client_id, "status": status.status})
}

#[utoipa::path(get, path = "/api/auth/device/{user_code}", tag = "oauth-server", summary = "A device code, as the approval page shows it", params(("user_code" = String, Path, description = "The code the CLI printed")), responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn device_status(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    identity: Option<Extension<Identity>>,
    Path(user_code): Path<String>,
) -> ApiResult {
    signed_in(identity)?;
    let status = team
        .accounts
        .device_status(&user_code, address.0.as_deref())
        .await?;
    Ok(Json(device_view(&status)).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeviceAnswer {
    user_code: String,
    approve: bool,
}

#[utoipa::path(post, path = "/api/auth/device/approve", tag = "oauth-server", summary = "Approve or deny a device code", request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AccountForbidden or InvalidOriginError", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn approve_device(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    identity: Option<Extension<Identity>>,
    ApiJson(body): ApiJson<DeviceAnswer>,
) -> ApiResult {
    let me = signed_in(identity)?;
    if matches!(me.via, executor_accounts::Via::OAuth { .. }) {
        return Err(
            AccountError::Forbidden("An agent cannot approve a device login.".to_owned()).into(),
        );
    }
    let status = team
        .accounts
        .answer_device(&me, &body.user_code, body.approve, address.0.as_deref())
        .await?;
    Ok(Json(device_view(&status)).into_response())
}
