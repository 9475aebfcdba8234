//! `/api` routes of the team server's accounts: set-up, sign-up/in/out, me, members, roles,
//! invites, API keys and the audit log (`docs/team/API.md`).

use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use axum::{Extension, Json, Router};
use executor_accounts::{AccountError, Identity, SignedIn};
use executor_store::{AuditFilter, AuditRecord, InviteRecord, TokenRecord, UserRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ClientAddress, Team};
#[allow(unused_imports)]
use crate::api_doc::schemas::*;
use crate::error::ApiError;
use crate::routes::ApiJson;

type ApiResult = Result<Response, ApiError>;

/// The team routes, to be nested under `/api` (they read [`Team`] from an extension).
pub(crate) fn api_router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/setup-status", get(setup_status))
        .route("/invite-status/{code}", get(invite_status))
        .route("/auth/sign-up/email", post(sign_up))
        .route("/auth/sign-in/email", post(sign_in))
        .route("/auth/sign-out", post(sign_out))
        .route("/account/me", get(me))
        .route("/account/roles", get(roles))
        .route("/account/members", get(members))
        .route("/account/members/{id}", delete(remove_member))
        .route("/account/members/{id}/role", patch(set_role))
        .route("/account/api-keys", get(api_keys).post(create_api_key))
        .route("/account/api-keys/{id}", delete(delete_api_key))
        .route("/admin/invites", get(invites).post(create_invite))
        .route("/admin/invites/{id}", delete(revoke_invite))
        .route("/admin/audit-events", get(audit_events))
        .merge(super::oauth::api_router())
}

pub(super) fn user_view(user: &UserRecord) -> Value {
    json!({"id": user.id, "email": user.email, "name": user.name})
}

fn member_view(user: &UserRecord, me: &Identity) -> Value {
    json!({
        "id": user.id,
        "userId": user.id,
        "email": user.email,
        "name": user.name,
        "role": user.role,
        "status": "active",
        "createdAt": user.created_at,
        "isCurrentUser": user.id == me.user.id,
    })
}

fn invite_view(invite: &InviteRecord) -> Value {
    json!({
        "id": invite.id,
        "code": invite.code,
        "role": invite.role,
        "label": invite.label,
        "createdAt": invite.created_at,
        "expiresAt": invite.expires_at,
        "usedByEmail": invite.used_by_email,
        "usedAt": invite.used_at,
    })
}

fn api_key_view(key: &TokenRecord) -> Value {
    json!({
        "id": key.id,
        "name": key.name.as_deref().unwrap_or("API key"),
        "obfuscatedValue": format!("{}…", key.hint.as_deref().unwrap_or("exk_")),
        "scope": key.scope.as_deref().unwrap_or("agent"),
        "createdAt": key.created_at,
        "updatedAt": key.updated_at,
        "lastUsedAt": key.last_used_at,
    })
}

fn audit_view(event: &AuditRecord) -> Value {
    json!({
        "id": event.id,
        "at": event.at,
        "kind": event.kind,
        "actor": event.actor_id.as_ref().map(|id| json!({"userId": id, "email": event.actor_email})),
        "via": event.via,
        "action": event.action,
        "target": event.target,
        "before": event.before,
        "after": event.after,
        "outcome": event.outcome,
        "detail": event.detail,
    })
}

/// The signed-in person, or the answer for nobody.
pub(super) fn signed_in(identity: Option<Extension<Identity>>) -> Result<Identity, ApiError> {
    identity
        .map(|Extension(i)| i)
        .ok_or(ApiError::Account(AccountError::Unauthorized))
}

fn admin(identity: Option<Extension<Identity>>) -> Result<Identity, ApiError> {
    let identity = identity
        .map(|Extension(i)| i)
        .ok_or(ApiError::Account(AccountError::AdminUnauthorized))?;
    if !identity.role.is_admin() {
        return Err(AccountError::AdminForbidden.into());
    }
    Ok(identity)
}

