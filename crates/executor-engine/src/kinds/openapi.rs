//! The OpenAPI integration kind: the stored config (the spec text lives in a content-addressed
//! blob), producing a connection's tools from the spec, and calling an operation with the
//! connection's credentials.
//!
//! `kinds/openapi.rs` (and `catalog/openapi.rs`) (preview, add, config merge/replace, spec update
//! with added/removed tools, remove; the spec text is a blob deleted with its last integration,
//! compiled once per process per spec+overrides+URL and shared by every connection; calls with the
//! pooled `reqwest` client),

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use executor_core::auth::{AuthMethod, AuthMethodInput};
use executor_core::{ToolError, ToolOutcome};
use executor_openapi::{ArgsValidator, Extraction, ExtractionFailure, OpenApiError, Spec};
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::KindEnv;
use super::{Produced, binding};
use crate::caller::RowsKey;
use crate::error::{EngineError, EngineResult};

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
    /// The declared health check (`HealthCheckSpec`, spec §1.8), core-owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) health_check: Option<Value>,
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

pub(crate) async fn spec_text(env: &KindEnv<'_>, hash: &str) -> Result<String, String> {
    let bytes = env
        .store
        .get_blob(env.caller.scope(), hash)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the stored spec {hash} is missing"))?;
    String::from_utf8(bytes).map_err(|_| "the stored spec is not UTF-8".to_owned())
}

/// Text → spec: overrides applied, relative servers resolved against the spec's URL.
pub(crate) fn parse(
    text: &str,
    overrides: Option<&Value>,
    url: Option<&str>,
) -> Result<Spec, OpenApiError> {
    let mut spec = executor_openapi::parse_spec_with_overrides(text, overrides)?;
    if let Some(url) = url {
        executor_openapi::resolve_relative_servers(&mut spec, url);
    }
    Ok(spec)
}

/// What a stored spec compiles to depends on its text, its overrides and where it came from.
pub(crate) fn compile_key(hash: &str, overrides: Option<&Value>, url: Option<&str>) -> String {
    format!(
        "{hash}\u{1f}{}\u{1f}{}",
        url.unwrap_or(""),
        overrides.map(Value::to_string).unwrap_or_default()
    )
}

/// The integration's tools, compiled once per process per (spec, overrides, URL): every
/// connection of an integration shares one extraction.
pub(crate) async fn compiled(
    env: &KindEnv<'_>,
    config: &OpenApiConfig,
) -> Result<Arc<Extraction>, String> {
    let key = compile_key(
        &config.spec_hash,
        config.spec_overrides.as_ref(),
        config.spec_url.as_deref(),
    );
    if let Some(hit) = env.documents.openapi_extraction(&key) {
        return Ok(hit);
    }
    let text = spec_text(env, &config.spec_hash).await?;
    let overrides = config.spec_overrides.clone();
    let url = config.spec_url.clone();
    let extraction = tokio::task::spawn_blocking(move || {
        let spec = parse(&text, overrides.as_ref(), url.as_deref()).map_err(|e| e.to_string())?;
        // Freed before the extraction grows: the text is no longer needed.
        drop(text);
        Ok::<_, String>(Arc::new(executor_openapi::extract(&spec)))
    })
    .await
    .map_err(|e| e.to_string())??;
    env.documents
        .put_openapi_extraction(&key, extraction.clone());
    Ok(extraction)
}

/// Every operation of the spec becomes a tool of the connection; its binding is stored with it.
pub(crate) async fn produce_tools(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let config = OpenApiConfig::from_record(integration).map_err(|e| e.to_string())?;
    let extraction = compiled(env, &config).await?;
    let tools = extraction
        .tools
        .iter()
        .map(|t| ToolRecord {
            integration: key.integration.clone(),
            owner: key.owner,
            connection: key.name.clone(),
            plugin_id: PLUGIN_ID.to_owned(),
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: Some(t.input_schema.clone()),
            output_schema: t.output_schema.clone(),
            annotations: Some(with_aliases(
                annotations(t.requires_approval, t.approval_description.clone()),
                &t.aliases,
            )),
            binding: Some(t.binding.clone()),
        })
        .collect();
    Ok(Produced {
        tools,
        definitions: extraction.definitions.clone(),
    })
}

