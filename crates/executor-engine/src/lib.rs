//! The engine: executions, the one dispatcher every tool call goes through, catalog production
//! for integrations and connections, and pauses for approval. It knows the domain, not the wire:
//! `executor-server` turns what it returns into HTTP/MCP JSON.

mod agent_sessions;
mod cache;
mod caller;
mod catalog;
mod core_tools;
mod credentials;
mod database;
mod error;
mod executions;
mod kinds;
mod names;
mod policies;
mod static_tool;
mod toolkits;
pub mod views;
mod workspace;

use std::sync::Arc;
use std::time::Duration;

use executor_mcp::{McpClient, McpClientConfig};
use executor_sandbox::{SandboxLimits, SandboxPool};
use executor_store::Store;

pub use caller::{Caller, PolicySource, Principal};
pub use catalog::OpenApiPreview;
pub use catalog::health::{
    HealthCheckCandidate, HealthCheckResult, HealthCheckSpec, ValidateConnection,
};
pub use catalog::{
    ConnectionInput, CredentialOrigin, InputOrigin, IntegrationView, MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS, Refreshed, ToolListFilter, ToolSchema,
};
pub use credentials::oauth::{
    GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, OAuthClientInput, OAuthClientView,
    OAuthConnection, OAuthProbe, OAuthStart, OAuthStarted, ORIGIN_DCR, ORIGIN_MANUAL,
    RegisterDynamicClient, pkce_challenge,
};
pub use credentials::providers::{
    AUTH_FILE_NAME, ProviderItem, ProvidersConfig, auth_file_from_env, auth_file_path,
};
pub use error::{DATABASE_RETRY_AFTER_SECS, EngineError, EngineResult};
pub use executions::call_limits::{
    CallLimitsConfig, DEFAULT_CALL_TIMEOUT, DEFAULT_CALLS_PER_INTEGRATION,
    DEFAULT_MAX_TOOL_OUTPUT_BYTES, DEFAULT_SLOT_WAIT,
};
pub use executions::feed::{ExecutionEvent, ExecutionWatch};
pub use executions::{
    AgentLink, ExecutionOutcome, MAX_HISTORY_PAGE, Paused, ProgressSink, ResumeAction,
};
pub use executor_sandbox::JS_THREAD_STACK;
pub use executor_store::ToolkitEntryKind;
pub use executor_store::{
    ExecutionCallRecord, ExecutionFilter, ExecutionRecord, ExecutionStatus, ExecutionSummary,
    McpSessionRecord,
};
pub use kinds::graphql::{
    AddGraphqlIntegration, GraphqlConfigView, GraphqlIntegrationAdded, GraphqlIntegrationView,
};
pub use kinds::mcp::{
    AddMcpServer, AddStdioMcpServer, MASKED_VALUE, McpAuthShorthand, McpServerView, ProbeView,
};
pub use kinds::openapi::{
    AddOpenApiSpec, AddedOpenApiSpec, AuthTemplateMode, OpenApiConfigView, OpenApiIntegrationView,
    OpenApiSpecSource, OpenApiSpecUpdate,
};
pub use policies::PolicyView;
pub use static_tool::{BUILTIN_INTEGRATION, STATIC_TOOL_CONNECTION};
pub use toolkits::{
    MAX_SLUG_LEN, MAX_TOOLKIT_NAME_CHARS, ToolkitEntryView, ToolkitTool, ToolkitView,
    is_valid_slug, slug_from_name,
};
pub use workspace::{AuditEntry, AuditKind};

/// Everything the engine needs to start. No `Default`: the binary decides.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub sandbox: SandboxLimits,
    /// Where JavaScript runs.
    pub js_threads: JsThreads,
    /// Executions that may run at once; more wait for a slot.
    pub max_concurrent_executions: usize,
    /// Executions that may wait for a slot; more are turned away (`EngineError::Busy`).
    pub max_queued_executions: usize,
    /// How long an execution waits for a slot before it is turned away.
    pub queue_wait: Duration,
    /// Its `call_timeout` is replaced by [`Self::calls`]' call timeout. Its `network` is where
    /// every upstream client connects (OpenAPI, GraphQL, OAuth and spec downloads too).
    pub mcp: McpClientConfig,
    /// Time, integration share and answer size of each tool call.
    pub calls: CallLimitsConfig,
    /// How long a paused execution waits for a decision before it expires (default 24 h).
    pub pause_ttl: Duration,
    /// How long settled executions stay in the history (default 7 days).
    pub history_retention: Duration,
    /// Credential providers besides the vault (none by default: the binary decides).
    pub providers: ProvidersConfig,
    /// Where people reach this executor in a browser (`EXECUTOR_WEB_BASE_URL`). `None`: the
    /// HTTP server's own address, once it has one ([`Engine::serving_at`]).
    pub web_base_url: Option<String>,
    /// Called after the engine dropped a large cache, so the process can hand the freed memory
    /// back to the system (the binary trims glibc's heap; the engine has no `unsafe`).
    pub release_memory: Option<ReleaseMemory>,
}

