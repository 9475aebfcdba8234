//! executor-store: persistence of Executor behind the [`Store`] trait.
//!
//! Integrations (tenant-scoped catalog rows), connections (saved credentials per integration and
//! owner), the tools produced per connection with their shared schema definitions, and a
//! provisional secret table. [`SqlStore`] is the embedded implementation (one `data.db` in WAL
//! mode under the data directory, guarded by an exclusive owner lock); the trait leaves room for
//! a PostgreSQL implementation.
//!
//! Owner rules (spec §1.1): owned rows carry `(tenant, owner, subject)`. `org` rows are stored
//! with subject `""` and are visible to every subject of the tenant; `user` rows carry the subject
//! and are visible only to it. Writing a `user` row without a subject is [`StoreError::NoSubject`].

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{Map, Value};

mod accounts;
mod executions;
mod lock;
mod sql;
mod toolkits;
mod vault;

pub use accounts::{
    AccountStore, AttemptLimit, AuditFilter, AuditRecord, ClientRecord, GrantKind, GrantRecord,
    GrantStatus, InviteRecord, MemberChange, Reservation, TokenKind, TokenRecord, UserRecord,
};
pub use executions::{
    ExecutionCallRecord, ExecutionFilter, ExecutionRecord, ExecutionStatus, ExecutionStore,
    ExecutionSummary,
};
pub use sql::{Backend, DataDirLock, SqlStore};
pub use toolkits::{ToolkitEntryKind, ToolkitEntryRecord, ToolkitRecord, ToolkitStore};
pub use vault::{MasterKey, SECRET_KEY_ENV, SECRET_KEY_FILE};

/// Re-exported so callers can name these without depending on `executor-core` directly.
pub use executor_core::{Owner, ToolAddress};

/// The schema version this build writes and understands (stored in the `meta` table).
pub const SCHEMA_VERSION: i64 = 14;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Who is asking: the tenant and, when known, the acting subject (local: `Some("local")`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    pub tenant: String,
    pub subject: Option<String>,
}

impl Scope {
    pub fn new(tenant: impl Into<String>, subject: Option<String>) -> Self {
        Self {
            tenant: tenant.into(),
            subject,
        }
    }

    /// The local scope: the given tenant with subject `"local"`.
    pub fn local(tenant: impl Into<String>) -> Self {
        Self::new(tenant, Some("local".to_owned()))
    }