/// Old names the tool still answers to (`tool_cache` resolves them on a miss).
pub(crate) fn with_aliases(mut annotations: Value, aliases: &[String]) -> Value {
    if !aliases.is_empty() {
        annotations[super::ALIASES] = json!(aliases);
    }
    annotations
}

pub(crate) fn annotations(requires_approval: bool, description: Option<String>) -> Value {
    let mut a = json!({ "requiresApproval": requires_approval });
    if let Some(d) = description {
        a["approvalDescription"] = json!(d);
    }
    a
}

/// Compiled argument checks of OpenAPI tools, each made at its tool's first call and kept while
/// the same tool record is in use (a catalog change brings new records, so a stale check is
/// never hit), and the `$defs` of each connection they were compiled against.
#[derive(Default)]
pub(crate) struct Validators {
    tools: Mutex<HashMap<ToolKey, Compiled>>,
    definitions: Mutex<(u64, HashMap<ConnectionOf, Definitions>)>,
}

/// A connection as a tenant and subject see it.
pub(crate) type ConnectionOf = (RowsKey, ConnectionKey);
/// A connection's tool by name, for a tenant and subject.
pub(crate) type ToolKey = (RowsKey, ConnectionKey, String);
/// A check and the tool record it was compiled from.
pub(crate) type Compiled = (Arc<ToolRecord>, Arc<ArgsValidator>);
/// A connection's shared `$defs`.
pub(crate) type Definitions = Arc<Map<String, Value>>;

/// More compiled checks than this empties the map (bounded memory).
pub(crate) const MAX_VALIDATORS: usize = 2_048;
/// More connections' definitions than this (in one generation) empties that map.
pub(crate) const MAX_DEFINITION_SETS: usize = 64;

impl Validators {
    pub(crate) fn lookup(
        &self,
        key: &ToolKey,
        tool: &Arc<ToolRecord>,
    ) -> Option<Arc<ArgsValidator>> {
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        tools
            .get(key)
            .filter(|(record, _)| Arc::ptr_eq(record, tool))
            .map(|(_, v)| v.clone())
    }

    pub(crate) fn insert(&self, key: ToolKey, tool: &Arc<ToolRecord>, v: Arc<ArgsValidator>) {
        let mut tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        if tools.len() >= MAX_VALIDATORS {
            tools.clear();
        }
        tools.insert(key, (tool.clone(), v));
    }
}

pub(crate) async fn definitions(
    env: &KindEnv<'_>,
    key: &ConnectionKey,
) -> EngineResult<Arc<Map<String, Value>>> {
    let generation = env.generation;
    {
        let cached = env
            .openapi_validators
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cached.0 == generation
            && let Some(d) = cached.1.get(&(env.caller.rows_key(), key.clone()))
        {
            return Ok(d.clone());
        }
    }
    let defs = Arc::new(env.store.tool_definitions(env.caller.scope(), key).await?);
    let mut cached = env
        .openapi_validators
        .definitions
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if cached.0 != generation {
        // A write landed meanwhile (the read may be stale: keep it out), or this is the first
        // read of a new generation.
        if env.generation != generation {
            return Ok(defs);
        }
        *cached = (generation, HashMap::new());
    }
    if cached.1.len() >= MAX_DEFINITION_SETS {
        cached.1.clear();
    }
    cached
        .1
        .insert((env.caller.rows_key(), key.clone()), defs.clone());
    Ok(defs)
}