/// See [`EngineConfig::release_memory`].
#[derive(Clone)]
pub struct ReleaseMemory(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for ReleaseMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReleaseMemory")
    }
}

/// Where the sandbox runs JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsThreads {
    /// On a runtime of its own with this many threads, apart from the async workers that serve
    /// requests; each tool call hops to the engine's runtime and back.
    Dedicated(usize),
    /// Up to `executions` at once on the workers of the runtime the engine is created in, which
    /// must be multi-thread and have stacks of [`JS_THREAD_STACK`] bytes: an execution, its tool
    /// calls and its MCP sessions then run on one thread with no hop between runtimes per call,
    /// and a long stretch of JS hands that worker's other tasks to another thread. Executions
    /// beyond that run on `spill_threads` threads of the sandbox's own, as with `Dedicated`.
    Shared {
        executions: usize,
        spill_threads: usize,
    },
}

/// The path of the OAuth redirect URI under the web base URL.
pub const OAUTH_CALLBACK_PATH: &str = "/api/oauth/callback";

/// Default [`EngineConfig::pause_ttl`].
pub const DEFAULT_PAUSE_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default [`EngineConfig::history_retention`].
pub const DEFAULT_HISTORY_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

impl EngineConfig {
    pub fn with_js_timeout(js_time: Duration) -> Self {
        let sandbox = SandboxLimits {
            js_time,
            ..SandboxLimits::default()
        };
        Self {
            sandbox,
            js_threads: JsThreads::Dedicated(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
                    .max(2),
            ),
            max_concurrent_executions: 256,
            max_queued_executions: 1024,
            queue_wait: Duration::from_secs(30),
            mcp: McpClientConfig::default(),
            calls: CallLimitsConfig::default(),
            pause_ttl: DEFAULT_PAUSE_TTL,
            history_retention: DEFAULT_HISTORY_RETENTION,
            providers: ProvidersConfig::default(),
            web_base_url: None,
            release_memory: None,
        }
    }
}

/// Cheap to clone; one per process.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    /// Audit events of team members waiting for their batch (`workspace.rs`).
    pub(crate) audit: Arc<workspace::AuditLog>,
    /// Credential providers in registration order (`vault` first).
    pub(crate) providers: credentials::providers::Providers,
    pub(crate) sandbox: SandboxPool,
    pub(crate) mcp: McpClient,
    pub(crate) call_limits: executions::call_limits::CallLimits,
    /// Pooled HTTP client for OpenAPI and GraphQL upstreams (keep-alive across executions).
    /// Built on first use or by [`Engine::warm_up`]; see [`Inner::http`].
    http: std::sync::OnceLock<reqwest::Client>,
    pub(crate) documents: kinds::Documents,
    /// The async runtime that owns IO; host calls made from the JS threads are spawned here.
    pub(crate) io: tokio::runtime::Handle,
    pub(crate) executions: executions::Registry,
    pub(crate) admission: executions::Admission,
    pub(crate) pause_ttl: Duration,
    pub(crate) history_retention: Duration,
    /// Writes executions that never paused, in batches.
    pub(crate) history: executions::history::HistoryWriter,
    /// Starts, pauses and settles, for whoever watches.
    pub(crate) feed: executions::feed::Feed,
    /// Fires when integrations or connections change, so agent surfaces can say their tool
    /// list changed.
    pub(crate) catalog_changed: tokio::sync::broadcast::Sender<()>,
    /// Moves whenever any tool list may have changed; caches compare against it.
    pub(crate) catalog_generation: std::sync::atomic::AtomicU64,
    pub(crate) search_index: core_tools::IndexCache,
    /// The core tools' declarations (`core_tools` implements them), for the catalog and
    /// policies.
    pub(crate) core_tools: &'static [static_tool::StaticTool],
    pub(crate) freshness: catalog::Freshness,
    pub(crate) policies: policies::PolicyCache,
    pub(crate) tool_cache: catalog::tool_cache::ToolCache,
    pub(crate) connection_cache: catalog::tool_cache::ConnectionCache,
    /// The tools waiting for a person to accept a change of their definition, per tenant and
    /// subject, for the current catalog generation.
    pub(crate) pending_changes: catalog::tool_cache::PendingChanges,
    /// OpenAPI tools' compiled argument checks.
    pub(crate) openapi_validators: kinds::openapi::Validators,
    /// One OAuth refresh in flight per connection.
    pub(crate) oauth_refresh: credentials::oauth::RefreshLocks,
    /// Other processes (replicas) write this database too (the store announces their writes).
    pub(crate) shares_database: bool,
    /// Whether that shared database answers now.
    pub(crate) database: database::DatabaseState,
    /// Callback results awaiting `GET /api/oauth/await/:sessionId`.
    pub(crate) oauth_results: credentials::oauth::CallbackResults,
    /// The configured web base URL, else the HTTP server's address (set once it listens).
    /// Core tools build browser links and OAuth redirect URIs from it.
    pub(crate) web_base_url: std::sync::OnceLock<String>,
    pub(crate) release_memory: Option<ReleaseMemory>,
}

