//! OAuth routes (spec §3.7): clients, dynamic registration, start / complete / cancel, probe,
//! and the browser callback page (`GET /api/oauth/callback`, public: see `auth.rs`).

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use executor_core::Owner;
use executor_engine::Caller;
use executor_engine::{
    Engine, EngineError, OAuthClientInput, OAuthStart, OAuthStarted, RegisterDynamicClient,
};
use serde::Deserialize;
use utoipa::ToSchema;

#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use serde_json::{Value, json};

use executor_engine::views::{
    oauth_client_json as client_json, oauth_connection_json, oauth_probe_json,
};

use crate::error::ApiError;
use crate::routes::ApiJson;

type ApiResult = Result<Response, ApiError>;

/// Overrides the base of the redirect URI (`<base>/api/oauth/callback`).
pub const WEB_BASE_URL_ENV: &str = "EXECUTOR_WEB_BASE_URL";
/// The engine builds the same redirect URI for the core tools.
const CALLBACK_PATH: &str = executor_engine::OAUTH_CALLBACK_PATH;

pub(crate) fn router() -> Router<Engine> {
    Router::new()
        .route("/oauth/clients", get(list_clients).post(put_client))
        .route("/oauth/clients/register-dynamic", post(register_dynamic))
        .route("/oauth/clients/{slug}", delete(remove_client))
        .route("/oauth/start", post(start))
        .route("/oauth/complete", post(complete))
        .route("/oauth/cancel", post(cancel))
        .route("/oauth/probe", post(probe))
        .route("/oauth/callback", get(callback))
        .route("/oauth/await/{session_id}", get(await_result))
        .route("/oauth/client-id-metadata.json", get(client_metadata))
        .route(
            "/oauth/client-id-metadata/{target}",
            get(client_metadata_for_target),
        )
}

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

fn owner(raw: &str) -> Result<Owner, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::schema(format!("owner must be \"org\" or \"user\", got {raw:?}")))
}

/// `EXECUTOR_WEB_BASE_URL`, else the host the request came to (the allowed-host check has
/// vetted it by then).
fn web_base_url(headers: &HeaderMap) -> String {
    if let Ok(base) = std::env::var(WEB_BASE_URL_ENV)
        && !base.trim().is_empty()
    {
        return base.trim().trim_end_matches('/').to_owned();
    }
    format!("http://{}", request_host(headers))
}

fn request_host(headers: &HeaderMap) -> &str {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost:4788")
}

fn default_redirect_uri(headers: &HeaderMap) -> String {
    format!("{}{CALLBACK_PATH}", web_base_url(headers))
}

#[utoipa::path(get, path = "/api/oauth/clients", tag = "oauth", summary = "List OAuth clients", responses((status = 200, description = "Registered OAuth clients, never their secrets", body = Vec<Object>), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn list_clients(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    let clients = engine.list_oauth_clients(&caller).await?;
    ok(Value::Array(clients.iter().map(client_json).collect()))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OAuthClientBody)]
struct ClientBody {
    owner: String,
    slug: String,
    #[serde(default)]
    authorization_url: String,
    token_url: String,
    grant: String,
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    origin_integration: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

#[utoipa::path(post, path = "/api/oauth/clients", tag = "oauth", summary = "Register or update an OAuth client", request_body = ClientBody, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn put_client(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<ClientBody>,
) -> ApiResult {
    let slug = engine
        .put_oauth_client(
            &caller,
            OAuthClientInput {
                owner: owner(&body.owner)?,
                slug: body.slug,
                authorization_url: body.authorization_url,
                token_url: body.token_url,
                grant: body.grant,
                client_id: body.client_id,
                client_secret: body.client_secret,
                resource: body.resource,
                origin_integration: body.origin_integration,
                token_endpoint_auth_method: body.token_endpoint_auth_method,
            },
        )
        .await?;
    ok(json!({"client": slug}))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OAuthRegisterBody)]
struct RegisterBody {
    owner: String,
    #[serde(default)]
    slug: Option<String>,
    #[serde(default)]
    issuer: Option<String>,
    registration_endpoint: String,
    authorization_url: String,
    token_url: String,
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uri: Option<String>,
    #[serde(default)]
    origin_integration: Option<String>,
}