/// Checks a call's arguments against the tool's whole input schema (and its binding) before the
/// gate: a call the API must refuse is refused here, without a request and without asking a
/// person to approve it.
pub(crate) async fn validate(
    env: &KindEnv<'_>,
    tool: &Arc<ToolRecord>,
    args: &Value,
) -> Result<(), Box<ToolError>> {
    let conn = ConnectionKey::new(
        tool.owner,
        tool.integration.clone(),
        tool.connection.clone(),
    );
    let key = (env.caller.rows_key(), conn, tool.name.clone());
    if let Some(v) = env.openapi_validators.lookup(&key, tool) {
        return v.validate(args).map_err(Box::new);
    }
    let defs = match definitions(env, &key.1).await {
        Ok(d) => d,
        Err(e) => {
            // The binding's own checks still apply; the schema check comes back with the store.
            tracing::warn!(integration = %tool.integration, error = %e, "tool definitions unreadable; arguments checked by the binding only");
            return executor_openapi::validate_args(binding(tool)?, args).map_err(Box::new);
        }
    };
    let compiled = ArgsValidator::compile(binding(tool)?, tool.input_schema.as_ref(), &defs)
        .map_err(Box::new)?;
    let compiled = Arc::new(compiled);
    env.openapi_validators.insert(key, tool, compiled.clone());
    compiled.validate(args).map_err(Box::new)
}

/// A connection's call settings for one execution.
pub(crate) struct Connected {
    call: executor_openapi::CallConfig,
}

