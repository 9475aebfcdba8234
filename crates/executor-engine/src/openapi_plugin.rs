//! The OpenAPI integration kind: the stored config (the spec text lives in a content-addressed
//! blob), producing a connection's tools from the spec, and calling an operation with the
//! connection's credentials.

use std::collections::BTreeMap;

use executor_core::auth::AuthMethod;
use executor_core::{ToolError, ToolOutcome};
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Inner;
use crate::error::{EngineError, EngineResult};
use crate::kinds::{Produced, binding};

pub(crate) const PLUGIN_ID: &str = "openapi";

/// Stored (plugin-private) config of an OpenAPI integration. The spec text itself is never in
/// the config: `specHash` names its blob.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenApiConfig {
    /// Where the spec was fetched from; `None` for pasted specs (then it cannot be refreshed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec_url: Option<String>,
    /// sha256 of the spec text in the blob table.
    pub(crate) spec_hash: String,
    /// Overrides the spec's servers for every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) query_params: BTreeMap<String, String>,
    /// RFC 6902 operations applied to the spec before it is read, on every update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec_overrides: Option<Value>,
    #[serde(default)]
    pub(crate) authentication_template: Vec<AuthMethod>,
}

impl OpenApiConfig {
    pub(crate) fn from_record(record: &IntegrationRecord) -> EngineResult<Self> {
        serde_json::from_value(record.config.clone()).map_err(|e| {
            EngineError::Internal(format!(
                "integration {} has no valid OpenAPI config: {e}",
                record.slug
            ))
        })
    }
}

pub(crate) fn auth_methods(config: &Value) -> Vec<AuthMethod> {
    serde_json::from_value::<OpenApiConfig>(config.clone())
        .map(|c| c.authentication_template)
        .unwrap_or_default()
}

pub(crate) fn display_url(config: &Value) -> Option<String> {
    let config = serde_json::from_value::<OpenApiConfig>(config.clone()).ok()?;
    config.base_url.or(config.spec_url)
}

/// Reads the stored spec (with its overrides applied) into the model.
pub(crate) async fn load_spec(
    inner: &Inner,
    config: &OpenApiConfig,
) -> Result<executor_openapi::Spec, String> {
    let bytes = inner
        .store
        .get_blob(&inner.scope, &config.spec_hash)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the stored spec {} is missing", config.spec_hash))?;
    let text = String::from_utf8(bytes).map_err(|_| "the stored spec is not UTF-8".to_owned())?;
    let mut spec =
        executor_openapi::parse_spec_with_overrides(&text, config.spec_overrides.as_ref())
            .map_err(|e| e.to_string())?;
    if let Some(url) = &config.spec_url {
        executor_openapi::resolve_relative_servers(&mut spec, url);
    }
    Ok(spec)
}

/// Every operation of the spec becomes a tool of the connection; its binding is stored with it.
pub(crate) async fn produce_tools(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let config = OpenApiConfig::from_record(integration).map_err(|e| e.to_string())?;
    let spec = load_spec(inner, &config).await?;
    let extraction = executor_openapi::extract(&spec);
    for failure in &extraction.failures {
        tracing::warn!(integration = %key.integration, operation = %failure.operation, message = %failure.message, "operation skipped");
    }
    let tools = extraction
        .tools
        .into_iter()
        .map(|t| ToolRecord {
            integration: key.integration.clone(),
            owner: key.owner,
            connection: key.name.clone(),
            plugin_id: PLUGIN_ID.to_owned(),
            name: t.name,
            description: t.description,
            input_schema: Some(t.input_schema),
            output_schema: t.output_schema,
            annotations: Some(annotations(t.requires_approval, t.approval_description)),
            binding: Some(t.binding),
        })
        .collect();
    Ok(Produced {
        tools,
        definitions: extraction.definitions,
    })
}

pub(crate) fn annotations(requires_approval: bool, description: Option<String>) -> Value {
    let mut a = json!({ "requiresApproval": requires_approval });
    if let Some(d) = description {
        a["approvalDescription"] = json!(d);
    }
    a
}

/// A connection's call settings for one execution.
pub(crate) struct Connected {
    call: executor_openapi::CallConfig,
}

pub(crate) async fn connect(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let config = OpenApiConfig::from_record(integration)?;
    let credentials =
        match crate::credentials::resolve(inner, &config.authentication_template, key).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
    // Static integration values first, then the connection's auth placements.
    let mut headers = config.headers;
    headers.extend(credentials.rendered.headers);
    let mut query = config.query_params;
    query.extend(credentials.rendered.query);
    Ok(Ok(Connected {
        call: executor_openapi::CallConfig {
            base_url: config.base_url,
            headers,
            query,
            ..executor_openapi::CallConfig::default()
        },
    }))
}

impl Connected {
    pub(crate) fn validate(&self, tool: &ToolRecord, args: &Value) -> Result<(), Box<ToolError>> {
        executor_openapi::validate_args(binding(tool)?, args).map_err(Box::new)
    }

    pub(crate) async fn invoke(
        &self,
        inner: &Inner,
        tool: &ToolRecord,
        args: Value,
    ) -> ToolOutcome {
        let binding = match binding(tool) {
            Ok(b) => b,
            Err(e) => return ToolOutcome::Err(*e),
        };
        executor_openapi::invoke(&inner.http, binding, args, &self.call).await
    }
}
