//! The integration kinds (MCP, OpenAPI, GraphQL) behind one interface: what a kind declares
//! (auth methods, a display URL), how it produces a connection's tools, and how it calls one.
//!
//! The set is closed and known at compile time, so this is an enum matched in one place rather
//! than trait objects: adding a kind is a variant here and a module of its own.
//!
//! Integration kinds: `kinds/` is the one interface (`Kind::of(plugin_id)`: auth methods, display
//! URL, produce a connection's tools, connect once per execution; `Connected`: validate arguments
//! before the gate, invoke). The set is closed, so it is an enum matched in one place rather than
//! trait objects.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use executor_core::auth::{AuthMethod, Rendered};
use executor_core::{ToolAddress, ToolError, ToolOutcome};
use executor_sandbox::HostReply;
use executor_store::{ConnectionKey, ConnectionRecord, IntegrationRecord, Store, ToolRecord};
use serde_json::{Map, Value, json};

use crate::caller::Caller;
use crate::error::EngineResult;

pub(crate) mod graphql;
pub(crate) mod mcp;
pub(crate) mod openapi;

/// The annotation listing a tool's earlier names (a kind that renames its tools keeps agent code
/// written against the old ones working: the catalog resolves them on a miss).
pub(crate) const ALIASES: &str = "aliases";

/// What a kind may use of the engine, and nothing else: the caller whose rows it reads, the
/// store (its documents, the tools' shared definitions), the upstream clients, its own caches,
/// the call limits it must honour, and credentials resolved at call time.
pub(crate) struct KindEnv<'a> {
    pub(crate) caller: &'a Caller,
    pub(crate) store: &'a dyn Store,
    /// The upstream HTTP client, built at its first use (an MCP-only executor never loads the
    /// root certificates it needs).
    pub(crate) http: &'a std::sync::OnceLock<reqwest::Client>,
    pub(crate) build_http: fn(executor_core::network::NetworkAccess) -> reqwest::Client,
    /// Where upstream connections may go.
    pub(crate) network: executor_core::network::NetworkAccess,
    pub(crate) mcp: &'a executor_mcp::McpClient,
    pub(crate) documents: &'a Documents,
    pub(crate) openapi_validators: &'a openapi::Validators,
    /// The catalog generation now: cached checks of an older one are stale.
    pub(crate) generation: u64,
    pub(crate) credentials: &'a dyn CredentialSource,
    /// Each call's budget, and the most bytes of an answer worth reading.
    pub(crate) call_timeout: Duration,
    pub(crate) max_output_bytes: usize,
}

impl KindEnv<'_> {
    pub(crate) fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(|| (self.build_http)(self.network))
    }
}

/// Where a kind gets a connection's credentials at call time.
#[async_trait::async_trait]
pub(crate) trait CredentialSource: Send + Sync {
    /// Reads the connection and its values. `Ok(Err(_))` is a tool-level failure the agent
    /// sees (`connection_value_missing`), `Err(_)` an engine failure.
    async fn resolve(
        &self,
        caller: &Caller,
        methods: &[AuthMethod],
        key: &ConnectionKey,
    ) -> EngineResult<Result<Credentials, Box<ToolError>>>;
}

/// What one execution lends a call: its downstream MCP sessions, and someone to ask when the
/// server elicits during the call.
pub(crate) trait CallContext: Send + Sync {
    /// `None` once the execution finished.
    fn mcp_scope(&self) -> Option<Arc<executor_mcp::ExecutionScope>>;
    /// Answers the elicitations of the server during this call.
    fn elicitor(&self, address: &ToolAddress, args: &Value) -> Arc<dyn executor_mcp::Elicitor>;
}

/// What a connection brings to a request.
pub(crate) struct Credentials {
    pub(crate) connection: ConnectionRecord,
    /// `{variable: value}` as stored (never logged).
    pub(crate) values: BTreeMap<String, String>,
    /// Rendered by the selected method; empty when the integration declares no usable method.
    pub(crate) rendered: Rendered,
}

/// `connection_rejected`: the upstream turned the connection's credentials away (401/403).
pub(crate) fn rejected(integration: &str, status: u16, what: &str, message: &str) -> ToolError {
    ToolError::new(
        "connection_rejected",
        format!("{what} rejected the connection's credentials ({status}): {message}"),
    )
    .with_status(status)
    .with_retryable(false)
    .with_details(serde_json::json!({
        "category": "authentication",
        "integration": integration,
        "recovery": "Check the connection with executor.coreTools.connections.list and re-create it with valid credentials.",
    }))
}

/// `oauth_scope_insufficient`: the upstream accepted the token but it lacks a scope (HTTP 403
/// with an RFC 6750 `insufficient_scope` challenge). Authorising again with the same scopes
/// would not help, so the recovery names no `oauth.start`.
pub(crate) fn scope_insufficient(integration: &str, message: &str) -> ToolError {
    ToolError::new("oauth_scope_insufficient", message.to_owned())
        .with_status(403)
        .with_retryable(false)
        .with_details(serde_json::json!({
            "category": "authentication",
            "integration": integration,
            "recovery": "Tell the user the connection's token lacks a scope this tool needs; they can re-create the connection with more scopes (executor.coreTools.connections.createHandoff), then check it with executor.coreTools.connections.list.",
        }))
}