pub(crate) async fn connect(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<Connected, Box<ToolError>>> {
    let config = OpenApiConfig::from_record(integration)?;
    let credentials = match env
        .credentials
        .resolve(env.caller, &config.authentication_template, key)
        .await?
    {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let mut connected = connected_with(config, credentials.rendered, env.network);
    // A body past the tool output cap could never reach the code: stop reading it there.
    connected.call.max_body_bytes = env.max_output_bytes;
    Ok(Ok(connected))
}

/// Call settings from the config and rendered credentials: static integration values first,
/// then the connection's auth placements.
pub(crate) fn connected_with(
    config: OpenApiConfig,
    rendered: executor_core::auth::Rendered,
    network: executor_core::network::NetworkAccess,
) -> Connected {
    let mut headers = config.headers;
    headers.extend(rendered.headers);
    let mut query = config.query_params;
    query.extend(rendered.query);
    Connected {
        call: executor_openapi::CallConfig {
            base_url: config.base_url,
            headers,
            query,
            network,
            ..executor_openapi::CallConfig::default()
        },
    }
}

impl Connected {
    /// Calls an operation by its binding (health probes, which have no stored tool row).
    pub(crate) async fn invoke_binding(
        &self,
        env: &KindEnv<'_>,
        binding: &Value,
        args: Value,
    ) -> ToolOutcome {
        if let Err(e) = executor_openapi::validate_args(binding, &args) {
            return ToolOutcome::Err(e);
        }
        executor_openapi::invoke(env.http(), binding, args, &self.call).await
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
        executor_openapi::invoke(env.http(), binding, args, &self.call).await
    }
}

// ---- managing OpenAPI integrations ------------------------------------------------------------

/// Where a spec comes from.
#[derive(Debug, Clone)]
pub enum OpenApiSpecSource {
    /// Fetched (and re-fetched on update) from this URL.
    Url(String),
    /// Pasted JSON or YAML text.
    Text(String),
}

impl OpenApiSpecSource {
    /// A string that is either a URL or the spec's text (the preview's `spec`).
    pub fn url_or_text(raw: &str) -> Self {
        let trimmed = raw.trim();
        let is_url = (trimmed.starts_with("http://") || trimmed.starts_with("https://"))
            && !trimmed.contains(char::is_whitespace);
        if is_url {
            OpenApiSpecSource::Url(trimmed.to_owned())
        } else {
            OpenApiSpecSource::Text(raw.to_owned())
        }
    }
}

/// Input of adding an OpenAPI integration (`POST /api/openapi/specs`).
#[derive(Debug, Clone)]
pub struct AddOpenApiSpec {
    pub spec: OpenApiSpecSource,
    pub slug: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub base_url: Option<String>,
    /// Sent with every call (and with the spec fetch).
    pub headers: BTreeMap<String, String>,
    pub query_params: BTreeMap<String, String>,
    /// `None` = derived from the spec's security schemes; `Some([])` = no auth.
    pub authentication_template: Option<Vec<AuthMethodInput>>,
    /// RFC 6902 operations applied to the spec before it is read (and on every update).
    pub spec_overrides: Option<Value>,
    /// A `HealthCheckSpec` (§1.8), stored as given.
    pub health_check: Option<Value>,
}

/// The outcome of adding a spec.
#[derive(Debug, Clone)]
pub struct AddedOpenApiSpec {
    pub slug: String,
    /// Tools each connection of the integration gets.
    pub tool_count: usize,
    /// Operations that could not be turned into tools (beyond the original: it fails silently).
    pub skipped: Vec<ExtractionFailure>,
}

/// `GET /api/openapi/integrations/:slug`.
#[derive(Debug, Clone)]
pub struct OpenApiIntegrationView {
    pub slug: String,
    pub description: String,
    pub kind: String,
    pub can_remove: bool,
    pub can_refresh: bool,
}

/// The stored config as it may be shown (the spec text never is).
#[derive(Debug, Clone)]
pub struct OpenApiConfigView {
    pub spec_url: Option<String>,
    pub base_url: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub query_params: BTreeMap<String, String>,
    pub spec_overrides: Option<Value>,
    pub authentication_template: Vec<AuthMethod>,
}

/// How `configure_openapi` treats the given auth methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthTemplateMode {
    /// Same slug replaces in place, others are appended.
    #[default]
    Merge,
    Replace,
}

/// The outcome of updating a spec.
#[derive(Debug, Clone)]
pub struct OpenApiSpecUpdate {
    pub slug: String,
    pub tool_count: usize,
    pub added_tools: Vec<String>,
    pub removed_tools: Vec<String>,
    pub skipped: Vec<ExtractionFailure>,
}

pub(crate) fn spec_error(e: OpenApiError) -> EngineError {
    match e {
        OpenApiError::Override {
            operation_index,
            operation,
            path,
            message,
        } => EngineError::OpenApiSpecOverride {
            operation_index,
            operation,
            path,
            message,
        },
        other => EngineError::OpenApiParse {
            message: other.to_string(),
        },
    }
}

/// Rejects a spec none of whose operations could be read (a spec without operations is fine).
pub(crate) fn require_tools(extraction: &Extraction) -> EngineResult<()> {
    if extraction.tools.is_empty() && !extraction.failures.is_empty() {
        let first: Vec<String> = extraction
            .failures
            .iter()
            .take(3)
            .map(|f| format!("{}: {}", f.operation, f.message))
            .collect();
        return Err(EngineError::OpenApiExtraction {
            message: format!(
                "None of the spec's {} operations could be turned into tools ({}).",
                extraction.failures.len(),
                first.join("; ")
            ),
        });
    }
    Ok(())
}

/// A slug given by the caller must be usable as an address segment.
pub(crate) fn check_slug(slug: &str) -> EngineResult<()> {
    let ok = slug
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && slug
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidInput {
            message: format!(
                "Invalid integration slug {slug:?}: use letters, digits, '_' or '-', starting with a letter or '_'."
            ),
        })
    }
}

pub(crate) fn non_blank(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

pub(crate) fn to_config_value(config: &OpenApiConfig) -> EngineResult<Value> {
    serde_json::to_value(config).map_err(|e| EngineError::Internal(e.to_string()))
}

/// A 6-character base36 suffix for `custom_` auth slugs.
pub(crate) fn random_base36() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..6)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}
