//! Errors on the wire: `{"_tag": ..., fields}` with the spec's status codes.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use executor_engine::EngineError;
use serde_json::{Value, json};

#[derive(Debug)]
pub enum ApiError {
    /// Bad payload, params or query.
    Schema(String),
    PayloadTooLarge,
    Engine(EngineError),
    /// The team server's accounts.
    Account(executor_accounts::AccountError),
}

impl From<executor_accounts::AccountError> for ApiError {
    fn from(e: executor_accounts::AccountError) -> Self {
        ApiError::Account(e)
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        ApiError::Engine(e)
    }
}

impl ApiError {
    pub fn schema(message: impl Into<String>) -> Self {
        ApiError::Schema(message.into())
    }

    fn parts(self) -> (StatusCode, Value) {
        match self {
            ApiError::Schema(message) => (
                StatusCode::BAD_REQUEST,
                json!({"_tag": "HttpApiSchemaError", "message": message}),
            ),
            ApiError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"_tag": "PayloadTooLargeError", "message": format!(
                    "Request body exceeds {} bytes ({} MiB). A larger OpenAPI spec can be added by URL ({{\"spec\":{{\"kind\":\"url\",\"url\":\"…\"}}}}): a fetched document may be up to 128 MiB.",
                    crate::MAX_BODY_BYTES,
                    crate::MAX_BODY_BYTES / 1024 / 1024
                ), "limitBytes": crate::MAX_BODY_BYTES}),
            ),
            ApiError::Engine(e) => engine_parts(e),
            ApiError::Account(e) => account_parts(e),
        }
    }
}

fn engine_parts(e: EngineError) -> (StatusCode, Value) {
    use EngineError as E;
    match e {
        E::IntegrationNotFound { slug } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "IntegrationNotFoundError", "message": format!("No integration {slug:?}."), "slug": slug}),
        ),
        E::IntegrationAlreadyExists { slug } => (
            StatusCode::CONFLICT,
            json!({"_tag": "IntegrationAlreadyExistsError", "message": format!("An integration {slug:?} already exists; choose another slug."), "slug": slug}),
        ),
        E::IntegrationRemovalNotAllowed { slug } => (
            StatusCode::CONFLICT,
            json!({"_tag": "IntegrationRemovalNotAllowedError", "message": format!("The integration {slug:?} is built in and cannot be removed."), "slug": slug}),
        ),
        E::ConnectionNotFound {
            owner,
            integration,
            name,
        } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "ConnectionNotFoundError", "message": format!("No connection {name:?} on {integration:?} ({}).", owner.as_str()), "owner": owner.as_str(), "integration": integration, "name": name}),
        ),
        E::ConnectionAlreadyExists {
            owner,
            integration,
            name,
        } => (
            StatusCode::CONFLICT,
            json!({"_tag": "ConnectionAlreadyExistsError", "owner": owner.as_str(), "integration": integration, "name": name,
                "message": format!("A connection named {name:?} already exists on {integration:?} ({}); pass \"replace\": true to replace it.", owner.as_str())}),
        ),
        E::ToolNotFound {
            address,
            suggestions,
        } => {
            let mut body = json!({"_tag": "ToolNotFoundError", "message": format!("No tool {address}."), "address": address});
            if !suggestions.is_empty() {
                body["suggestions"] = json!(suggestions);
            }
            (StatusCode::NOT_FOUND, body)
        }
        E::ExecutionNotFound { execution_id } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "ExecutionNotFoundError", "message": format!("No execution {execution_id} is waiting here: it was answered already, expired, or never existed."), "executionId": execution_id}),
        ),
        E::InvalidConnectionInput { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "InvalidConnectionInputError", "message": message}),
        ),
        E::CredentialProviderNotRegistered { provider } => (
            StatusCode::CONFLICT,
            json!({"_tag": "CredentialProviderNotRegisteredError", "message": format!("No credential provider {provider:?} is available here."), "provider": provider}),
        ),
        E::Toolkit { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "ToolkitError", "message": message}),
        ),
        E::InvalidPolicy { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "InvalidPolicyError", "message": message}),
        ),
        E::OrgWriteDenied { message } => (
            StatusCode::FORBIDDEN,
            json!({"_tag": "OrgWriteDeniedError", "message": message}),
        ),
        E::StdioMcpDisabled { message } => (
            StatusCode::FORBIDDEN,
            json!({"_tag": "StdioMcpDisabledError", "message": message}),
        ),
        E::PolicyNotFound { id } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "PolicyNotFoundError", "message": format!("No policy {id}."), "policyId": id}),
        ),
        E::ToolChangeNotFound { id } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "ToolChangeNotFoundError", "message": format!("No tool change {id}."), "changeId": id}),
        ),
        E::InvalidInput { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "HttpApiSchemaError", "message": message}),
        ),
        E::McpConnection {
            transport,
            message,
            http_status,
            insufficient_scope,
        } => {
            let mut body =
                json!({"_tag": "McpConnectionError", "transport": transport, "message": message});
            if let Some(s) = http_status {
                body["httpStatus"] = json!(s);
            }
            if insufficient_scope {
                body["insufficientScope"] = json!(true);
            }
            (StatusCode::BAD_REQUEST, body)
        }
        E::McpToolDiscovery {
            stage,
            message,
            http_status,
        } => {
            let mut body =
                json!({"_tag": "McpToolDiscoveryError", "stage": stage, "message": message});
            if let Some(s) = http_status {
                body["httpStatus"] = json!(s);
            }
            (StatusCode::BAD_REQUEST, body)
        }
        E::OpenApiParse { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "OpenApiParseError", "message": message}),
        ),
        E::OpenApiExtraction { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "OpenApiExtractionError", "message": message}),
        ),
        E::OpenApiSpecOverride {
            operation_index,
            operation,
            path,
            message,
        } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "OpenApiSpecOverrideError", "operationIndex": operation_index, "operation": operation, "path": path, "message": message}),
        ),
        E::GraphqlIntrospection { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "GraphqlIntrospectionError", "message": message}),
        ),
        E::GraphqlExtraction { message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": "GraphqlExtractionError", "message": message}),
        ),
        E::OAuth { tag, message } => (
            StatusCode::BAD_REQUEST,
            json!({"_tag": tag, "message": message}),
        ),
        E::OAuthSessionNotFound { .. } => (
            StatusCode::NOT_FOUND,
            json!({"_tag": "OAuthSessionNotFoundError", "message": "No pending OAuth flow has this state (unknown, already used, cancelled or expired)."}),
        ),
        E::Busy {
            running,
            waiting,
            retry_after_secs,
        } => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({
                "_tag": "ServerBusyError",
                "message": format!("The server is busy ({running} executions running, {waiting} waiting for a slot). Try again in {retry_after_secs} s."),
                "retryAfterSeconds": retry_after_secs,
            }),
        ),
        E::Unavailable { retry_after_secs } => database_unavailable(retry_after_secs),
        E::Internal(cause) => internal(&cause),
    }
}

