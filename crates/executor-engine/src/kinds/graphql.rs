//! The GraphQL integration kind: adding an endpoint (checked by an unauthenticated
//! introspection, or from a supplied introspection JSON), its stored config and auth methods, the
//! schema snapshot (a content-addressed blob), producing tools from it, and calling a field.
//!
//! Snapshot life cycle: a supplied introspection JSON is the snapshot for good. Otherwise the
//! snapshot comes from the unauthenticated introspection at add (when the endpoint allows it),
//! else from the first connection's introspection with its credentials; a connection that was
//! synced before (an explicit refresh, or a re-sync after the integration's config changed)
//! introspects again with its credentials and replaces the snapshot.
//!
//! `kinds/graphql.rs` (and `catalog/graphql.rs`) (add: a supplied introspection JSON, or an
//! unauthenticated introspection that must answer with a schema or an auth wall, else nothing is
//! stored; auth config merge/replace; the schema snapshot from add or the first connection,
//! introspected again when a synced connection is refreshed unless it was supplied; parsed
//! documents cached by hash).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use executor_core::auth::{AuthMethod, AuthMethodInput};
use executor_core::{ToolError, ToolOutcome, slugify};
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::KindEnv;
use super::{Produced, binding};
use crate::error::{EngineError, EngineResult};

pub(crate) const PLUGIN_ID: &str = "graphql";

/// How long a GraphQL call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(110);

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
    env: &KindEnv<'_>,
    hash: &str,
) -> Result<Arc<executor_graphql::Schema>, String> {
    if let Some(schema) = env.documents.graphql_schema(hash) {
        return Ok(schema);
    }
    let bytes = env
        .store
        .get_blob(env.caller.scope(), hash)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the stored GraphQL schema {hash} is missing"))?;
    let json: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let schema = Arc::new(executor_graphql::from_json(&json).map_err(|e| e.to_string())?);
    env.documents.put_graphql_schema(hash, schema.clone());
    Ok(schema)
}

/// Stores a schema snapshot and returns its hash.
pub(crate) async fn store_schema(
    env: &KindEnv<'_>,
    schema: &executor_graphql::Schema,
) -> EngineResult<String> {
    let bytes = serde_json::to_vec(&executor_graphql::to_json(schema))
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    Ok(env.store.put_blob(env.caller.scope(), &bytes).await?)
}

/// The integration's schema for producing a connection's tools: the snapshot, unless there is
/// none or `reintrospect` asks for a fresh one (never for a supplied snapshot); then an
/// introspection with the connection's credentials, stored as the snapshot.
pub(crate) async fn schema_for(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    config: &GraphqlConfig,
    key: &ConnectionKey,
    reintrospect: bool,
) -> Result<Arc<executor_graphql::Schema>, String> {
    if let Some(hash) = &config.schema_hash
        && (config.schema_supplied || !reintrospect)
    {
        return load_schema(env, hash).await;
    }
    let connected = match connect_with(env, config, key).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(e.message),
        Err(e) => return Err(e.to_string()),
    };
    executor_mcp::network::check_url(env.network, &config.endpoint).map_err(|r| r.to_string())?;
    let schema = executor_graphql::introspect(
        env.http(),
        &config.endpoint,
        &connected.headers,
        &connected.query,
    )
    .await
    .map_err(|e| e.to_string())?;
    let hash = store_schema(env, &schema)
        .await
        .map_err(|e| e.to_string())?;
    let schema = Arc::new(schema);
    env.documents.put_graphql_schema(&hash, schema.clone());
    if config.schema_hash.as_deref() != Some(hash.as_str()) {
        record_snapshot(env, &integration.slug, &hash)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(schema)
}

/// Points the integration at a new snapshot. Re-reads the row first so that a config change
/// made meanwhile (auth methods) is kept; `config_revised_at` does not move (the tools of other
/// connections are not stale because of it).
pub(crate) async fn record_snapshot(env: &KindEnv<'_>, slug: &str, hash: &str) -> EngineResult<()> {
    let Some(mut record) = env.store.get_integration(env.caller.scope(), slug).await? else {
        return Ok(());
    };
    let mut config = GraphqlConfig::from_record(&record)?;
    if config.schema_supplied {
        return Ok(());
    }
    let previous = config.schema_hash.replace(hash.to_owned());
    record.config =
        serde_json::to_value(&config).map_err(|e| EngineError::Internal(e.to_string()))?;
    env.store
        .upsert_integration(env.caller.scope(), &record)
        .await?;
    if let Some(previous) = previous.filter(|p| p != hash) {
        release_blob(env, &previous).await?;
    }
    Ok(())
}