/// A sign-in's answer: the user and the token, and the cookie for browsers.
fn signed_in_response(team: &Team, signed: SignedIn) -> Response {
    let mut response =
        Json(json!({"user": user_view(&signed.user), "token": signed.token})).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        team.session_cookie(&signed.token, signed.max_age),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    response
}

#[utoipa::path(get, path = "/api/setup-status", tag = "accounts", summary = "Whether the organisation still needs its first account", security(()), responses((status = 200, description = "OK", body = Object), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn setup_status(Extension(team): Extension<Team>) -> ApiResult {
    let needs = team.accounts.needs_setup().await?;
    Ok(Json(json!({"needsSetup": needs})).into_response())
}

#[utoipa::path(get, path = "/api/invite-status/{code}", tag = "accounts", summary = "Whether an invite code can be redeemed now", security(()), params(("code" = String, Path, description = "The invite code")), responses((status = 200, description = "OK", body = Object), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn invite_status(Extension(team): Extension<Team>, Path(code): Path<String>) -> ApiResult {
    let valid = team.accounts.invite_valid(&code).await?;
    Ok(Json(json!({"valid": valid})).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignUp {
    name: String,
    email: String,
    password: String,
    #[serde(default)]
    invite_code: Option<String>,
}

#[utoipa::path(post, path = "/api/auth/sign-up/email", tag = "accounts", summary = "Create an account (the first one owns the organisation; later ones need an invite)", security(()), request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 403, description = "InviteRequiredError or InvalidInviteError", body = ErrorBody), (status = 409, description = "EmailTakenError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn sign_up(Extension(team): Extension<Team>, ApiJson(body): ApiJson<SignUp>) -> ApiResult {
    let signed = team
        .accounts
        .sign_up(
            &body.name,
            &body.email,
            &body.password,
            body.invite_code.as_deref(),
        )
        .await?;
    Ok(signed_in_response(&team, signed))
}

#[derive(Deserialize)]
struct SignIn {
    email: String,
    password: String,
}

#[utoipa::path(post, path = "/api/auth/sign-in/email", tag = "accounts", summary = "Sign in with email and password (sets the session cookie)", security(()), request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "InvalidCredentialsError", body = ErrorBody), (status = 429, description = "TooManyAttemptsError, with Retry-After", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn sign_in(
    Extension(team): Extension<Team>,
    Extension(address): Extension<ClientAddress>,
    ApiJson(body): ApiJson<SignIn>,
) -> ApiResult {
    let signed = team
        .accounts
        .sign_in(&body.email, &body.password, address.0.as_deref())
        .await?;
    Ok(signed_in_response(&team, signed))
}

#[utoipa::path(post, path = "/api/auth/sign-out", tag = "accounts", summary = "End this session and clear its cookie", security(()), responses((status = 200, description = "OK", body = Object), (status = 403, description = "InvalidOriginError: a cookie-signed write from another origin", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn sign_out(Extension(team): Extension<Team>, headers: axum::http::HeaderMap) -> ApiResult {
    if let Some(token) = crate::auth::bearer(&headers)
        .map(str::to_owned)
        .or_else(|| super::session_cookie_of(&headers))
    {
        team.accounts.sign_out(&token).await?;
    }
    let mut response = Json(json!({"success": true})).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, team.cleared_cookie());
    Ok(response)
}

#[utoipa::path(get, path = "/api/account/me", tag = "accounts", summary = "Who is signed in, in which organisation, with which role", responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn me(Extension(team): Extension<Team>, identity: Option<Extension<Identity>>) -> ApiResult {
    let me = signed_in(identity)?;
    let org = team.accounts.organisation();
    Ok(Json(json!({
        "user": user_view(&me.user),
        "organization": {"id": org.slug, "name": org.name, "slug": org.slug},
        "role": me.role.as_str(),
        "via": executor_accounts::via_name(&me.via),
    }))
    .into_response())
}

