//! The GraphQL integration kind: the stored config, the schema snapshot (a content-addressed
//! blob, taken from a supplied introspection JSON or by introspecting with the first
//! connection's credentials), producing tools from it, and calling a field.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use executor_core::auth::AuthMethod;
use executor_core::{ToolError, ToolOutcome};
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Inner;
use crate::error::{EngineError, EngineResult};
use crate::kinds::{Produced, binding};

pub(crate) const PLUGIN_ID: &str = "graphql";

/// How long a GraphQL call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(110);

/// Stored (plugin-private) config of a GraphQL integration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GraphqlConfig {
    pub(crate) endpoint: String,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) query_params: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) authentication_template: Vec<AuthMethod>,
    /// sha256 of the schema snapshot (`executor_graphql::to_json`) in the blob table; `None`
    /// until a connection has introspected the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schema_hash: Option<String>,
    /// Whether the snapshot came from a supplied introspection JSON (then a refresh keeps it).
    #[serde(default)]
    pub(crate) schema_supplied: bool,
}

impl GraphqlConfig {
    pub(crate) fn from_record(record: &IntegrationRecord) -> EngineResult<Self> {
        serde_json::from_value(record.config.clone()).map_err(|e| {
            EngineError::Internal(format!(
                "integration {} has no valid GraphQL config: {e}",
                record.slug
            ))
        })
    }
}

pub(crate) fn auth_methods(config: &Value) -> Vec<AuthMethod> {
    serde_json::from_value::<GraphqlConfig>(config.clone())
        .map(|c| c.authentication_template)
        .unwrap_or_default()
}

pub(crate) fn display_url(config: &Value) -> Option<String> {
    serde_json::from_value::<GraphqlConfig>(config.clone())
        .ok()
        .map(|c| c.endpoint)
}

/// The schema snapshot named by `hash`, parsed once per process.
pub(crate) async fn load_schema(
    inner: &Inner,
    hash: &str,
) -> Result<Arc<executor_graphql::Schema>, String> {
    if let Some(schema) = inner.documents.graphql_schema(hash) {
        return Ok(schema);
    }
    let bytes = inner
        .store
        .get_blob(&inner.scope, hash)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the stored GraphQL schema {hash} is missing"))?;
    let json: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let schema = Arc::new(executor_graphql::from_json(&json).map_err(|e| e.to_string())?);
    inner.documents.put_graphql_schema(hash, schema.clone());
    Ok(schema)
}

/// Stores a schema snapshot and returns its hash.
pub(crate) async fn store_schema(
    inner: &Inner,
    schema: &executor_graphql::Schema,
) -> EngineResult<String> {
    let bytes = serde_json::to_vec(&executor_graphql::to_json(schema))
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    Ok(inner.store.put_blob(&inner.scope, &bytes).await?)
}

/// The integration's schema: its snapshot, else an introspection with the connection's
/// credentials (stored as the snapshot for every later connection).
async fn schema_for(
    inner: &Inner,
    integration: &IntegrationRecord,
    config: &GraphqlConfig,
    key: &ConnectionKey,
) -> Result<Arc<executor_graphql::Schema>, String> {
    if let Some(hash) = &config.schema_hash {
        return load_schema(inner, hash).await;
    }
    let connected = match connect_with(inner, config, key).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(e.message),
        Err(e) => return Err(e.to_string()),
    };
    let schema = executor_graphql::introspect(
        &inner.http,
        &config.endpoint,
        &connected.headers,
        &connected.query,
    )
    .await
    .map_err(|e| e.to_string())?;
    let hash = store_schema(inner, &schema)
        .await
        .map_err(|e| e.to_string())?;
    let mut updated = config.clone();
    updated.schema_hash = Some(hash.clone());
    let mut record = integration.clone();
    record.config = serde_json::to_value(&updated).map_err(|e| e.to_string())?;
    inner
        .store
        .upsert_integration(&inner.scope, &record)
        .await
        .map_err(|e| e.to_string())?;
    let schema = Arc::new(schema);
    inner.documents.put_graphql_schema(&hash, schema.clone());
    Ok(schema)
}

/// Every query and mutation field becomes a tool of the connection.
pub(crate) async fn produce_tools(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let config = GraphqlConfig::from_record(integration).map_err(|e| e.to_string())?;
    let schema = schema_for(inner, integration, &config, key).await?;
    let (tools, definitions) = executor_graphql::extract(&schema);
    let tools = tools
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
            annotations: Some(crate::openapi_plugin::annotations(
                t.requires_approval,
                t.approval_description,
            )),
            binding: Some(t.binding),
        })
        .collect();
    Ok(Produced { tools, definitions })
}

/// A connection's request settings for one execution, with the schema to check `select`.
pub(crate) struct Connected {
    endpoint: String,
    headers: BTreeMap<String, String>,
    query: BTreeMap<String, String>,
    schema: Option<Arc<executor_graphql::Schema>>,
}

async fn connect_with(
    inner: &Inner,
    config: &GraphqlConfig,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let credentials =
        match crate::credentials::resolve(inner, &config.authentication_template, key).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
    let mut headers = config.headers.clone();
    headers.extend(credentials.rendered.headers);
    let mut query = config.query_params.clone();
    query.extend(credentials.rendered.query);
    Ok(Ok(Connected {
        endpoint: config.endpoint.clone(),
        headers,
        query,
        schema: None,
    }))
}

pub(crate) async fn connect(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let config = GraphqlConfig::from_record(integration)?;
    let mut connected = match connect_with(inner, &config, key).await? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(hash) = &config.schema_hash {
        // Without the snapshot `select` is still checked for syntax, just not against types.
        connected.schema = load_schema(inner, hash)
            .await
            .inspect_err(|e| tracing::warn!(error = %e, "GraphQL schema snapshot unreadable"))
            .ok();
    }
    Ok(Ok(connected))
}

impl Connected {
    pub(crate) fn validate(&self, tool: &ToolRecord, args: &Value) -> Result<(), Box<ToolError>> {
        executor_graphql::validate_args(self.schema.as_deref(), binding(tool)?, args)
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
        executor_graphql::invoke_with_schema(
            &inner.http,
            &self.endpoint,
            self.schema.as_deref(),
            binding,
            args,
            &self.headers,
            &self.query,
            CALL_TIMEOUT,
        )
        .await
    }
}