#[utoipa::path(post, path = "/api/oauth/clients/register-dynamic", tag = "oauth", summary = "Register an OAuth client dynamically (RFC 7591)", request_body = RegisterBody, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError, OAuthRegistrationError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn register_dynamic(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RegisterBody>,
) -> ApiResult {
    let slug = engine
        .register_dynamic_client(
            &caller,
            RegisterDynamicClient {
                owner: owner(&body.owner)?,
                slug: body.slug,
                issuer: body.issuer,
                registration_endpoint: body.registration_endpoint,
                authorization_url: body.authorization_url,
                token_url: body.token_url,
                resource: body.resource,
                scopes: body.scopes,
                token_endpoint_auth_methods_supported: body.token_endpoint_auth_methods_supported,
                client_name: body.client_name,
                redirect_uri: body
                    .redirect_uri
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| default_redirect_uri(&headers)),
                origin_integration: body.origin_integration,
            },
        )
        .await?;
    ok(json!({"client": slug}))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = OAuthClientOwnerBody)]
struct OwnerBody {
    owner: String,
}

#[utoipa::path(delete, path = "/api/oauth/clients/{slug}", tag = "oauth", summary = "Remove an OAuth client", request_body = OwnerBody, params(("slug" = String, Path, description = "The client's slug")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 404, description = "OAuthClientNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn remove_client(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path(slug): axum::extract::Path<String>,
    ApiJson(body): ApiJson<OwnerBody>,
) -> ApiResult {
    engine
        .remove_oauth_client(&caller, owner(&body.owner)?, &slug)
        .await?;
    ok(json!({"removed": true}))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OAuthStartBody)]
struct StartBody {
    client: String,
    client_owner: String,
    owner: String,
    name: String,
    integration: String,
    template: String,
    #[serde(default)]
    identity_label: Option<String>,
    #[serde(default)]
    redirect_uri: Option<String>,
    /// Scopes to ask for (an extension: methods declare none yet; when empty, an MCP
    /// integration asks for the scopes its server advertises).
    #[serde(default)]
    scopes: Vec<String>,
}

#[utoipa::path(post, path = "/api/oauth/start", tag = "oauth", summary = "Start an OAuth sign-in for a connection", request_body = StartBody, responses((status = 200, description = "`redirect` (open its authorizationUrl) or `connected`", body = Object), (status = 400, description = "HttpApiSchemaError, OAuthStartError", body = ErrorBody), (status = 404, description = "IntegrationNotFoundError, OAuthClientNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn start(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StartBody>,
) -> ApiResult {
    let started = engine
        .start_oauth(
            &caller,
            OAuthStart {
                client: body.client,
                client_owner: owner(&body.client_owner)?,
                owner: owner(&body.owner)?,
                name: body.name,
                integration: body.integration,
                template: body.template,
                identity_label: body.identity_label,
                redirect_uri: body
                    .redirect_uri
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| default_redirect_uri(&headers)),
                scopes: body.scopes,
            },
        )
        .await?;
    match started {
        OAuthStarted::Connected(c) => {
            ok(json!({"status": "connected", "connection": oauth_connection_json(&c)}))
        }
        OAuthStarted::Redirect {
            authorization_url,
            state,
        } => ok(json!({
            "status": "redirect",
            "authorizationUrl": authorization_url,
            "state": state,
        })),
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OAuthCompleteBody)]
struct CompleteBody {
    state: String,
    code: String,
}

#[utoipa::path(post, path = "/api/oauth/complete", tag = "oauth", summary = "Finish an OAuth sign-in with the authorization code", request_body = CompleteBody, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError, OAuthCompleteError", body = ErrorBody), (status = 404, description = "OAuthSessionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn complete(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<CompleteBody>,
) -> ApiResult {
    let connection = engine
        .complete_oauth(&caller, &body.state, &body.code)
        .await?;
    ok(oauth_connection_json(&connection))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = OAuthStateBody)]
struct StateBody {
    state: String,
}

#[utoipa::path(post, path = "/api/oauth/cancel", tag = "oauth", summary = "Cancel a pending OAuth sign-in", request_body = StateBody, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError: the body, path or query is not what the route takes", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn cancel(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<StateBody>,
) -> ApiResult {
    engine.cancel_oauth(&caller, &body.state).await?;
    ok(json!({"cancelled": true}))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = OAuthProbeBody)]
struct ProbeBody {
    url: String,
}