#[utoipa::path(get, path = "/api/account/roles", tag = "accounts", summary = "The roles of the organisation", responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn roles(identity: Option<Extension<Identity>>) -> ApiResult {
    signed_in(identity)?;
    Ok(Json(json!({"roles": [
        {"slug": "owner", "name": "Owner"},
        {"slug": "admin", "name": "Admin"},
        {"slug": "member", "name": "Member"},
    ]}))
    .into_response())
}

#[utoipa::path(get, path = "/api/account/members", tag = "accounts", summary = "The members of the organisation", responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn members(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
) -> ApiResult {
    let me = signed_in(identity)?;
    let members = team.accounts.members().await?;
    let list: Vec<Value> = members.iter().map(|m| member_view(m, &me)).collect();
    Ok(Json(json!({"members": list, "seats": {"used": list.len(), "granted": list.len(), "unlimited": true}})).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleChange {
    role_slug: String,
}

#[utoipa::path(patch, path = "/api/account/members/{id}/role", tag = "accounts", summary = "Change a member's role", request_body = Object, params(("id" = String, Path, description = "The member (user) id")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden or AccountForbidden (only an owner makes or unmakes owners)", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 409, description = "LastOwnerError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn set_role(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RoleChange>,
) -> ApiResult {
    let me = admin(identity)?;
    let user = team.accounts.set_role(&me, &id, &body.role_slug).await?;
    Ok(Json(member_view(&user, &me)).into_response())
}

#[utoipa::path(delete, path = "/api/account/members/{id}", tag = "accounts", summary = "Remove a member (ends their sessions, keys and tokens)", params(("id" = String, Path, description = "The member (user) id")), responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden or AccountForbidden", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 409, description = "LastOwnerError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn remove_member(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult {
    let me = signed_in(identity)?;
    team.accounts.remove_member(&me, &id).await?;
    Ok(Json(json!({"success": true})).into_response())
}

#[utoipa::path(get, path = "/api/account/api-keys", tag = "accounts", summary = "Your API keys, obfuscated", responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn api_keys(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
) -> ApiResult {
    let me = signed_in(identity)?;
    let keys = team.accounts.api_keys(&me).await?;
    Ok(Json(json!({"apiKeys": keys.iter().map(api_key_view).collect::<Vec<_>>()})).into_response())
}

#[derive(Deserialize)]
struct NewApiKey {
    #[serde(default)]
    name: Option<String>,
    /// `agent` (the default) or `workspace`.
    #[serde(default)]
    scope: Option<String>,
}

#[utoipa::path(post, path = "/api/account/api-keys", tag = "accounts", summary = "Make an API key (its value is shown once; a signed-in session only)", request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AccountForbidden: an API key or an agent's token cannot make keys", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn create_api_key(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    ApiJson(body): ApiJson<NewApiKey>,
) -> ApiResult {
    let me = signed_in(identity)?;
    let key = team
        .accounts
        .create_api_key(&me, body.name.as_deref(), body.scope.as_deref())
        .await?;
    let mut view = api_key_view(&key.record);
    view["value"] = json!(key.value);
    let mut response = (StatusCode::OK, Json(view)).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    Ok(response)
}

#[utoipa::path(delete, path = "/api/account/api-keys/{id}", tag = "accounts", summary = "Delete one of your API keys", params(("id" = String, Path, description = "The key id")), responses((status = 200, description = "OK", body = Object), (status = 401, description = "AccountUnauthorized: not signed in", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn delete_api_key(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult {
    let me = signed_in(identity)?;
    if !team.accounts.delete_api_key(&me, &id).await? {
        return Err(AccountError::NotFound("API key").into());
    }
    Ok(Json(json!({"success": true})).into_response())
}