impl Inner {
    /// What the integration kinds may use, for `caller`.
    pub(crate) fn kind_env<'a>(&'a self, caller: &'a Caller) -> kinds::KindEnv<'a> {
        kinds::KindEnv {
            caller,
            store: &*self.store,
            http: &self.http,
            build_http: upstream_http_client,
            network: self.mcp.config().network,
            mcp: &self.mcp,
            documents: &self.documents,
            openapi_validators: &self.openapi_validators,
            generation: self
                .catalog_generation
                .load(std::sync::atomic::Ordering::Acquire),
            credentials: self,
            call_timeout: self.call_limits.config.call_timeout,
            max_output_bytes: self.call_limits.config.max_output_bytes,
        }
    }

    /// `Err` when `url`'s host is an address the server does not connect to: checked before a
    /// request so it is not even dialled (the client itself checks every connection it makes).
    pub(crate) fn check_url(
        &self,
        url: &str,
    ) -> Result<(), executor_core::network::AddressNotAllowed> {
        executor_mcp::network::check_url(self.mcp.config().network, url)
    }

    /// The upstream HTTP client (OpenAPI, GraphQL, OAuth), built on first use.
    pub(crate) fn http(&self) -> &reqwest::Client {
        self.http
            .get_or_init(|| upstream_http_client(self.mcp.config().network))
    }
}

/// Timeouts are per call (the kinds set them). Redirects are followed as `fetch` would; every
/// connection goes only where `network` allows.
fn upstream_http_client(network: executor_core::network::NetworkAccess) -> reqwest::Client {
    executor_mcp::network::guarded(reqwest::Client::builder(), network)
        .tcp_nodelay(true)
        .build()
        .expect("the upstream HTTP client's settings are valid")
}

impl Engine {
    /// Must be called from within the tokio runtime that will serve IO.
    pub fn new(store: Arc<dyn Store>, config: EngineConfig) -> Self {
        // One call timeout for every kind; the MCP client's also pauses while a person answers
        // an elicitation of the call.
        let mcp = McpClient::new(McpClientConfig {
            call_timeout: config.calls.call_timeout,
            ..config.mcp.clone()
        });
        let io = tokio::runtime::Handle::current();
        let history = executions::history::HistoryWriter::spawn(&io, store.clone());
        let providers = credentials::providers::Providers::new(store.clone(), &config.providers);
        let inner = Arc::new(Inner {
            shares_database: store.catalog_changes().is_some(),
            database: database::DatabaseState::default(),
            store,
            audit: Arc::default(),
            providers,
            sandbox: match config.js_threads {
                JsThreads::Dedicated(threads) => SandboxPool::new(
                    config.sandbox.clone(),
                    threads,
                    config.max_concurrent_executions,
                ),
                JsThreads::Shared {
                    executions,
                    spill_threads,
                } => SandboxPool::sharing(
                    config.sandbox.clone(),
                    spill_threads,
                    config.max_concurrent_executions,
                    io.clone(),
                    executions,
                ),
            },
            mcp,
            call_limits: executions::call_limits::CallLimits::new(config.calls.clone()),
            http: std::sync::OnceLock::new(),
            documents: kinds::Documents::default(),
            io,
            executions: executions::Registry::default(),
            admission: executions::Admission::new(config.max_queued_executions, config.queue_wait),
            pause_ttl: config.pause_ttl,
            history_retention: config.history_retention,
            history,
            catalog_changed: tokio::sync::broadcast::channel(16).0,
            feed: executions::feed::Feed::default(),
            catalog_generation: std::sync::atomic::AtomicU64::new(0),
            search_index: core_tools::IndexCache::default(),
            core_tools: core_tools::STATIC_TOOLS,
            freshness: catalog::Freshness::default(),
            policies: policies::PolicyCache::default(),
            tool_cache: catalog::tool_cache::ToolCache::default(),
            connection_cache: catalog::tool_cache::ConnectionCache::default(),
            pending_changes: catalog::tool_cache::PendingChanges::default(),
            openapi_validators: kinds::openapi::Validators::default(),
            oauth_refresh: credentials::oauth::RefreshLocks::default(),
            oauth_results: credentials::oauth::CallbackResults::default(),
            web_base_url: match config.web_base_url.as_deref().map(str::trim) {
                Some(base) if !base.is_empty() => base.trim_end_matches('/').to_owned().into(),
                _ => std::sync::OnceLock::new(),
            },
            release_memory: config.release_memory.clone(),
        });
        catalog::watch_list_changed(&inner);
        catalog::follow_other_replicas(&inner);
        executions::spawn_sweeper(&inner);
        database::watch(&inner);
        Engine { inner }
    }