    /// The stored subject for a row owned by `owner`: `""` for `org`, the subject for `user`
    /// (`None` when this scope has no subject).
    pub fn subject_for(&self, owner: Owner) -> Option<&str> {
        match owner {
            Owner::Org => Some(""),
            Owner::User => self.subject.as_deref().filter(|s| !s.is_empty()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IntegrationRecord {
    pub slug: String,
    pub plugin_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// Plugin-private JSON.
    pub config: Value,
    pub can_remove: bool,
    pub can_refresh: bool,
    /// Epoch ms of the last tool-affecting config change.
    pub config_revised_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The identity of a connection: `(owner, integration, name)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionKey {
    pub owner: Owner,
    pub integration: String,
    pub name: String,
}

impl ConnectionKey {
    pub fn new(owner: Owner, integration: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            owner,
            integration: integration.into(),
            name: name.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionRecord {
    pub owner: Owner,
    pub integration: String,
    pub name: String,
    pub template: String,
    pub provider: String,
    /// `{variable: itemId}`.
    pub item_ids: Value,
    pub identity_label: Option<String>,
    pub description: Option<String>,
    pub last_health: Option<Value>,
    pub tools_synced_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The OAuth columns, when the connection was minted by OAuth (it has an OAuth client).
    /// Read-only here: filled on read, ignored by `upsert_connection`; written by
    /// `save_oauth_tokens`.
    pub oauth: Option<ConnectionOAuth>,
}

impl ConnectionRecord {
    pub fn key(&self) -> ConnectionKey {
        ConnectionKey::new(self.owner, self.integration.clone(), self.name.clone())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolRecord {
    pub integration: String,
    pub owner: Owner,
    pub connection: String,
    pub plugin_id: String,
    pub name: String,
    pub description: String,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub annotations: Option<Value>,
    /// How the integration kind calls the tool (an OpenAPI operation, a GraphQL field); never
    /// shown to agents.
    pub binding: Option<Value>,
}

impl ToolRecord {
    pub fn address(&self) -> ToolAddress {
        ToolAddress {
            integration: self.integration.clone(),
            owner: self.owner,
            connection: self.connection.clone(),
            tool: self.name.clone(),
        }
    }

    pub fn summary(&self) -> ToolSummary {
        ToolSummary {
            integration: self.integration.clone(),
            owner: self.owner,
            connection: self.connection.clone(),
            plugin_id: self.plugin_id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            annotations: self.annotations.clone(),
        }
    }
}

/// The definition of a tool record as its fingerprint covers it (name, description, schemas,
/// annotations; not the binding, which is how a kind calls it).
pub fn tool_definition(tool: &ToolRecord) -> executor_core::tool_change::ToolDefinition {
    executor_core::tool_change::ToolDefinition {
        name: tool.name.clone(),
        description: tool.description.clone(),
        input_schema: tool.input_schema.clone(),
        output_schema: tool.output_schema.clone(),
        annotations: tool.annotations.clone(),
    }
}

/// The list projection of a tool: everything in [`ToolRecord`] except the two schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSummary {
    pub integration: String,
    pub owner: Owner,
    pub connection: String,
    pub plugin_id: String,
    pub name: String,
    pub description: String,
    pub annotations: Option<Value>,
}

impl ToolSummary {
    pub fn address(&self) -> ToolAddress {
        ToolAddress {
            integration: self.integration.clone(),
            owner: self.owner,
            connection: self.connection.clone(),
            tool: self.name.clone(),
        }
    }
}

/// One recorded change of a tool's definition between two listings of its connection (issue
/// #39): what changed, the definitions before and after, and whether a person must accept it
/// before the tool runs without asking again.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolChangeRecord {
    pub id: String,
    pub integration: String,
    pub owner: Owner,
    pub connection: String,
    pub tool: String,
    /// `added`, `removed` or `changed`.
    pub kind: String,
    /// The changed fields of a `changed` tool (`description`, `inputSchema`, `outputSchema`,
    /// `annotations`); empty otherwise.
    pub fields: Vec<String>,
    /// `executor_core::tool_change::ToolDefinition` JSON; `None` for an added tool.
    pub before: Option<Value>,
    /// `None` for a removed tool.
    pub after: Option<Value>,
    pub before_fingerprint: Option<String>,
    pub after_fingerprint: Option<String>,
    /// The annotations ask for less caution than before.
    pub escalated: bool,
    /// The tool's calls pause for a person until someone accepts this change.
    pub requires_acceptance: bool,
    pub detected_at: i64,
    pub accepted_at: Option<i64>,
    pub accepted_by: Option<String>,
}

impl ToolChangeRecord {
    pub fn address(&self) -> ToolAddress {
        ToolAddress {
            integration: self.integration.clone(),
            owner: self.owner,
            connection: self.connection.clone(),
            tool: self.tool.clone(),
        }
    }
}

/// Which recorded tool changes to list (newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolChangeFilter {
    /// Only the change of this id.
    pub id: Option<String>,
    pub integration: Option<String>,
    pub owner: Option<Owner>,
    pub connection: Option<String>,
    /// Only changes that still wait for a person's acceptance.
    pub pending_only: bool,
    /// At most this many (the store caps it at 500).
    pub limit: Option<u32>,
}

/// A stored tool policy. Pattern, action and position are validated by the engine (the
/// grammar lives in `executor_core::policy`); the store keeps them as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRecord {
    pub id: String,
    pub owner: Owner,
    pub pattern: String,
    pub action: String,
    pub position: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Set at insert and never changed by an update.
    pub author: executor_core::policy::PolicyAuthor,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    pub integration: Option<String>,
    pub owner: Option<Owner>,
    pub connection: Option<String>,
    /// Case-insensitive substring over `name + " " + description`.
    pub query: Option<String>,
}

/// An OAuth client (spec §1.7), owner-scoped. The secret is a sealed item in `secret`
/// (`client_secret_item_id`); `None` for public (PKCE) clients.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthClientRecord {
    pub owner: Owner,
    pub slug: String,
    pub authorization_url: String,
    pub token_url: String,
    /// `authorization_code` or `client_credentials`.
    pub grant: String,
    pub client_id: String,
    pub client_secret_item_id: Option<String>,
    pub resource: Option<String>,
    /// `manual` or `dynamic_client_registration`.
    pub origin_kind: String,
    pub origin_integration: Option<String>,
    pub origin_issuer: Option<String>,
    pub origin_redirect_uri: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`; `None` when not known.
    pub token_endpoint_auth_method: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// An in-flight authorization-code flow, keyed by `state`. `owner` owns the connection it
/// will mint.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSessionRecord {
    pub state: String,
    pub owner: Owner,
    pub client_slug: String,
    pub client_owner: Owner,
    pub integration: String,
    pub name: String,
    pub template: String,
    pub redirect_url: String,
    pub pkce_verifier: String,
    pub identity_label: Option<String>,
    /// Flow extras (resource, scopes asked for).
    pub payload: Value,
    pub expires_at: i64,
    pub created_at: i64,
}

/// The OAuth columns of a connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionOAuth {
    pub client: Option<String>,
    pub client_owner: Option<Owner>,
    /// Secret item holding the refresh token, if the server issued one.
    pub refresh_item_id: Option<String>,
    pub expires_at: Option<i64>,
    /// Space-delimited granted scopes.
    pub scope: Option<String>,
    /// Per-connection token endpoint (regional token host).
    pub token_url: Option<String>,
    /// Scopes asked for that the grant did not include (`provider_state.missingOAuthScopes`).
    pub missing_scopes: Vec<String>,
}

#[derive(thiserror::Error, Debug)]
pub enum StoreError {
    #[error("already exists")]
    AlreadyExists,
    #[error("not found")]
    NotFound,
    /// Another process holds the owner lock of the data directory.
    #[error("{}", locked_message(path, holder_hint.as_deref()))]
    Locked {
        /// The data directory.
        path: PathBuf,
        /// What the lock file says about its holder, e.g. `"pid 123"`.
        holder_hint: Option<String>,
    },
    #[error(
        "the database was written by a newer executor (schema version {found}; this build supports up to {supported}); upgrade executor or use a different EXECUTOR_DATA_DIR"
    )]
    NewerSchema { found: i64, supported: i64 },
    /// A `user`-owned row was written from a scope without a subject.
    #[error(
        "Cannot create a personal connection: this context has no user subject (use owner \"org\")"
    )]
    NoSubject,
    /// A setting the store needs is missing or malformed (e.g. the master key).
    #[error("{0}")]
    Config(String),
    /// A stored value could not be understood (e.g. an unknown owner string).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
}