pub(crate) fn upstream_timeout(integration: &str, timeout: Duration) -> ToolError {
    ToolError::new(
        "upstream_timeout",
        format!(
            "{integration} did not answer within {} s (the call timeout).",
            timeout.as_secs_f64()
        ),
    )
    .with_retryable(true)
    .with_details(json!({
        "integration": integration,
        "timeoutMs": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Mcp,
    OpenApi,
    Graphql,
}

/// A connection's tools and the `$defs` they share, as a kind produced them.
#[derive(Debug, Default)]
pub(crate) struct Produced {
    pub(crate) tools: Vec<ToolRecord>,
    pub(crate) definitions: Map<String, Value>,
}

impl Kind {
    /// The kind of a stored integration (`plugin_id`); `None` for rows this build cannot serve.
    pub(crate) fn of(plugin_id: &str) -> Option<Self> {
        match plugin_id {
            mcp::PLUGIN_ID => Some(Kind::Mcp),
            openapi::PLUGIN_ID => Some(Kind::OpenApi),
            graphql::PLUGIN_ID => Some(Kind::Graphql),
            _ => None,
        }
    }

    /// The auth methods an integration declares (stored in its config).
    pub(crate) fn auth_methods(self, config: &Value) -> Vec<AuthMethod> {
        match self {
            Kind::Mcp => mcp::auth_methods(config),
            Kind::OpenApi => openapi::auth_methods(config),
            Kind::Graphql => graphql::auth_methods(config),
        }
    }

    /// The URL shown for an integration (an endpoint, an API's base).
    pub(crate) fn display_url(self, config: &Value) -> Option<String> {
        match self {
            Kind::Mcp => mcp::display_url(config),
            Kind::OpenApi => openapi::display_url(config),
            Kind::Graphql => graphql::display_url(config),
        }
    }

    /// Whether the kind's catalog lives upstream and may change under us (re-listed after a
    /// TTL). Document-based kinds change only when their document or config does.
    pub(crate) fn has_live_catalog(self) -> bool {
        matches!(self, Kind::Mcp)
    }

    /// Produces a connection's tools. `Err(reason)` keeps the previous catalog (tool sync is
    /// "incomplete": the upstream is unreachable, the credentials not ready).
    pub(crate) async fn produce(
        self,
        env: &KindEnv<'_>,
        integration: &IntegrationRecord,
        key: &ConnectionKey,
    ) -> Result<Produced, String> {
        match self {
            Kind::Mcp => mcp::produce_tools(env, integration, key).await,
            Kind::OpenApi => openapi::produce_tools(env, integration, key).await,
            Kind::Graphql => graphql::produce_tools(env, integration, key).await,
        }
    }

    /// Resolves what an execution needs to call a connection's tools (credentials rendered,
    /// documents loaded). Done once per connection per execution. `Ok(Err(_))` is a failure the
    /// agent sees as a tool result.
    pub(crate) async fn connect(
        self,
        env: &KindEnv<'_>,
        integration: &IntegrationRecord,
        key: &ConnectionKey,
    ) -> EngineResult<Result<Connected, Box<ToolError>>> {
        Ok(match self {
            Kind::Mcp => mcp::resolve_target(env, integration, key)
                .await?
                .map(Connected::Mcp),
            Kind::OpenApi => openapi::connect(env, integration, key)
                .await?
                .map(Connected::OpenApi),
            Kind::Graphql => graphql::connect(env, integration, key)
                .await?
                .map(Connected::Graphql),
        })
    }
}

/// A connection ready to take calls within one execution.
pub(crate) enum Connected {
    Mcp(mcp::ResolvedTarget),
    OpenApi(openapi::Connected),
    Graphql(graphql::Connected),
}

impl Connected {
    /// Whether other executions may reuse it until the catalog changes: everything it holds
    /// came from the store. A GraphQL connection whose schema snapshot could not be read is
    /// resolved again by the next execution instead.
    pub(crate) fn shareable(&self) -> bool {
        match self {
            Connected::Mcp(_) | Connected::OpenApi(_) => true,
            Connected::Graphql(c) => c.has_schema(),
        }
    }

    /// Checks arguments before the policy gate, so a call that must fail never asks a person
    /// for approval (spec §4.7). MCP servers validate their own arguments.
    pub(crate) async fn validate(
        &self,
        env: &KindEnv<'_>,
        tool: &Arc<ToolRecord>,
        args: &Value,
    ) -> Result<(), Box<ToolError>> {
        match self {
            Connected::Mcp(_) => Ok(()),
            Connected::OpenApi(_) => openapi::validate(env, tool, args).await,
            Connected::Graphql(c) => c.validate(tool, args),
        }
    }

    /// Calls the tool within the call timeout: the MCP client runs that timer itself (paused
    /// while a person answers one of the call's elicitations), the HTTP kinds run it here.
    pub(crate) async fn invoke(
        &self,
        env: &KindEnv<'_>,
        ctx: &dyn CallContext,
        address: &ToolAddress,
        tool: &ToolRecord,
        args: Value,
    ) -> HostReply {
        let integration = address.integration.as_str();
        let outcome = match self {
            Connected::Mcp(target) => {
                return mcp::call(env, ctx, target, address, tool, args).await;
            }
            Connected::OpenApi(c) => {
                tokio::time::timeout(env.call_timeout, c.invoke(env, tool, args)).await
            }
            Connected::Graphql(c) => {
                tokio::time::timeout(env.call_timeout, c.invoke(env, tool, args)).await
            }
        };
        let outcome = outcome
            .unwrap_or_else(|_| ToolOutcome::Err(upstream_timeout(integration, env.call_timeout)));
        HostReply::Resolve(outcome.to_json())
    }
}

/// How listings name an integration: its name, else its description, else its slug.
pub(crate) fn display_name(record: &IntegrationRecord) -> String {
    [record.name.as_deref(), record.description.as_deref()]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .unwrap_or(&record.slug)
        .to_owned()
}

/// The stored binding of a tool, or a `binding_error` the agent sees.
pub(crate) fn binding(tool: &ToolRecord) -> Result<&Value, Box<ToolError>> {
    tool.binding.as_ref().ok_or_else(|| {
        Box::new(ToolError::new(
            "binding_error",
            format!(
                "Tool {} has no stored binding; refresh its connection.",
                tool.name
            ),
        ))
    })
}

/// Parsed documents shared by every execution, keyed by content hash (so they never go
/// stale: a changed document has a new hash). Small and bounded; a miss re-reads the blob.
#[derive(Default)]
pub(crate) struct Documents {
    graphql: std::sync::Mutex<Vec<(String, Arc<executor_graphql::Schema>)>>,
    /// OpenAPI specs compiled to tools, keyed by (spec hash, overrides, spec URL), with when
    /// they were last used.
    openapi: std::sync::Mutex<Vec<(String, Arc<executor_openapi::Extraction>, Instant)>>,
}

/// A compiled spec unused this long is dropped: calls never need it (each tool stores its
/// binding), only the next connection of the same integration would, and GitHub's holds
/// ~100 MiB (issue #18: RSS stayed at 179 MB after one import).
pub(crate) const COMPILED_SPEC_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// Schemas kept parsed; more are evicted oldest first.
const MAX_PARSED_SCHEMAS: usize = 8;
/// Compiled OpenAPI specs kept (a large one holds tens of MiB); more are evicted oldest first.
const MAX_COMPILED_SPECS: usize = 4;

impl Documents {
    pub(crate) fn graphql_schema(&self, hash: &str) -> Option<Arc<executor_graphql::Schema>> {
        let cached = self.graphql.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .iter()
            .find(|(h, _)| h == hash)
            .map(|(_, s)| s.clone())
    }

    pub(crate) fn put_graphql_schema(&self, hash: &str, schema: Arc<executor_graphql::Schema>) {
        let mut cached = self.graphql.lock().unwrap_or_else(|p| p.into_inner());
        if cached.iter().any(|(h, _)| h == hash) {
            return;
        }
        if cached.len() >= MAX_PARSED_SCHEMAS {
            cached.remove(0);
        }
        cached.push((hash.to_owned(), schema));
    }
}

impl Documents {
    pub(crate) fn openapi_extraction(
        &self,
        key: &str,
    ) -> Option<Arc<executor_openapi::Extraction>> {
        let mut cached = self.openapi.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .iter_mut()
            .find(|(k, _, _)| k == key)
            .map(|(_, e, used)| {
                *used = Instant::now();
                e.clone()
            })
    }

    /// Drops the compiled specs unused for `idle`; true when one was dropped.
    pub(crate) fn evict_idle_extractions(&self, idle: std::time::Duration) -> bool {
        let mut dropped = Vec::new();
        {
            let mut cached = self.openapi.lock().unwrap_or_else(|p| p.into_inner());
            let mut i = 0;
            while i < cached.len() {
                if cached[i].2.elapsed() >= idle {
                    dropped.push(cached.remove(i).1);
                } else {
                    i += 1;
                }
            }
        }
        // Freed outside the lock (a large one takes a while).
        !dropped.is_empty()
    }

    pub(crate) fn put_openapi_extraction(
        &self,
        key: &str,
        extraction: Arc<executor_openapi::Extraction>,
    ) {
        let mut cached = self.openapi.lock().unwrap_or_else(|p| p.into_inner());
        if cached.iter().any(|(k, _, _)| k == key) {
            return;
        }
        if cached.len() >= MAX_COMPILED_SPECS {
            cached.remove(0);
        }
        cached.push((key.to_owned(), extraction, Instant::now()));
    }
}