    /// Builds the upstream HTTP clients now rather than at the first call: each loads the
    /// system's root certificates (hundreds of files), which is most of a cold start when done
    /// before the server listens, so the server runs this once it is listening. Skipped while
    /// there is no integration: nothing would call upstream, and the clients would only hold
    /// memory (≈ 2 MiB of an idle server); their first use builds them.
    pub async fn warm_up(&self) {
        if let Ok(false) = self.inner.store.any_integration().await {
            return;
        }
        let inner = self.inner.clone();
        let _ = tokio::task::spawn_blocking(move || {
            inner.http();
            inner.mcp.warm_up();
        })
        .await;
    }

    /// Tells the engine where its HTTP server listens (`http://host:port`). A configured web
    /// base URL wins; otherwise the first address given is kept.
    pub fn serving_at(&self, base_url: &str) {
        let _ = self
            .inner
            .web_base_url
            .set(base_url.trim_end_matches('/').to_owned());
    }

    /// Where people reach this executor in a browser, if known: the configured base URL, else
    /// the HTTP server's address. `None` when nothing serves HTTP (stdio without a server).
    pub fn web_base_url(&self) -> Option<&str> {
        self.inner.web_base_url.get().map(String::as_str)
    }

    /// Whether other processes (replicas) share this engine's database.
    pub fn shares_database(&self) -> bool {
        self.inner.shares_database
    }

    /// Whether the database answered its last probe (always, for a database this process
    /// owns): the readiness view, and what the server checks before it serves a request.
    pub fn database_ready(&self) -> bool {
        self.inner.database.ready()
    }

    /// Live downstream MCP sessions (pooled or leased).
    pub fn live_mcp_sessions(&self) -> usize {
        self.inner.mcp.live_sessions()
    }

    /// A receiver that gets a message whenever integrations or connections change.
    pub fn subscribe_catalog_changes(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.inner.catalog_changed.subscribe()
    }

    /// Integrations or connections changed: agent surfaces hear of it, caches rebuild.
    pub(crate) fn catalog_changed(&self) {
        self.tools_changed();
        let _ = self.inner.catalog_changed.send(());
    }

    /// Some connection's tools changed: caches rebuild on their next read.
    pub(crate) fn tools_changed(&self) {
        self.inner
            .catalog_generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Abandons live paused executions (they stay paused in the store, resumable by the next
    /// process) and closes every downstream session.
    pub async fn shutdown(&self) {
        self.inner
            .executions
            .shutdown(executions::SHUTDOWN_CALL_GRACE)
            .await;
        self.inner.history.flush().await;
        self.inner.mcp.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use executor_store::{IntegrationRecord, SqlStore};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn warm_up_builds_the_http_clients_only_once_an_integration_exists() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqlStore::open(dir.path()).await.unwrap());
        let scope = executor_store::Scope::local("warm-up-test");
        let engine = Engine::new(
            store.clone(),
            EngineConfig::with_js_timeout(Duration::from_secs(5)),
        );
        engine.warm_up().await;
        assert!(
            engine.inner.http.get().is_none(),
            "built with no integration"
        );

        let integration = IntegrationRecord {
            slug: "remote".to_owned(),
            plugin_id: "mcp".to_owned(),
            name: None,
            description: None,
            config: serde_json::json!({"transport": "remote", "endpoint": "http://127.0.0.1:9/mcp"}),
            can_remove: true,
            can_refresh: true,
            config_revised_at: None,
            created_at: 0,
            updated_at: 0,
        };
        store
            .insert_integration(&scope, &integration)
            .await
            .unwrap();
        engine.warm_up().await;
        assert!(
            engine.inner.http.get().is_some(),
            "not built with an integration"
        );
        engine.shutdown().await;
    }
}