/// 503 `DatabaseUnavailableError`: the database does not answer; nothing was done.
pub(crate) fn database_unavailable(retry_after_secs: u64) -> (StatusCode, Value) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        json!({
            "_tag": "DatabaseUnavailableError",
            "message": format!("The database does not answer, so nothing was done. Try again in {retry_after_secs} s."),
            "retryAfterSeconds": retry_after_secs,
        }),
    )
}

fn account_parts(e: executor_accounts::AccountError) -> (StatusCode, Value) {
    use executor_accounts::AccountError as A;
    let message = e.to_string();
    let (status, tag) = match &e {
        A::Unauthorized => (StatusCode::UNAUTHORIZED, "AccountUnauthorized"),
        A::AdminUnauthorized => (StatusCode::UNAUTHORIZED, "AdminUnauthorized"),
        A::AdminForbidden => (StatusCode::FORBIDDEN, "AdminForbidden"),
        A::Forbidden(_) => (StatusCode::FORBIDDEN, "AccountForbidden"),
        A::InviteRequired => (StatusCode::FORBIDDEN, "InviteRequiredError"),
        A::InvalidInvite => (StatusCode::FORBIDDEN, "InvalidInviteError"),
        A::EmailTaken => (StatusCode::CONFLICT, "EmailTakenError"),
        A::InvalidInput(_) => (StatusCode::BAD_REQUEST, "InvalidAccountInputError"),
        A::InvalidCredentials => (StatusCode::UNAUTHORIZED, "InvalidCredentialsError"),
        A::TooManyAttempts { retry_after_secs } => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                json!({"_tag": "TooManyAttemptsError", "message": message, "retryAfterSeconds": retry_after_secs}),
            );
        }
        A::Busy { retry_after_secs } => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"_tag": "ServerBusyError", "message": message, "retryAfterSeconds": retry_after_secs}),
            );
        }
        A::WeakPassword(_) => (StatusCode::BAD_REQUEST, "WeakPasswordError"),
        A::LastOwner => (StatusCode::CONFLICT, "LastOwnerError"),
        A::NotFound(_) => (StatusCode::NOT_FOUND, "AccountNotFoundError"),
        A::Internal(cause) => return internal(cause),
    };
    (status, json!({"_tag": tag, "message": message}))
}

/// Logs the cause under a trace id; the caller sees only the id.
pub(crate) fn internal(cause: &str) -> (StatusCode, Value) {
    let trace_id = format!("{:016x}", rand::random::<u64>());
    tracing::error!(trace_id = %trace_id, %cause, "internal error");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"_tag": "InternalError", "traceId": trace_id}),
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = self.parts();
        let mut response = (status, axum::Json(&body)).into_response();
        if let Some(secs) = body.get("retryAfterSeconds").and_then(Value::as_u64) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}