impl StoreError {
    /// Whether the database could not be reached (it is down, restarting, or every connection
    /// is busy past the acquire timeout): the request may succeed later, so it is a 503 with
    /// `Retry-After`, not a defect.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Database(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => true,
            // PostgreSQL's connection exceptions (08xxx) and shutdowns (57P01-57P03).
            sqlx::Error::Database(db) => db
                .code()
                .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
            _ => false,
        }
    }
}

fn locked_message(path: &std::path::Path, holder_hint: Option<&str>) -> String {
    let holder = match holder_hint {
        Some(hint) => format!("another executor server ({hint})"),
        None => "another executor server".to_owned(),
    };
    format!(
        "{holder} already owns the data directory {}; stop it or use a different EXECUTOR_DATA_DIR",
        path.display()
    )
}

/// A connection's token refresh, held across the processes sharing a database until
/// [`RefreshLock::release`] (or, if never released, until its connection is recycled).
#[must_use = "the lock is held until released"]
pub struct RefreshLock(Option<sqlx::Transaction<'static, sqlx::Any>>);

impl RefreshLock {
    /// No other process to hold off.
    pub fn none() -> Self {
        RefreshLock(None)
    }

    pub(crate) fn held(tx: sqlx::Transaction<'static, sqlx::Any>) -> Self {
        RefreshLock(Some(tx))
    }

    pub async fn release(self) {
        if let Some(tx) = self.0 {
            let _ = tx.rollback().await;
        }
    }
}

impl std::fmt::Debug for RefreshLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "RefreshLock(held)"
        } else {
            "RefreshLock(none)"
        })
    }
}

/// An agent's MCP session as replicas share it: who opened it, where, and the `initialize`
/// parameters a replica replays to serve it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSessionRecord {
    pub id: String,
    /// SHA-256 (hex) of the bearer token that opened it.
    pub token_hash: String,
    /// The endpoint's path below `/mcp` (`""` or `/toolkits/<slug>`).
    pub resource: String,
    pub initialize: Value,
    pub created_at: i64,
}