/// Deletes a snapshot blob that no integration's config names any more.
pub(crate) async fn release_blob(env: &KindEnv<'_>, hash: &str) -> EngineResult<()> {
    let integrations = env.store.list_integrations(env.caller.scope()).await?;
    let used = integrations
        .iter()
        .any(|i| i.config.to_string().contains(hash));
    if !used {
        env.store.delete_blob(env.caller.scope(), hash).await?;
    }
    Ok(())
}

/// Every query and mutation field becomes a tool of the connection.
pub(crate) async fn produce_tools(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let config = GraphqlConfig::from_record(integration).map_err(|e| e.to_string())?;
    // A connection synced before asks again (a refresh, or the integration's config changed);
    // a new one takes the snapshot when there is one.
    let synced_before = env
        .store
        .get_connection(env.caller.scope(), key)
        .await
        .map_err(|e| e.to_string())?
        .is_some_and(|c| c.tools_synced_at.is_some());
    let schema = schema_for(env, integration, &config, key, synced_before).await?;
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
            annotations: Some(super::openapi::annotations(
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

pub(crate) async fn connect_with(
    env: &KindEnv<'_>,
    config: &GraphqlConfig,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let credentials = match env
        .credentials
        .resolve(env.caller, &config.authentication_template, key)
        .await?
    {
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
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let config = GraphqlConfig::from_record(integration)?;
    let mut connected = match connect_with(env, &config, key).await? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(hash) = &config.schema_hash {
        // Without the snapshot `select` is still checked for syntax, just not against types.
        connected.schema = load_schema(env, hash)
            .await
            .inspect_err(|e| tracing::warn!(error = %e, "GraphQL schema snapshot unreadable"))
            .ok();
    }
    Ok(Ok(connected))
}

impl Connected {
    pub(crate) fn has_schema(&self) -> bool {
        self.schema.is_some()
    }

    pub(crate) fn validate(&self, tool: &ToolRecord, args: &Value) -> Result<(), Box<ToolError>> {
        executor_graphql::validate_args(self.schema.as_deref(), binding(tool)?, args)
    }

    pub(crate) async fn invoke(
        &self,
        env: &KindEnv<'_>,
        tool: &ToolRecord,
        args: Value,
    ) -> ToolOutcome {
        let binding = match binding(tool) {
            Ok(b) => b,
            Err(e) => return ToolOutcome::Err(*e),
        };
        if let Err(refused) = executor_mcp::network::check_url(env.network, &self.endpoint) {
            return ToolOutcome::Err(refused.tool_error());
        }
        executor_graphql::invoke_with_schema(
            env.http(),
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

// ---- adding and configuring ---------------------------------------------------------------

/// Input of adding a GraphQL endpoint (`POST /api/graphql/integrations`).
#[derive(Debug, Clone, Default)]
pub struct AddGraphqlIntegration {
    pub endpoint: String,
    pub slug: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// A standard introspection result (`{"data":{"__schema":…}}` or `{"__schema":…}`), or that
    /// JSON as text. When given, the endpoint is not dialled.
    pub introspection_json: Option<Value>,
    pub headers: BTreeMap<String, String>,
    pub query_params: BTreeMap<String, String>,
    /// Auth methods as the caller wrote them (slugs are assigned here). Default: none declared.
    pub authentication_template: Vec<AuthMethodInput>,
}

/// What adding answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphqlIntegrationAdded {
    pub slug: String,
    pub name: String,
}

/// The public part of a GraphQL integration's config (never the snapshot).
#[derive(Debug, Clone)]
pub struct GraphqlConfigView {
    pub endpoint: String,
    pub name: String,
    pub headers: BTreeMap<String, String>,
    pub query_params: BTreeMap<String, String>,
    pub authentication_template: Vec<AuthMethod>,
}

/// A GraphQL integration as `GET /api/graphql/integrations/:slug` shows it.
#[derive(Debug, Clone)]
pub struct GraphqlIntegrationView {
    pub slug: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub can_remove: bool,
    pub can_refresh: bool,
    pub config: GraphqlConfigView,
    /// Whether a schema snapshot is stored (else the first connection introspects).
    pub has_schema: bool,
    /// Whether the snapshot came from a supplied introspection JSON.
    pub schema_supplied: bool,
}

pub(crate) fn introspection_error(message: impl Into<String>) -> EngineError {
    EngineError::GraphqlIntrospection {
        message: message.into(),
    }
}

/// The endpoint, or why it cannot be one.
pub(crate) fn check_endpoint(endpoint: &str) -> EngineResult<reqwest::Url> {
    let url = reqwest::Url::parse(endpoint).map_err(|e| {
        introspection_error(format!(
            "{endpoint:?} is not a valid GraphQL endpoint URL: {e}."
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(introspection_error(format!(
            "{endpoint:?} is not an http(s) URL of a GraphQL endpoint."
        )));
    }
    Ok(url)
}

/// Spec §8: the endpoint's hostname with non-alphanumerics as `_`, else `graphql`.
pub(crate) fn default_slug(url: &reqwest::Url) -> String {
    let host = url.host_str().map(slugify).unwrap_or_default();
    if host.is_empty() {
        "graphql".to_owned()
    } else {
        host
    }
}

/// A caller's slug must survive the address grammar (`tools.<slug>.<owner>…`).
pub(crate) fn check_slug(slug: &str) -> EngineResult<()> {
    if slug
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(EngineError::InvalidInput {
            message: format!(
                "slug {slug:?} may only hold letters, digits, `_` and `-` (it is part of tool addresses)."
            ),
        })
    }
}

/// Reads a supplied introspection result offline.
pub(crate) fn parse_supplied(json: &Value) -> EngineResult<executor_graphql::Schema> {
    let parsed;
    let json = match json {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                introspection_error(format!("introspectionJson is not valid JSON: {e}."))
            })?;
            &parsed
        }
        other => other,
    };
    executor_graphql::parse_introspection(json).map_err(|e| introspection_error(e.to_string()))
}

/// A schema must give at least one tool.
pub(crate) fn check_fields(schema: &executor_graphql::Schema) -> EngineResult<()> {
    let has_field = [&schema.query_type, &schema.mutation_type]
        .into_iter()
        .flatten()
        .filter_map(|root| schema.get(root))
        .any(|t| t.fields.iter().any(|f| !f.name.starts_with("__")));
    if has_field {
        Ok(())
    } else {
        Err(EngineError::GraphqlExtraction {
            message: "The schema has no query or mutation fields to turn into tools.".to_owned(),
        })
    }
}

/// Six random base36 characters (merge-mode slugs `custom_<…>`).
pub(crate) fn random_suffix() -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..6)
        .map(|_| DIGITS[rand::random_range(0..DIGITS.len())] as char)
        .collect()
}

impl GraphqlConfig {
    pub(crate) fn view(&self, record: &IntegrationRecord) -> GraphqlConfigView {
        GraphqlConfigView {
            endpoint: self.endpoint.clone(),
            name: super::display_name(record),
            headers: self.headers.clone(),
            query_params: self.query_params.clone(),
            authentication_template: self.authentication_template.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_endpoints() {
        let url = |s: &str| check_endpoint(s).unwrap();
        assert_eq!(
            default_slug(&url("https://api.github.com/graphql")),
            "api_github_com"
        );
        assert_eq!(default_slug(&url("http://127.0.0.1:8080/gql")), "127_0_0_1");
        for bad in [
            "not a url",
            "ftp://example.com/graphql",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(
                    check_endpoint(bad),
                    Err(EngineError::GraphqlIntrospection { .. })
                ),
                "{bad}"
            );
        }
        assert!(check_slug("shop-api_2").is_ok());
        assert!(check_slug("has.dot").is_err());
        assert!(check_slug("space d").is_err());
        let suffix = random_suffix();
        assert_eq!(suffix.len(), 6);
        assert!(
            suffix
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
    }

    #[test]
    fn supplied_introspection_is_json_or_text() {
        let json = serde_json::json!({"__schema": {
            "queryType": {"name": "Query"},
            "types": [{"kind": "OBJECT", "name": "Query", "fields": [
                {"name": "hello", "args": [], "type": {"kind": "SCALAR", "name": "String"}}
            ]}]
        }});
        let schema = parse_supplied(&json).unwrap();
        assert!(check_fields(&schema).is_ok());
        assert!(parse_supplied(&Value::String(json.to_string())).is_ok());
        assert!(matches!(
            parse_supplied(&Value::String("{oops".into())),
            Err(EngineError::GraphqlIntrospection { .. })
        ));
        let empty = serde_json::json!({"__schema": {
            "queryType": {"name": "Query"},
            "types": [{"kind": "OBJECT", "name": "Query", "fields": [
                {"name": "__typename", "args": [], "type": {"kind": "SCALAR", "name": "String"}}
            ]}]
        }});
        assert!(matches!(
            check_fields(&parse_supplied(&empty).unwrap()),
            Err(EngineError::GraphqlExtraction { .. })
        ));
    }
}