#[utoipa::path(get, path = "/api/admin/invites", tag = "accounts", summary = "Invites, newest first", responses((status = 200, description = "OK", body = Object), (status = 401, description = "AdminUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden: owners and admins only", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn invites(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
) -> ApiResult {
    let me = admin(identity)?;
    let invites = team.accounts.invites(&me).await?;
    Ok(
        Json(json!({"invites": invites.iter().map(invite_view).collect::<Vec<_>>()}))
            .into_response(),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewInvite {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    expires_in_days: Option<i64>,
}

#[utoipa::path(post, path = "/api/admin/invites", tag = "accounts", summary = "Create an invite code", request_body = Object, responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AdminUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden: owners and admins only", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn create_invite(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    ApiJson(body): ApiJson<NewInvite>,
) -> ApiResult {
    let me = admin(identity)?;
    let invite = team
        .accounts
        .create_invite(
            &me,
            body.role.as_deref(),
            body.label.as_deref(),
            body.expires_in_days,
        )
        .await?;
    let mut view = invite_view(&invite);
    view["link"] = json!(format!("{}/join/{}", team.accounts.base_url(), invite.code));
    Ok(Json(view).into_response())
}

#[utoipa::path(delete, path = "/api/admin/invites/{id}", tag = "accounts", summary = "Revoke an unused invite", params(("id" = String, Path, description = "The invite id")), responses((status = 200, description = "OK", body = Object), (status = 401, description = "AdminUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden: owners and admins only", body = ErrorBody), (status = 404, description = "AccountNotFoundError", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn revoke_invite(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult {
    let me = admin(identity)?;
    if !team.accounts.revoke_invite(&me, &id).await? {
        return Err(AccountError::NotFound("unused invite").into());
    }
    Ok(Json(json!({"success": true})).into_response())
}

#[derive(Deserialize)]
struct AuditQuery {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    before: Option<i64>,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    action: Option<String>,
}

#[utoipa::path(get, path = "/api/admin/audit-events", tag = "accounts", summary = "The audit log, newest first", params(("limit" = Option<u32>, Query, description = "At most this many (1-500, default 50)"), ("before" = Option<i64>, Query, description = "Events older than this id"), ("actor" = Option<String>, Query, description = "One user id"), ("kind" = Option<String>, Query, description = "`change` or `tool_call`"), ("action" = Option<String>, Query, description = "A part of the action")), responses((status = 200, description = "OK", body = Object), (status = 400, description = "HttpApiSchemaError or InvalidAccountInputError", body = ErrorBody), (status = 401, description = "AdminUnauthorized: not signed in", body = ErrorBody), (status = 403, description = "AdminForbidden: owners and admins only", body = ErrorBody), (status = 500, description = "InternalError, with a traceId", body = ErrorBody)))]
async fn audit_events(
    Extension(team): Extension<Team>,
    identity: Option<Extension<Identity>>,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let me = admin(identity)?;
    let Query(query) = query.map_err(|e| ApiError::schema(e.body_text()))?;
    if let Some(kind) = query.kind.as_deref()
        && !matches!(kind, "change" | "tool_call")
    {
        return Err(ApiError::schema("kind must be change or tool_call"));
    }
    let limit = query.limit.unwrap_or(50).clamp(1, 500);
    // Everything recorded before this request is in the answer.
    team.engine.flush_audit().await;
    let events = team
        .accounts
        .audit_events(
            &me,
            &AuditFilter {
                before: query.before,
                limit,
                actor_id: query.actor.filter(|a| !a.is_empty()),
                kind: query.kind.filter(|k| !k.is_empty()),
                action: query.action.filter(|a| !a.is_empty()),
            },
        )
        .await?;
    let next = (events.len() as u32 == limit)
        .then(|| events.last().map(|e| e.id))
        .flatten();
    Ok(Json(json!({
        "events": events.iter().map(audit_view).collect::<Vec<_>>(),
        "nextBefore": next,
    }))
    .into_response())
}