/// Chooses a new rule's position from the visible rules (see [`Store::insert_policy`]).
pub type PlacePolicy<'a> = &'a (dyn Fn(&[PolicyRecord]) -> String + Send + Sync);

/// Persistence of integrations, connections, tools and (provisionally) secrets.
///
/// Reads, updates and deletes of owned rows see `tenant = T AND (owner = 'org' OR (owner = 'user'
/// AND subject = S))`. A key naming `owner: User` from a scope without a subject finds nothing.
#[async_trait]
/// Executions and their journals are in the [`ExecutionStore`] supertrait, toolkits in
/// [`ToolkitStore`], the team server's accounts in [`AccountStore`].
pub trait Store: ExecutionStore + ToolkitStore + AccountStore + Send + Sync + 'static {
    /// A counter that moves when another process sharing the database changed what a catalog
    /// or a policy set resolves to (PostgreSQL replicas). `None` when this process is the
    /// database's only writer (SQLite), whose own writes are all it needs to know of.
    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<i64>> {
        None
    }

    /// Whether this process runs the deployment's background work (pause expiry, history
    /// purge, failing executions a dead process left running) now. A process that owns its
    /// database always does; of several replicas, only the holder of the database's leader
    /// lock, which passes to another replica when its holder goes away.
    async fn lead_background(&self) -> bool {
        true
    }

    /// Whether the database answers a trivial query within `timeout` (the readiness probe).
    async fn ping(&self, timeout: std::time::Duration) -> Result<()> {
        let _ = timeout;
        Ok(())
    }

    /// Holds other processes' refreshes of this connection's OAuth tokens off until the lock is
    /// released (a refresh token used twice may be refused as replayed). A process that owns its
    /// database needs none: its engine serialises refreshes itself.
    async fn lock_token_refresh(&self, scope: &Scope, key: &ConnectionKey) -> Result<RefreshLock> {
        let _ = (scope, key);
        Ok(RefreshLock::none())
    }

    /// Claims the background refresh of this connection's catalog among the processes sharing
    /// the database: `None` when another holds it. Held until released.
    async fn try_lock_catalog_refresh(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<RefreshLock>> {
        let _ = (scope, key);
        Ok(Some(RefreshLock::none()))
    }

    /// Keeps an agent MCP session's record, so another replica can serve it.
    async fn save_mcp_session(&self, rec: &McpSessionRecord) -> Result<()>;
    async fn get_mcp_session(&self, id: &str) -> Result<Option<McpSessionRecord>>;
    async fn delete_mcp_session(&self, id: &str) -> Result<()>;
    /// Forgets sessions opened before `before`; returns how many.
    async fn delete_mcp_sessions_before(&self, before: i64) -> Result<u64>;

    /// Whether any tenant has an integration (the engine warms its upstream clients only then).
    async fn any_integration(&self) -> Result<bool>;
    /// Integrations of the tenant, ordered by slug.
    async fn list_integrations(&self, scope: &Scope) -> Result<Vec<IntegrationRecord>>;
    async fn get_integration(&self, scope: &Scope, slug: &str)
    -> Result<Option<IntegrationRecord>>;
    /// `Err(AlreadyExists)` when the slug already exists in the tenant.
    async fn insert_integration(&self, scope: &Scope, rec: &IntegrationRecord) -> Result<()>;
    /// Insert or replace by slug; an existing row keeps its `created_at`.
    async fn upsert_integration(&self, scope: &Scope, rec: &IntegrationRecord) -> Result<()>;
    /// `None` = not found; a `None` field = unchanged.
    async fn update_integration_meta(
        &self,
        scope: &Scope,
        slug: &str,
        name: Option<String>,
        description: Option<String>,
    ) -> Result<Option<IntegrationRecord>>;
    /// One transaction: the integration's tools, definitions and connections (all owners and
    /// subjects of the tenant), then the row. Returns whether the integration row existed.
    async fn delete_integration(&self, scope: &Scope, slug: &str) -> Result<bool>;

    /// Visible connections, ordered by integration, owner, name.
    async fn list_connections(
        &self,
        scope: &Scope,
        integration: Option<&str>,
        owner: Option<Owner>,
    ) -> Result<Vec<ConnectionRecord>>;
    async fn get_connection(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<ConnectionRecord>>;
    /// Upsert on `(owner, integration, name)`. Re-saving keeps an existing description /
    /// identity label when the new one is `None`, and keeps `created_at`. Returns the stored row.
    async fn upsert_connection(
        &self,
        scope: &Scope,
        rec: &ConnectionRecord,
    ) -> Result<ConnectionRecord>;
    /// Inserts a new connection marked as pending creation (cleared by [`Store::replace_tools`]
    /// and [`Store::mark_sync_failed`]); `Err(AlreadyExists)` when `(owner, integration, name)`
    /// is taken, and then nothing is written.
    async fn insert_connection(
        &self,
        scope: &Scope,
        rec: &ConnectionRecord,
    ) -> Result<ConnectionRecord>;
    /// Deletes the connections still pending creation since before `created_before` (with their
    /// tools and definitions), in every owner and subject of the tenant, and returns them:
    /// creates interrupted by a crash. A process that owns the database passes now; replicas
    /// pass a time no create in progress elsewhere can be older than.
    async fn take_pending_connections(
        &self,
        scope: &Scope,
        created_before: i64,
    ) -> Result<Vec<ConnectionRecord>>;
    /// Outer `None` = unchanged, `Some(None)` = clear. `None` = not found.
    async fn update_connection_meta(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        description: Option<Option<String>>,
        identity_label: Option<Option<String>>,
    ) -> Result<Option<ConnectionRecord>>;
    /// Deletes the connection with its tools and definitions in one transaction.
    async fn delete_connection(&self, scope: &Scope, key: &ConnectionKey) -> Result<bool>;

    /// Replaces every tool and definition of the connection in one transaction, stamps
    /// `tools_synced_at = now` and clears a sync-failure `last_health`. The identity columns of
    /// the stored tools come from `key` (those on the records are ignored).
    /// `Err(NotFound)` when the connection does not exist.
    ///
    /// Each tool's definition fingerprint is stored with it and compared, in the same
    /// transaction, with the one it replaces: every added, removed or changed tool is recorded
    /// as a `tool_change` and returned (none at a connection's first sync, while its create is
    /// pending). A changed tool whose annotations got more dangerous, or whose definition is no
    /// longer the one a person accepted, or that was already waiting for acceptance, waits for a
    /// person's acceptance of the new change ([`Store::accept_tool_change`]).
    async fn replace_tools(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        tools: &[ToolRecord],
        definitions: &Map<String, Value>,
    ) -> Result<Vec<ToolChangeRecord>>;
    /// Recorded tool changes visible to the scope, newest first.
    async fn list_tool_changes(
        &self,
        scope: &Scope,
        filter: &ToolChangeFilter,
    ) -> Result<Vec<ToolChangeRecord>>;
    /// Visible tools whose calls wait for a person's acceptance of a change, with that change's id.
    async fn pending_tool_changes(&self, scope: &Scope) -> Result<Vec<(ToolAddress, String)>>;
    /// Marks a change accepted by `by` (a person) at `now`: the tool stops waiting if it was this
    /// change it waited for, and its current definition becomes the one a person accepted.
    /// `None` when no such change is visible; an accepted one is answered as it is.
    async fn accept_tool_change(
        &self,
        scope: &Scope,
        id: &str,
        by: &str,
    ) -> Result<Option<ToolChangeRecord>>;
    /// Records that a person approved a call of the tool as defined by `fingerprint` (a later
    /// change of its definition then waits for acceptance). A no-op when the tool is gone or
    /// its definition changed since.
    async fn approve_tool_definition(
        &self,
        scope: &Scope,
        address: &ToolAddress,
        fingerprint: &str,
    ) -> Result<()>;
    /// Keeps the catalog, stamps `tools_synced_at = now` and writes
    /// `last_health = {status:"degraded", detail:"Tool sync failing: <reason>", checkedAt}`.
    /// A missing connection is a no-op.
    async fn mark_sync_failed(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        reason: &str,
    ) -> Result<()>;
    /// `tools_synced_at = NULL` (re-produce on next read). A missing connection is a no-op.
    async fn mark_stale(&self, scope: &Scope, key: &ConnectionKey) -> Result<()>;

    /// Visible tools without their schemas, ordered by integration, owner, connection, name.
    async fn list_tools(&self, scope: &Scope, filter: &ToolFilter) -> Result<Vec<ToolSummary>>;
    async fn get_tool(&self, scope: &Scope, address: &ToolAddress) -> Result<Option<ToolRecord>>;
    /// The connection's shared `$defs`, in the order they were stored.
    async fn tool_definitions(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Map<String, Value>>;

    /// Policies visible to the scope (org rules and the subject's user rules), unordered.
    async fn list_policies(&self, scope: &Scope) -> Result<Vec<PolicyRecord>>;
    /// Err(AlreadyExists) when the id is taken. With `place`, the rule's position is chosen
    /// inside the write from the visible rules as they are then (`rec.position` is ignored), so
    /// rules created at once — by one process or by several replicas — never share one.
    async fn insert_policy(
        &self,
        scope: &Scope,
        rec: &PolicyRecord,
        place: Option<PlacePolicy<'_>>,
    ) -> Result<String>;
    /// Replaces pattern, action and position of the visible policy `rec.id` owned by
    /// `rec.owner` (its author stays); `None` when there is no such policy.
    async fn update_policy(
        &self,
        scope: &Scope,
        rec: &PolicyRecord,
    ) -> Result<Option<PolicyRecord>>;
    /// Whether a policy was removed.
    async fn delete_policy(&self, scope: &Scope, owner: Owner, id: &str) -> Result<bool>;

    /// Stores a document under the sha256 (lowercase hex) of its bytes and returns that hash.
    /// Storing the same bytes twice is one row.
    async fn put_blob(&self, scope: &Scope, value: &[u8]) -> Result<String>;
    async fn get_blob(&self, scope: &Scope, hash: &str) -> Result<Option<Vec<u8>>>;
    /// Whether a blob was removed.
    async fn delete_blob(&self, scope: &Scope, hash: &str) -> Result<bool>;

    /// Credential values keyed by their owner and item id, sealed at rest bound to both (see
    /// [`MasterKey`]): `org` items are the tenant's, `user` items the scope subject's alone, so
    /// two members' personal items of one id are two values. Writing a `user` item without a
    /// subject is [`StoreError::NoSubject`]; reading or deleting one finds nothing.
    async fn put_secret(
        &self,
        scope: &Scope,
        owner: Owner,
        item_id: &str,
        value: &str,
    ) -> Result<()>;
    async fn get_secret(
        &self,
        scope: &Scope,
        owner: Owner,
        item_id: &str,
    ) -> Result<Option<String>>;
    async fn delete_secret(&self, scope: &Scope, owner: Owner, item_id: &str) -> Result<()>;
    /// Item ids of `owner`'s secrets (the tenant's for `org`, the scope subject's own for
    /// `user`), ordered; never their values.
    async fn list_secret_ids(&self, scope: &Scope, owner: Owner) -> Result<Vec<String>>;

    // ---- OAuth (spec §1.7) ----

    /// Visible clients, ordered by owner, slug.
    async fn list_oauth_clients(&self, scope: &Scope) -> Result<Vec<OAuthClientRecord>>;
    async fn get_oauth_client(
        &self,
        scope: &Scope,
        owner: Owner,
        slug: &str,
    ) -> Result<Option<OAuthClientRecord>>;
    /// Insert or replace on `(owner, slug)`; keeps `created_at`.
    async fn upsert_oauth_client(&self, scope: &Scope, rec: &OAuthClientRecord) -> Result<()>;
    /// Whether a client was removed. Connections are not touched.
    async fn delete_oauth_client(&self, scope: &Scope, owner: Owner, slug: &str) -> Result<bool>;
    /// Also drops expired sessions of the tenant.
    async fn insert_oauth_session(&self, scope: &Scope, rec: &OAuthSessionRecord) -> Result<()>;
    /// Removes and returns the session (expired or not; the caller checks `expires_at`).
    async fn take_oauth_session(
        &self,
        scope: &Scope,
        state: &str,
    ) -> Result<Option<OAuthSessionRecord>>;
    async fn get_connection_oauth(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<ConnectionOAuth>>;
    /// One transaction: seals and writes `secrets` (`(item id, value)`, owned like the
    /// connection), then sets the
    /// connection's OAuth columns (and `expires_at`). `Err(NotFound)` (nothing written) when the
    /// connection does not exist.
    async fn save_oauth_tokens(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        secrets: &[(String, String)],
        oauth: &ConnectionOAuth,
    ) -> Result<()>;
}