#[utoipa::path(post, path = "/api/oauth/probe", tag = "oauth", summary = "Discover an OAuth authorization server", request_body = ProbeBody, responses((status = 200, description = "The authorization server's endpoints", body = Object), (status = 400, description = "HttpApiSchemaError, OAuthProbeError", body = ErrorBody), (status = 403, description = "OrgWriteDeniedError: on the team server, a member who is not an admin (the OAuth probe: of a URL that is not an MCP integration's)", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn probe(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<ProbeBody>,
) -> ApiResult {
    let p = engine.probe_oauth(&caller, &body.url).await?;
    ok(oauth_probe_json(&p))
}

#[derive(Deserialize)]
struct CallbackQuery {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// The popup page: completes the flow, tells the opener (and a `BroadcastChannel`) how it went,
/// and says so to the person. Always HTML, even on failure.
#[utoipa::path(get, path = "/api/oauth/callback", tag = "oauth", params(("state" = Option<String>, Query, description = "From the authorization request"), ("code" = Option<String>, Query, description = "The authorization code"), ("error" = Option<String>, Query, description = "The authorization server's error"), ("error_description" = Option<String>, Query, description = "Its description")), responses((status = 200, description = "A page that reports the result to the window that opened the flow", body = String, content_type = "text/html"), (status = 400, description = "The same page, reporting the failure", body = String, content_type = "text/html"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)), security(()))]
async fn callback(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let state = q.state.clone().unwrap_or_default();
    let result: Result<Value, (String, Option<String>)> = if state.is_empty() {
        Err(("The callback carries no state.".to_owned(), None))
    } else if let Some(error) = q.error.clone() {
        // The person (or the server) refused: the pending flow is dropped.
        let _ = engine.cancel_oauth(&caller, &state).await;
        Err((
            format!("The authorization server answered {error}."),
            q.error_description.clone(),
        ))
    } else {
        match engine
            .complete_oauth(&caller, &state, q.code.as_deref().unwrap_or(""))
            .await
        {
            Ok(c) => Ok(oauth_connection_json(&c)),
            Err(EngineError::OAuthSessionNotFound { .. }) => Err((
                "This sign-in link is unknown or has expired. Nothing was saved; start again from Executor.".to_owned(),
                None,
            )),
            Err(EngineError::Internal(cause)) => {
                let (_, body) = crate::error::internal(&cause);
                Err((
                    "Executor could not finish the sign-in (internal error).".to_owned(),
                    body.get("traceId").and_then(Value::as_str).map(str::to_owned),
                ))
            }
            Err(e) => Err((e.to_string(), None)),
        }
    };
    let (status, message, payload) = match result {
        Ok(connection) => {
            let mut payload =
                json!({"type": "executor:oauth-result", "ok": true, "sessionId": state});
            if let (Some(p), Some(c)) = (payload.as_object_mut(), connection.as_object()) {
                for (k, v) in c {
                    p.insert(k.clone(), v.clone());
                }
            }
            let name = connection.get("name").and_then(Value::as_str).unwrap_or("");
            (
                StatusCode::OK,
                format!("Connected: {name}. You can close this window."),
                payload,
            )
        }
        Err((error, details)) => {
            let mut payload = json!({"type": "executor:oauth-result", "ok": false, "sessionId": state, "error": error});
            if let Some(d) = &details {
                payload["errorDetails"] = json!(d);
            }
            let text = match details {
                Some(d) => format!("Sign-in failed: {error} ({d})"),
                None => format!("Sign-in failed: {error}"),
            };
            (StatusCode::BAD_REQUEST, text, payload)
        }
    };
    // Also readable once at `GET /api/oauth/await/<state>`, for clients without the popup.
    engine.publish_oauth_result(&caller, &state, payload.clone());
    (status, Html(callback_page(&message, &payload))).into_response()
}

/// `GET /api/oauth/await/:sessionId`: the callback's result for a flow, once (`null` when there
/// is none yet, it was read, or it expired). Behind the API token like the rest of `/api`.
#[utoipa::path(get, path = "/api/oauth/await/{session_id}", tag = "oauth", params(("session_id" = String, Path, description = "The OAuth session id `start` answered")), responses((status = 200, description = "The flow's result once the callback ran; null until then", body = Option<Object>), (status = 404, description = "OAuthSessionNotFoundError", body = ErrorBody), (status = 401, description = "The bearer token is missing or wrong (text `Unauthorized`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)))]
async fn await_result(
    State(engine): State<Engine>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path(session_id): axum::extract::Path<String>,
) -> ApiResult {
    ok(engine
        .take_oauth_result(&caller, &session_id)
        .unwrap_or(Value::Null))
}

fn callback_page(message: &str, payload: &Value) -> String {
    // JSON inside a <script>: no `<` may close the element.
    let data = payload
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Executor sign-in</title></head>\n\
         <body><p id=\"message\">{}</p>\n<script>\n(function () {{\n  var result = {data};\n  \
         try {{ if (window.opener) window.opener.postMessage(result, window.location.origin); }} catch (e) {{}}\n  \
         try {{ var c = new BroadcastChannel(\"executor:oauth-result\"); c.postMessage(result); c.close(); }} catch (e) {{}}\n  \
         if (window.opener) setTimeout(function () {{ window.close(); }}, 300);\n}})();\n</script></body></html>\n",
        html_escape::encode_safe(message)
    )
}

