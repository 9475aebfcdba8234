//! A connection's credentials at call time: its stored values, the auth method it binds, and
//! the headers and query parameters that method renders. One place for every integration kind.

pub(crate) mod oauth;
pub(crate) mod providers;

use executor_core::ToolError;
use executor_core::auth::{AuthMethod, Rendered, render, select_method};
use executor_store::ConnectionKey;

use crate::Inner;
use crate::caller::Caller;
use crate::error::EngineResult;
use crate::kinds::{CredentialSource, Credentials};
use crate::names::connection_path;

/// Reads the connection and its values. `Ok(Err(_))` is a tool-level failure the agent sees
/// (`connection_value_missing`), `Err(_)` an engine failure (the connection vanished, the store
/// failed).
pub(crate) async fn resolve(
    inner: &Inner,
    caller: &Caller,
    methods: &[AuthMethod],
    key: &ConnectionKey,
) -> EngineResult<Result<Credentials, Box<ToolError>>> {
    let connection = inner
        .store
        .get_connection(caller.scope(), key)
        .await?
        .ok_or_else(|| crate::error::connection_not_found(key))?;
    let oauth = self::oauth::is_oauth(methods, &connection.template);
    if oauth {
        // Refreshes a token about to expire (one refresh per connection in flight).
        if let Err(e) = self::oauth::ensure_fresh(inner, caller, key).await? {
            return Ok(Err(e));
        }
    }
    let Some(values) = inner
        .providers
        .connection_values(caller, &connection)
        .await?
    else {
        return Ok(Err(Box::new(provider_unavailable(
            key,
            &connection.provider,
        ))));
    };
    let mut rendered = Rendered::default();
    if oauth {
        // `authorization: Bearer <access token>`.
        let Some(token) = values.get("token") else {
            return Ok(Err(Box::new(oauth_missing(key))));
        };
        rendered
            .headers
            .insert("Authorization".to_owned(), format!("Bearer {token}"));
    } else if let Some(method) = select_method(methods, &connection.template)
        // A connection made with "none" sends nothing, even when the integration declares one
        // method (an OpenAPI spec without security schemes is offered a bearer token).
        .filter(|m| connection.template != "none" || m.slug() == "none")
    {
        let missing: Vec<String> = method
            .variables()
            .into_iter()
            .filter(|v| !values.contains_key(v))
            .collect();
        if !missing.is_empty() {
            return Ok(Err(Box::new(missing_values(key, &missing))));
        }
        rendered = render(method, &values);
    }
    Ok(Ok(Credentials {
        connection,
        values,
        rendered,
    }))
}

fn missing_values(key: &ConnectionKey, missing: &[String]) -> ToolError {
    ToolError::new(
        "connection_value_missing",
        format!(
            "Connection {} has no value for {}.",
            connection_path(key),
            missing.join(", ")
        ),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "category": "authentication",
        "integration": key.integration,
        "recovery": "Re-create the connection with its credential (executor.coreTools.connections.createHandoff).",
    }))
}

/// The connection's values live in a provider this process has not registered (a keychain
/// that is locked or absent now, a build without it).
fn provider_unavailable(key: &ConnectionKey, provider: &str) -> ToolError {
    ToolError::new(
        "connection_value_missing",
        format!(
            "Connection {} reads its values from the credential provider {provider:?}, which is not available here.",
            connection_path(key)
        ),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "category": "authentication",
        "integration": key.integration,
        "provider": provider,
        "recovery": "Re-create the connection with a registered provider (executor.coreTools.providers.list).",
    }))
}

fn oauth_missing(key: &ConnectionKey) -> ToolError {
    ToolError::new(
        "oauth_connection_missing",
        format!(
            "Connection {} has no OAuth access token.",
            connection_path(key)
        ),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "category": "authentication",
        "integration": key.integration,
        "recovery": "Authorise the connection with executor.coreTools.oauth.start.",
    }))
}

#[async_trait::async_trait]
impl CredentialSource for Inner {
    async fn resolve(
        &self,
        caller: &Caller,
        methods: &[AuthMethod],
        key: &ConnectionKey,
    ) -> EngineResult<Result<Credentials, Box<ToolError>>> {
        resolve(self, caller, methods, key).await
    }
}