// ---- client ID metadata documents ---------------------------------------------------------

/// `GET /api/oauth/client-id-metadata.json` (public): this host as an OAuth client whose
/// `client_id` is the document's own URL, for authorization servers that accept client ID
/// metadata documents instead of registration. A public client: PKCE, no secret.
#[utoipa::path(get, path = "/api/oauth/client-id-metadata.json", tag = "oauth", responses((status = 200, description = "This server's OAuth Client ID Metadata Document", body = Object), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)), security(()))]
async fn client_metadata(headers: HeaderMap) -> Response {
    let base = web_base_url(&headers);
    let document = client_metadata_document(
        &format!("{base}/api/oauth/client-id-metadata.json"),
        "Executor",
        &base,
        vec![format!("{base}{CALLBACK_PATH}")],
        "web",
    );
    metadata_response(document)
}

/// `GET /api/oauth/client-id-metadata/<target>.json` (public). Target `local`: a native client
/// whose redirect URIs are this server's callback on each loopback name, so the document stays
/// valid whichever name the browser used.
#[utoipa::path(get, path = "/api/oauth/client-id-metadata/{target}", tag = "oauth", params(("target" = String, Path, description = "The metadata document's target")), responses((status = 200, description = "A Client ID Metadata Document for one target", body = Object), (status = 404, description = "No such target (text `Not Found`)", body = String, content_type = "text/plain"), (status = 500, description = "InternalError: a fault of the server, with a traceId", body = ErrorBody)), security(()))]
async fn client_metadata_for_target(
    headers: HeaderMap,
    axum::extract::Path(file): axum::extract::Path<String>,
) -> Response {
    // One target today; any other path is a plain 404 like every unknown route.
    if file != "local.json" {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    }
    let base = web_base_url(&headers);
    let port = port_of(request_host(&headers));
    let redirect_uris = ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .map(|host| match port {
            Some(port) => format!("http://{host}:{port}{CALLBACK_PATH}"),
            None => format!("http://{host}{CALLBACK_PATH}"),
        })
        .collect();
    let document = client_metadata_document(
        &format!("{base}/api/oauth/client-id-metadata/local.json"),
        "Executor Local",
        &base,
        redirect_uris,
        "native",
    );
    metadata_response(document)
}

/// The port of a `Host` header value (`name:port`, `[v6]:port`), if it names one.
fn port_of(host: &str) -> Option<u16> {
    let (name, port) = host.rsplit_once(':')?;
    if name.contains(':') && !name.ends_with(']') {
        // A bare IPv6 address without a port.
        return None;
    }
    port.parse().ok()
}

fn client_metadata_document(
    client_id: &str,
    client_name: &str,
    client_uri: &str,
    redirect_uris: Vec<String>,
    application_type: &str,
) -> Value {
    json!({
        "client_id": client_id,
        "client_name": client_name,
        "client_uri": client_uri,
        "redirect_uris": redirect_uris,
        // `refresh_token` too: servers may refuse a grant type the client did not declare, and
        // connections live on refreshed tokens.
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": application_type,
    })
}

fn metadata_response(document: Value) -> Response {
    (
        [(header::CACHE_CONTROL, "public, max-age=300")],
        Json(document),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::port_of;

    #[test]
    fn port_of_host_headers() {
        assert_eq!(port_of("127.0.0.1:4788"), Some(4788));
        assert_eq!(port_of("localhost:80"), Some(80));
        assert_eq!(port_of("[::1]:9000"), Some(9000));
        assert_eq!(port_of("localhost"), None);
        assert_eq!(port_of("[::1]"), None);
        assert_eq!(port_of("::1"), None);
        assert_eq!(port_of("host:notaport"), None);
    }
}
