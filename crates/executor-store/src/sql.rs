//! The SQL implementation of [`Store`]: the embedded SQLite file, or a shared PostgreSQL
//! database. One set of statements serves both (through sqlx's `Any` driver); [`Backend`] holds
//! what differs.

mod accounts;
mod backend;
mod executions;
mod postgres;
mod toolkits;

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use executor_core::{Owner, ToolAddress, now_ms};
use serde_json::{Map, Value, json};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Executor as _, Row, Transaction};

pub use backend::Backend;

use crate::lock::OwnerLock;
use crate::vault::SEALED_PREFIX;
use crate::{
    ConnectionKey, ConnectionOAuth, ConnectionRecord, IntegrationRecord, MasterKey,
    McpSessionRecord, OAuthClientRecord, OAuthSessionRecord, PlacePolicy, PolicyRecord,
    RefreshLock, Result, SCHEMA_VERSION, SECRET_KEY_ENV, Scope, Store, StoreError,
    ToolChangeFilter, ToolChangeRecord, ToolFilter, ToolRecord, ToolSummary,
};

/// The database file inside the data directory.
pub(crate) const DB_FILE: &str = "data.db";

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Readers share the WAL concurrently; writes go through a single connection so that writers
/// queue in-process instead of racing for SQLite's write lock.
const READ_CONNECTIONS: u32 = 4;
/// `last_health.detail` prefix written by [`Store::mark_sync_failed`].
const SYNC_FAILURE_PREFIX: &str = "Tool sync failing:";

static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

macro_rules! integration_cols {
    () => {
        "slug, plugin_id, name, description, config, can_remove, can_refresh, config_revised_at, created_at, updated_at"
    };
}
macro_rules! connection_cols {
    () => {
        "owner, integration, name, template, provider, item_ids, identity_label, description, last_health, tools_synced_at, expires_at, created_at, updated_at"
    };
}
/// [`connection_cols`] plus the OAuth columns, for reads.
macro_rules! connection_read_cols {
    () => {
        concat!(
            connection_cols!(),
            ", oauth_client, oauth_client_owner, refresh_item_id, oauth_scope, oauth_token_url, provider_state"
        )
    };
}
macro_rules! tool_summary_cols {
    () => {
        "integration, owner, connection, plugin_id, name, description, annotations"
    };
}
/// Owner-policy visibility of owned rows; binds: tenant, subject.
macro_rules! visible {
    () => {
        "tenant = ? AND (owner = 'org' OR (owner = 'user' AND subject = ?))"
    };
}
/// [`visible`] for statements built at run time.
fn visible_sql() -> &'static str {
    visible!()
}
/// One connection's rows (connection, tool, definition); binds: tenant, integration, owner,
/// subject, connection name.
macro_rules! conn_key {
    ($name_col:literal) => {
        concat!(
            "tenant = ? AND integration = ? AND owner = ? AND subject = ? AND ",
            $name_col,
            " = ?"
        )
    };
}

// After the macros, which they use.
/// `AND integration = ? AND owner = ? AND connection = ?`, for the parts given: the filters of
/// the tool and tool-change listings.
fn push_address_filter(
    sql: &mut String,
    binds: &mut Vec<Option<String>>,
    integration: Option<&str>,
    owner: Option<Owner>,
    connection: Option<&str>,
) {
    if let Some(integration) = integration {
        sql.push_str(" AND integration = ?");
        binds.push(Some(integration.to_owned()));
    }
    if let Some(owner) = owner {
        sql.push_str(" AND owner = ?");
        binds.push(Some(owner.as_str().to_owned()));
    }
    if let Some(connection) = connection {
        sql.push_str(" AND connection = ?");
        binds.push(Some(connection.to_owned()));
    }
}

mod oauth;
mod tool_changes;

/// SQL persistence. On SQLite: `<data_dir>/data.db` (WAL) guarded by
/// `<data_dir>/data.db.owner-lock`. On PostgreSQL: a database any number of replicas share.
#[derive(Debug)]
pub struct SqlStore {
    backend: Backend,
    reader: AnyPool,
    writer: AnyPool,
    /// Held for the life of the store; released on drop (SQLite only).
    lock: Option<OwnerLock>,
    /// Seals credential values.
    key: MasterKey,
    /// Other replicas' writes, as they are announced (PostgreSQL only).
    changes: Option<postgres::Changes>,
    /// Which replica runs the background work (PostgreSQL only).
    leader: Option<postgres::Leader>,
}

/// Registers the drivers `Any` dispatches to, once per process.
fn install_drivers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        sqlx::any::install_drivers(&[sqlx::sqlite::any::DRIVER, sqlx::postgres::any::DRIVER])
            .expect("sqlx drivers are installed once");
    });
}

/// Set on every SQLite connection. WAL lets readers share the file with the one writer;
/// `secure_delete` zeroes deleted and overwritten rows (old sealed secrets, plaintext from older
/// builds) rather than leaving them in free pages. Foreign keys and the busy timeout are sqlx's
/// defaults.
const SQLITE_PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON";

fn sqlite_pool_options(max: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(BUSY_TIMEOUT)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(SQLITE_PRAGMAS).await?;
                Ok(())
            })
        })
}

/// The `sqlite://` URL of a database file (`?` and `#` in the path are escaped).
fn sqlite_url(path: &Path) -> Result<String> {
    const PATH: &percent_encoding::AsciiSet =
        &percent_encoding::CONTROLS.add(b'%').add(b'?').add(b'#');
    let text = path.to_str().ok_or_else(|| {
        StoreError::Config(format!(
            "the data directory {} is not UTF-8",
            path.display()
        ))
    })?;
    Ok(format!(
        "sqlite://{}?mode=rwc",
        percent_encoding::utf8_percent_encode(text, PATH)
    ))
}

impl SqlStore {
    /// Creates `data_dir` if needed, takes the owner lock `<data_dir>/data.db.owner-lock`
    /// (exclusive, non-blocking: a second owner fails at once with [`StoreError::Locked`]), opens
    /// `<data_dir>/data.db` with WAL, foreign keys, a busy timeout and `synchronous=NORMAL`, checks
    /// the schema-version guard (refusing a database written by a newer schema with
    /// [`StoreError::NewerSchema`]) and runs the migrations.
    ///
    /// Secrets are sealed with [`MasterKey::load`] (`EXECUTOR_SECRET_KEY`, else
    /// `<data_dir>/secret.key`).
    pub async fn open(data_dir: &Path) -> Result<SqlStore> {
        let lock = Self::lock_data_dir(data_dir)?;
        Self::open_with_lock(data_dir, lock).await
    }

    /// [`SqlStore::open`] with a given master key.
    pub async fn open_with_key(data_dir: &Path, key: MasterKey) -> Result<SqlStore> {
        let lock = Self::lock_data_dir(data_dir)?;
        Self::open_locked(data_dir, lock.0, key).await
    }

    /// The first half of [`SqlStore::open`]: creates `data_dir` (0700; an existing one with
    /// looser permissions is tightened) and takes its owner lock, touching no database, so a
    /// caller can check what else it needs (a port) before migrations run.
    pub fn lock_data_dir(data_dir: &Path) -> Result<DataDirLock> {
        prepare_data_dir(data_dir)?;
        Ok(DataDirLock(OwnerLock::acquire(data_dir)?))
    }

    /// The second half of [`SqlStore::open`]: the master key, the database and migrations.
    pub async fn open_with_lock(data_dir: &Path, lock: DataDirLock) -> Result<SqlStore> {
        let key = MasterKey::load(data_dir)?;
        Self::open_locked(data_dir, lock.0, key).await
    }

    async fn open_locked(data_dir: &Path, lock: OwnerLock, key: MasterKey) -> Result<SqlStore> {
        install_drivers();
        let file = data_dir.join(DB_FILE);
        // SQLite gives the `-wal` and `-shm` files the main file's mode, whatever the umask.
        private_file(&file)?;
        for suffix in ["-wal", "-shm"] {
            tighten_file(&data_dir.join(format!("{DB_FILE}{suffix}")))?;
        }
        let url = sqlite_url(&file)?;
        let writer = sqlite_pool_options(1).connect(&url).await?;
        let mut store = SqlStore {
            backend: Backend::Sqlite,
            reader: writer.clone(),
            writer,
            lock: Some(lock),
            key,
            changes: None,
            leader: None,
        };
        if let Err(e) = store.prepare().await {
            store.writer.close().await;
            return Err(e);
        }
        store.reader = sqlite_pool_options(READ_CONNECTIONS).connect(&url).await?;
        Ok(store)
    }

    /// A private in-memory database (tests). No owner lock.
    pub async fn open_in_memory() -> Result<SqlStore> {
        install_drivers();
        // One connection that is never recycled: the database lives and dies with it.
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect("sqlite::memory:")
            .await?;
        let store = SqlStore {
            backend: Backend::Sqlite,
            reader: pool.clone(),
            writer: pool,
            lock: None,
            key: MasterKey::generate(),
            changes: None,
            leader: None,
        };
        store.prepare().await?;
        Ok(store)
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://…`), runs its migrations once
    /// across replicas (under sqlx's migration lock), checks that `key` opens the secrets
    /// already sealed there, and listens for other replicas' writes. No owner lock: any number
    /// of processes share the database.
    pub async fn connect_postgres(url: &str, key: MasterKey) -> Result<SqlStore> {
        install_drivers();
        let pool = postgres::pool(url).await?;
        let store = SqlStore {
            backend: Backend::Postgres,
            reader: pool.clone(),
            writer: pool,
            lock: None,
            key,
            changes: Some(postgres::Changes::listen(url).await?),
            leader: Some(postgres::Leader::new(url)),
        };
        if let Err(e) = store.prepare().await {
            store.writer.close().await;
            return Err(e);
        }
        store.check_key().await?;
        Ok(store)
    }

    /// Which database this store speaks to.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Closes the pools (checkpointing the WAL) and then releases the owner lock.
    pub async fn close(mut self) {
        self.reader.close().await;
        self.writer.close().await;
        drop(self.lock.take());
    }

    /// A write transaction. SQLite: `BEGIN IMMEDIATE` on the one writer connection, so writers
    /// queue in-process. PostgreSQL: writes of one tenant's catalog queue on an advisory lock,
    /// so two replicas replacing one connection's tools do not interleave.
    async fn begin_write(&self, tenant: &str) -> Result<Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?),
            Backend::Postgres => {
                let mut tx = self.writer.begin().await?;
                postgres::advisory_lock(&mut tx, tenant).await?;
                Ok(tx)
            }
        }
    }

    /// A transaction of execution rows: SQLite's one writer, PostgreSQL's pool (executions are
    /// keyed by id, so no lock is needed across replicas).
    async fn begin_journal(&self) -> Result<Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?),
            Backend::Postgres => Ok(self.writer.begin().await?),
        }
    }

    /// Schema guard and migrations, then the owner-less secrets of older builds.
    async fn prepare(&self) -> Result<()> {
        self.prepare_schema().await?;
        self.adopt_unowned_secrets().await
    }
}

/// The owner lock of a data directory, taken by [`SqlStore::lock_data_dir`] and handed to
/// [`SqlStore::open_with_lock`]; dropping it releases the directory.
#[derive(Debug)]
pub struct DataDirLock(OwnerLock);

/// Credentials and tool data live here: the directory is the owner's alone (0700). One made by
/// an older build (0755) is tightened, with a log line.
fn prepare_data_dir(data_dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data_dir)?;
        let mode = std::fs::metadata(data_dir)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))?;
            tracing::info!(
                path = %data_dir.display(),
                from = format_args!("{mode:o}"),
                "tightened the data directory to mode 700"
            );
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(data_dir)?;
    Ok(())
}

/// Creates `path` empty with mode 0600 when missing, else tightens it to 0600.
pub(crate) fn private_file(path: &Path) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)?;
    tighten_file(path)
}

/// Takes group and other permissions off an existing file (a missing one is fine).
pub(crate) fn tighten_file(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = match std::fs::metadata(path) {
            Ok(meta) => meta.permissions().mode() & 0o777,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            tracing::info!(path = %path.display(), from = format_args!("{mode:o}"), "tightened to mode 600");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

impl SqlStore {
    /// Schema-version guard, then migrations, then stamp the version.
    async fn prepare_schema(&self) -> Result<()> {
        let found = self.stored_schema_version().await?;
        if let Some(found) = found
            && found > SCHEMA_VERSION
        {
            return Err(StoreError::NewerSchema {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        match self.backend {
            Backend::Sqlite => SQLITE_MIGRATOR.run(&self.writer).await?,
            Backend::Postgres => POSTGRES_MIGRATOR.run(&self.writer).await?,
        }
        sqlx::query(self.backend.sql(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        ))
        .bind(SCHEMA_VERSION.to_string())
        .execute(&self.writer)
        .await?;
        if found != Some(SCHEMA_VERSION) {
            tracing::info!(
                from = ?found,
                to = SCHEMA_VERSION,
                "store schema migrated"
            );
        }
        Ok(())
    }

    async fn stored_schema_version(&self) -> Result<Option<i64>> {
        let has_meta: Option<String> = match self.backend {
            Backend::Sqlite => {
                sqlx::query_scalar(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                )
                .fetch_optional(&self.writer)
                .await?
            }
            Backend::Postgres => {
                sqlx::query_scalar("SELECT to_regclass('meta')::text")
                    .fetch_one(&self.writer)
                    .await?
            }
        };
        if has_meta.is_none() {
            return Ok(None);
        }
        let value: Option<String> =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'schema_version'")
                .fetch_optional(&self.writer)
                .await?;
        value
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| StoreError::Corrupt(format!("schema_version {v:?}")))
            })
            .transpose()
    }

    /// Gives each owner-less secret of a build before schema 12 (`secret_unowned`) to its
    /// owner, resealed bound to it, in one transaction; a row whose owner cannot be told stays
    /// there, used by no one, with the reason (plaintext of a build before the vault is sealed
    /// in place). Logs what it moved and, at every open, what is left unattributed.
    async fn adopt_unowned_secrets(&self) -> Result<()> {
        let rows: Vec<(String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT tenant, item_id, value, created_at, updated_at FROM secret_unowned \
             WHERE unattributed IS NULL ORDER BY tenant, item_id",
        )
        .fetch_all(&self.writer)
        .await?;
        if !rows.is_empty() {
            let writers = self.secret_writers().await?;
            let mut tx = self.begin_journal().await?;
            let (mut moved, mut left) = (0usize, 0usize);
            for (tenant, item_id, stored, created_at, updated_at) in &rows {
                let value = if stored.starts_with(SEALED_PREFIX) {
                    self.key.open(tenant, item_id, stored).map_err(|_| {
                        StoreError::Config(format!(
                            "{SECRET_KEY_ENV} does not open the secrets already in this database: \
                             start with the key they were sealed with"
                        ))
                    })?
                } else {
                    stored.clone()
                };
                match writers.owner_of(tenant, item_id) {
                    Ok(subject) => {
                        sqlx::query(self.backend.sql(
                            "INSERT INTO secret \
                               (tenant, subject, item_id, value, created_at, updated_at) \
                             VALUES (?, ?, ?, ?, ?, ?) \
                             ON CONFLICT (tenant, subject, item_id) DO NOTHING",
                        ))
                        .bind(tenant)
                        .bind(subject)
                        .bind(item_id)
                        .bind(self.key.seal_owned(tenant, subject, item_id, &value)?)
                        .bind(created_at)
                        .bind(updated_at)
                        .execute(&mut *tx)
                        .await?;
                        sqlx::query(
                            self.backend
                                .sql("DELETE FROM secret_unowned WHERE tenant = ? AND item_id = ?"),
                        )
                        .bind(tenant)
                        .bind(item_id)
                        .execute(&mut *tx)
                        .await?;
                        moved += 1;
                    }
                    Err(reason) => {
                        tracing::warn!(
                            tenant = %tenant,
                            item = %item_id,
                            %reason,
                            "a secret from before schema 12 could not be given to an owner: no one can use it (see secret_unowned)"
                        );
                        sqlx::query(self.backend.sql(
                            "UPDATE secret_unowned SET unattributed = ?, value = ? \
                             WHERE tenant = ? AND item_id = ?",
                        ))
                        .bind(&reason)
                        .bind(self.key.seal(tenant, item_id, &value)?)
                        .bind(tenant)
                        .bind(item_id)
                        .execute(&mut *tx)
                        .await?;
                        left += 1;
                    }
                }
            }
            tx.commit().await?;
            tracing::info!(
                moved,
                unattributed = left,
                "secrets from before schema 12 keyed by their owners"
            );
        }
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM secret_unowned")
            .fetch_one(&self.writer)
            .await?;
        if left > 0 {
            tracing::warn!(
                count = left,
                "secrets from before schema 12 whose owner could not be told are kept unused in \
                 the table secret_unowned (column unattributed says why): their members must \
                 enter those credentials again; delete the rows once they have"
            );
        }
        Ok(())
    }

    /// Who wrote which personal secret: the connections and OAuth apps of every tenant, by the
    /// item-id prefix each writes under.
    async fn secret_writers(&self) -> Result<SecretWriters> {
        let connections: Vec<(String, String, String, String, String)> =
            sqlx::query_as("SELECT tenant, owner, subject, integration, name FROM connection")
                .fetch_all(&self.writer)
                .await?;
        let clients: Vec<(String, String, String, String)> =
            sqlx::query_as("SELECT tenant, owner, subject, slug FROM oauth_client")
                .fetch_all(&self.writer)
                .await?;
        let mut writers = SecretWriters::default();
        for (tenant, owner, subject, integration, name) in connections {
            writers.prefixes.push((
                tenant,
                format!("connection:{owner}:{integration}:{name}:"),
                subject,
            ));
        }
        for (tenant, owner, subject, slug) in clients {
            writers.exact.push((
                tenant,
                format!("oauth-client:{owner}:{slug}:secret"),
                subject,
            ));
        }
        Ok(writers)
    }

    /// Refuses a key that cannot open the secrets already in the database: a deployment whose
    /// replicas disagree on `EXECUTOR_SECRET_KEY` fails at start, not at its first call.
    async fn check_key(&self) -> Result<()> {
        let row: Option<(String, String, String, String)> = sqlx::query_as(
            "SELECT tenant, subject, item_id, value FROM secret ORDER BY updated_at DESC LIMIT 1",
        )
        .fetch_optional(&self.reader)
        .await?;
        if let Some((tenant, subject, item_id, value)) = row
            && self
                .key
                .open_owned(&tenant, &subject, &item_id, &value)
                .is_err()
        {
            return Err(StoreError::Config(format!(
                "{SECRET_KEY_ENV} does not open the secrets already in this database: \
                 every replica needs the key the first one was started with"
            )));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Row mapping

fn parse_owner(s: &str) -> Result<Owner> {
    s.parse()
        .map_err(|_| StoreError::Corrupt(format!("owner {s:?}")))
}

fn parse_json(text: &str) -> Result<Value> {
    Ok(serde_json::from_str(text)?)
}

fn opt_json(text: Option<String>) -> Result<Option<Value>> {
    text.as_deref().map(parse_json).transpose()
}

fn to_json(value: &Value) -> Result<String> {
    Ok(serde_json::to_string(value)?)
}

/// Binds a connection row's columns (`connection_cols!`, after tenant and subject) to `query`.
fn bind_connection<'q>(
    query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>,
    scope: &'q Scope,
    subject: &'q str,
    rec: &'q ConnectionRecord,
    created: i64,
) -> Result<sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>> {
    Ok(query
        .bind(&scope.tenant)
        .bind(subject)
        .bind(rec.owner.as_str())
        .bind(&rec.integration)
        .bind(&rec.name)
        .bind(&rec.template)
        .bind(&rec.provider)
        .bind(to_json(&rec.item_ids)?)
        .bind(&rec.identity_label)
        .bind(&rec.description)
        .bind(opt_to_json(rec.last_health.as_ref())?)
        .bind(rec.tools_synced_at)
        .bind(rec.expires_at)
        .bind(created)
        .bind(if rec.updated_at == 0 {
            created
        } else {
            rec.updated_at
        }))
}

fn opt_to_json(value: Option<&Value>) -> Result<Option<String>> {
    value.map(to_json).transpose()
}

fn integration_from_row(row: &AnyRow) -> Result<IntegrationRecord> {
    Ok(IntegrationRecord {
        slug: row.try_get("slug")?,
        plugin_id: row.try_get("plugin_id")?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        config: parse_json(row.try_get::<&str, _>("config")?)?,
        can_remove: flag(row, "can_remove")?,
        can_refresh: flag(row, "can_refresh")?,
        config_revised_at: row.try_get("config_revised_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn connection_from_row(row: &AnyRow) -> Result<ConnectionRecord> {
    Ok(ConnectionRecord {
        owner: parse_owner(row.try_get("owner")?)?,
        integration: row.try_get("integration")?,
        name: row.try_get("name")?,
        template: row.try_get("template")?,
        provider: row.try_get("provider")?,
        item_ids: parse_json(row.try_get::<&str, _>("item_ids")?)?,
        identity_label: row.try_get("identity_label")?,
        description: row.try_get("description")?,
        last_health: opt_json(row.try_get("last_health")?)?,
        tools_synced_at: row.try_get("tools_synced_at")?,
        expires_at: row.try_get("expires_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        oauth: oauth::connection_oauth_from_row(row)?,
    })
}

fn tool_summary_from_row(row: &AnyRow) -> Result<ToolSummary> {
    Ok(ToolSummary {
        integration: row.try_get("integration")?,
        owner: parse_owner(row.try_get("owner")?)?,
        connection: row.try_get("connection")?,
        plugin_id: row.try_get("plugin_id")?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        annotations: opt_json(row.try_get("annotations")?)?,
    })
}

fn tool_from_row(row: &AnyRow) -> Result<ToolRecord> {
    let summary = tool_summary_from_row(row)?;
    Ok(ToolRecord {
        integration: summary.integration,
        owner: summary.owner,
        connection: summary.connection,
        plugin_id: summary.plugin_id,
        name: summary.name,
        description: summary.description,
        input_schema: opt_json(row.try_get("input_schema")?)?,
        output_schema: opt_json(row.try_get("output_schema")?)?,
        annotations: summary.annotations,
        binding: opt_json(row.try_get("binding")?)?,
    })
}

/// The advisory lock's name for one connection's `what` (a token refresh, a catalog refresh).
fn connection_lock(what: &str, scope: &Scope, key: &ConnectionKey) -> String {
    format!(
        "{what}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        scope.tenant,
        key.integration,
        key.owner.as_str(),
        scope.subject_for(key.owner).unwrap_or_default(),
        key.name
    )
}

/// Every policy the scope sees; binds: tenant, subject.
const LIST_POLICIES: &str = concat!(
    "SELECT id, owner, pattern, action, position, created_at, updated_at, author FROM tool_policy WHERE ",
    visible!()
);

/// A 0/1 column as a bool (both backends store flags as integers).
pub(crate) fn flag(row: &AnyRow, column: &str) -> Result<bool> {
    Ok(row.try_get::<i64, _>(column)? != 0)
}

/// A record timestamp, or now when the caller left it at zero.
fn stamp(ms: i64) -> i64 {
    if ms == 0 { now_ms() } else { ms }
}

/// The `owner` column of a row of `what` (`policy`, `toolkit`).
fn owner_col(row: &AnyRow, what: &str) -> Result<Owner> {
    let owner: String = row.try_get("owner")?;
    owner
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("{what} owner {owner:?}")))
}

fn policy_from_row(row: &AnyRow) -> Result<PolicyRecord> {
    Ok(PolicyRecord {
        id: row.try_get("id")?,
        owner: owner_col(row, "policy")?,
        pattern: row.try_get("pattern")?,
        action: row.try_get("action")?,
        position: row.try_get("position")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        author: {
            let author: String = row.try_get("author")?;
            author
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("policy author {author:?}")))?
        },
    })
}

/// An `INSERT … integration` statement (plain or upsert) with a record's columns bound, in
/// `integration_cols!` order after the tenant.
fn bind_integration<'q>(
    backend: Backend,
    sql: &'static str,
    scope: &'q Scope,
    rec: &'q IntegrationRecord,
) -> Result<sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>> {
    let created = stamp(rec.created_at);
    let updated = if rec.updated_at == 0 {
        created
    } else {
        rec.updated_at
    };
    Ok(sqlx::query(backend.sql(sql))
        .bind(&scope.tenant)
        .bind(&rec.slug)
        .bind(&rec.plugin_id)
        .bind(&rec.name)
        .bind(&rec.description)
        .bind(to_json(&rec.config)?)
        .bind(i64::from(rec.can_remove))
        .bind(i64::from(rec.can_refresh))
        .bind(rec.config_revised_at)
        .bind(created)
        .bind(updated))
}

/// The stored subject for a write of a row owned by `owner`.
/// The item-id prefixes (connections) and ids (OAuth apps' client secrets) under which each
/// owner writes, as `(tenant, prefix or id, subject)`.
#[derive(Default)]
struct SecretWriters {
    prefixes: Vec<(String, String, String)>,
    exact: Vec<(String, String, String)>,
}

impl SecretWriters {
    /// The subject an owner-less secret belongs to: `""` (the organisation) unless its id is a
    /// personal one (`connection:user:…`, `oauth-client:user:…`), which goes to the one member
    /// whose connection or app writes under it. `Err` says why there is no such member.
    fn owner_of(&self, tenant: &str, item_id: &str) -> std::result::Result<&str, String> {
        if !(item_id.starts_with("connection:user:") || item_id.starts_with("oauth-client:user:")) {
            return Ok("");
        }
        let mut subjects: Vec<&str> = self
            .prefixes
            .iter()
            .filter(|(t, prefix, _)| t == tenant && item_id.starts_with(prefix.as_str()))
            .chain(
                self.exact
                    .iter()
                    .filter(|(t, id, _)| t == tenant && id == item_id),
            )
            .map(|(_, _, subject)| subject.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        subjects.sort_unstable();
        subjects.dedup();
        match subjects.as_slice() {
            [one] => Ok(one),
            [] => {
                Err("no personal connection or OAuth app writes under this id any more".to_owned())
            }
            many => Err(format!(
                "{} members have a personal connection or OAuth app that writes under this id, \
                 so whose value it holds cannot be told",
                many.len()
            )),
        }
    }
}

fn write_subject(scope: &Scope, owner: Owner) -> Result<&str> {
    scope.subject_for(owner).ok_or(StoreError::NoSubject)
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

// ---------------------------------------------------------------------------------------------
// Store

#[async_trait]
impl Store for SqlStore {
    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<i64>> {
        self.changes.as_ref().map(postgres::Changes::subscribe)
    }

    async fn ping(&self, timeout: Duration) -> Result<()> {
        match tokio::time::timeout(timeout, sqlx::query("SELECT 1").execute(&self.reader)).await {
            Ok(done) => done.map(|_| ()).map_err(StoreError::from),
            Err(_) => Err(StoreError::Database(sqlx::Error::PoolTimedOut)),
        }
    }

    async fn lead_background(&self) -> bool {
        match &self.leader {
            Some(leader) => leader.lead().await,
            None => true,
        }
    }

    async fn lock_token_refresh(&self, scope: &Scope, key: &ConnectionKey) -> Result<RefreshLock> {
        if self.backend != Backend::Postgres {
            return Ok(RefreshLock::none());
        }
        let mut tx = self.writer.begin().await?;
        postgres::advisory_lock(&mut tx, &connection_lock("refresh", scope, key)).await?;
        Ok(RefreshLock::held(tx))
    }

    async fn try_lock_catalog_refresh(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<RefreshLock>> {
        if self.backend != Backend::Postgres {
            return Ok(Some(RefreshLock::none()));
        }
        let mut tx = self.writer.begin().await?;
        if postgres::try_advisory_lock(&mut tx, &connection_lock("catalog", scope, key)).await? {
            Ok(Some(RefreshLock::held(tx)))
        } else {
            tx.rollback().await?;
            Ok(None)
        }
    }

    async fn save_mcp_session(&self, rec: &McpSessionRecord) -> Result<()> {
        sqlx::query(self.backend.sql(
            "INSERT INTO mcp_session (id, token_hash, resource, initialize, created_at) \
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        ))
        .bind(&rec.id)
        .bind(&rec.token_hash)
        .bind(&rec.resource)
        .bind(to_json(&rec.initialize)?)
        .bind(stamp(rec.created_at))
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn get_mcp_session(&self, id: &str) -> Result<Option<McpSessionRecord>> {
        let row = sqlx::query(self.backend.sql(
            "SELECT id, token_hash, resource, initialize, created_at FROM mcp_session WHERE id = ?",
        ))
        .bind(id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|row| {
            Ok(McpSessionRecord {
                id: row.try_get("id")?,
                token_hash: row.try_get("token_hash")?,
                resource: row.try_get("resource")?,
                initialize: parse_json(row.try_get::<&str, _>("initialize")?)?,
                created_at: row.try_get("created_at")?,
            })
        })
        .transpose()
    }

    async fn delete_mcp_session(&self, id: &str) -> Result<()> {
        sqlx::query(self.backend.sql("DELETE FROM mcp_session WHERE id = ?"))
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn delete_mcp_sessions_before(&self, before: i64) -> Result<u64> {
        Ok(sqlx::query(
            self.backend
                .sql("DELETE FROM mcp_session WHERE created_at < ?"),
        )
        .bind(before)
        .execute(&self.writer)
        .await?
        .rows_affected())
    }

    async fn any_integration(&self) -> Result<bool> {
        let row = sqlx::query(
            self.backend
                .sql("SELECT EXISTS (SELECT 1 FROM integration)"),
        )
        .fetch_one(&self.reader)
        .await?;
        Ok(row.try_get::<i64, _>(0)? != 0)
    }

    async fn list_integrations(&self, scope: &Scope) -> Result<Vec<IntegrationRecord>> {
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            integration_cols!(),
            " FROM integration WHERE tenant = ? ORDER BY slug"
        )))
        .bind(&scope.tenant)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(integration_from_row).collect()
    }

    async fn get_integration(
        &self,
        scope: &Scope,
        slug: &str,
    ) -> Result<Option<IntegrationRecord>> {
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            integration_cols!(),
            " FROM integration WHERE tenant = ? AND slug = ?"
        )))
        .bind(&scope.tenant)
        .bind(slug)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(integration_from_row).transpose()
    }

    async fn insert_integration(&self, scope: &Scope, rec: &IntegrationRecord) -> Result<()> {
        let result = bind_integration(
            self.backend,
            concat!(
                "INSERT INTO integration (tenant, ",
                integration_cols!(),
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            scope,
            rec,
        )?
        .execute(&self.writer)
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::AlreadyExists),
            Err(e) => Err(e.into()),
        }
    }

    async fn upsert_integration(&self, scope: &Scope, rec: &IntegrationRecord) -> Result<()> {
        bind_integration(
            self.backend,
            concat!(
                "INSERT INTO integration (tenant, ",
                integration_cols!(),
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (tenant, slug) DO UPDATE SET \
                   plugin_id = excluded.plugin_id, name = excluded.name, \
                   description = excluded.description, config = excluded.config, \
                   can_remove = excluded.can_remove, can_refresh = excluded.can_refresh, \
                   config_revised_at = excluded.config_revised_at, updated_at = excluded.updated_at"
            ),
            scope,
            rec,
        )?
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn update_integration_meta(
        &self,
        scope: &Scope,
        slug: &str,
        name: Option<String>,
        description: Option<String>,
    ) -> Result<Option<IntegrationRecord>> {
        let row = sqlx::query(self.backend.sql(concat!(
            "UPDATE integration SET name = coalesce(?, name), \
             description = coalesce(?, description), updated_at = ? \
             WHERE tenant = ? AND slug = ? RETURNING ",
            integration_cols!()
        )))
        .bind(name)
        .bind(description)
        .bind(now_ms())
        .bind(&scope.tenant)
        .bind(slug)
        .fetch_optional(&self.writer)
        .await?;
        row.as_ref().map(integration_from_row).transpose()
    }

    async fn delete_integration(&self, scope: &Scope, slug: &str) -> Result<bool> {
        let mut tx = self.begin_write(&scope.tenant).await?;
        for sql in [
            "DELETE FROM tool WHERE tenant = ? AND integration = ?",
            "DELETE FROM definition WHERE tenant = ? AND integration = ?",
            "DELETE FROM connection WHERE tenant = ? AND integration = ?",
        ] {
            sqlx::query(self.backend.sql(sql))
                .bind(&scope.tenant)
                .bind(slug)
                .execute(&mut *tx)
                .await?;
        }
        let deleted = sqlx::query(
            self.backend
                .sql("DELETE FROM integration WHERE tenant = ? AND slug = ?"),
        )
        .bind(&scope.tenant)
        .bind(slug)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn list_connections(
        &self,
        scope: &Scope,
        integration: Option<&str>,
        owner: Option<Owner>,
    ) -> Result<Vec<ConnectionRecord>> {
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            connection_read_cols!(),
            " FROM connection WHERE ",
            visible!(),
            " AND (?3 IS NULL OR integration = ?3) AND (?4 IS NULL OR owner = ?4) \
             ORDER BY integration, owner, name"
        )))
        .bind(&scope.tenant)
        .bind(scope.subject.as_deref())
        .bind(integration)
        .bind(owner.map(Owner::as_str))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(connection_from_row).collect()
    }

    async fn get_connection(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<ConnectionRecord>> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            connection_read_cols!(),
            " FROM connection WHERE ",
            conn_key!("name")
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(connection_from_row).transpose()
    }

    async fn upsert_connection(
        &self,
        scope: &Scope,
        rec: &ConnectionRecord,
    ) -> Result<ConnectionRecord> {
        let subject = write_subject(scope, rec.owner)?;
        let created = stamp(rec.created_at);
        let query = sqlx::query(self.backend.sql(concat!(
            "INSERT INTO connection (tenant, subject, ",
            connection_cols!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant, integration, owner, subject, name) DO UPDATE SET \
               template = excluded.template, provider = excluded.provider, \
               item_ids = excluded.item_ids, \
               identity_label = coalesce(excluded.identity_label, connection.identity_label), \
               description = coalesce(excluded.description, connection.description), \
               last_health = excluded.last_health, tools_synced_at = excluded.tools_synced_at, \
               expires_at = excluded.expires_at, updated_at = excluded.updated_at \
             RETURNING ",
            connection_read_cols!()
        )));
        let row = bind_connection(query, scope, subject, rec, created)?
            .fetch_one(&self.writer)
            .await?;
        connection_from_row(&row)
    }

    async fn insert_connection(
        &self,
        scope: &Scope,
        rec: &ConnectionRecord,
    ) -> Result<ConnectionRecord> {
        let subject = write_subject(scope, rec.owner)?;
        let created = stamp(rec.created_at);
        let query = sqlx::query(self.backend.sql(concat!(
            "INSERT INTO connection (tenant, subject, pending_create, ",
            connection_cols!(),
            ") VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
            connection_read_cols!()
        )));
        let row = bind_connection(query, scope, subject, rec, created)?
            .fetch_one(&self.writer)
            .await;
        match row {
            Ok(row) => connection_from_row(&row),
            Err(e) if is_unique_violation(&e) => Err(StoreError::AlreadyExists),
            Err(e) => Err(e.into()),
        }
    }

    async fn take_pending_connections(
        &self,
        scope: &Scope,
        created_before: i64,
    ) -> Result<Vec<ConnectionRecord>> {
        let mut tx = self.begin_write(&scope.tenant).await?;
        let rows = sqlx::query(self.backend.sql(concat!(
            "DELETE FROM connection WHERE tenant = ? AND pending_create = 1 AND created_at <= ? \
             RETURNING subject, ",
            connection_read_cols!()
        )))
        .bind(&scope.tenant)
        .bind(created_before)
        .fetch_all(&mut *tx)
        .await?;
        let mut taken = Vec::with_capacity(rows.len());
        for row in &rows {
            let record = connection_from_row(row)?;
            let subject: String = row.try_get("subject")?;
            for sql in [
                concat!("DELETE FROM tool WHERE ", conn_key!("connection")),
                concat!("DELETE FROM definition WHERE ", conn_key!("connection")),
            ] {
                sqlx::query(self.backend.sql(sql))
                    .bind(&scope.tenant)
                    .bind(&record.integration)
                    .bind(record.owner.as_str())
                    .bind(&subject)
                    .bind(&record.name)
                    .execute(&mut *tx)
                    .await?;
            }
            taken.push(record);
        }
        tx.commit().await?;
        Ok(taken)
    }

    async fn update_connection_meta(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        description: Option<Option<String>>,
        identity_label: Option<Option<String>>,
    ) -> Result<Option<ConnectionRecord>> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(concat!(
            "UPDATE connection SET \
               description = CASE WHEN ? THEN ? ELSE description END, \
               identity_label = CASE WHEN ? THEN ? ELSE identity_label END, \
               updated_at = ? \
             WHERE ",
            conn_key!("name"),
            " RETURNING ",
            connection_read_cols!()
        )))
        .bind(description.is_some())
        .bind(description.flatten())
        .bind(identity_label.is_some())
        .bind(identity_label.flatten())
        .bind(now_ms())
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_optional(&self.writer)
        .await?;
        row.as_ref().map(connection_from_row).transpose()
    }

    async fn delete_connection(&self, scope: &Scope, key: &ConnectionKey) -> Result<bool> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(false);
        };
        let mut tx = self.begin_write(&scope.tenant).await?;
        for sql in [
            concat!("DELETE FROM tool WHERE ", conn_key!("connection")),
            concat!("DELETE FROM definition WHERE ", conn_key!("connection")),
        ] {
            sqlx::query(self.backend.sql(sql))
                .bind(&scope.tenant)
                .bind(&key.integration)
                .bind(key.owner.as_str())
                .bind(subject)
                .bind(&key.name)
                .execute(&mut *tx)
                .await?;
        }
        let deleted = sqlx::query(
            self.backend
                .sql(concat!("DELETE FROM connection WHERE ", conn_key!("name"))),
        )
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn replace_tools(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        tools: &[ToolRecord],
        definitions: &Map<String, Value>,
    ) -> Result<Vec<ToolChangeRecord>> {
        let subject = write_subject(scope, key.owner)?;
        // Serialise before taking the write lock.
        let tool_rows = tools
            .iter()
            .map(|t| {
                Ok((
                    t,
                    opt_to_json(t.annotations.as_ref())?,
                    opt_to_json(t.input_schema.as_ref())?,
                    opt_to_json(t.output_schema.as_ref())?,
                    opt_to_json(t.binding.as_ref())?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let def_rows = definitions
            .iter()
            .map(|(name, schema)| Ok((name, to_json(schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let now = now_ms();

        let mut tx = self.begin_write(&scope.tenant).await?;
        // Before the stamp below, which ends a pending create.
        let (changes, carried) = self
            .compare_listing(&mut tx, scope, subject, key, tools)
            .await?;
        let synced = sqlx::query(self.backend.sql(format!(
            "UPDATE connection SET tools_synced_at = ?, pending_create = 0, \
               last_health = CASE \
                 WHEN last_health IS NOT NULL \
                  AND substr({}, 1, CAST(? AS INTEGER)) = ? THEN NULL \
                 ELSE last_health END \
             WHERE {}",
            self.backend.json_text("last_health", "detail"),
            conn_key!("name")
        )))
        .bind(now)
        .bind(SYNC_FAILURE_PREFIX.len() as i64)
        .bind(SYNC_FAILURE_PREFIX)
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if synced == 0 {
            // Dropping the transaction rolls it back.
            return Err(StoreError::NotFound);
        }
        for sql in [
            concat!("DELETE FROM tool WHERE ", conn_key!("connection")),
            concat!("DELETE FROM definition WHERE ", conn_key!("connection")),
        ] {
            sqlx::query(self.backend.sql(sql))
                .bind(&scope.tenant)
                .bind(&key.integration)
                .bind(key.owner.as_str())
                .bind(subject)
                .bind(&key.name)
                .execute(&mut *tx)
                .await?;
        }
        for (tool, annotations, input, output, binding) in tool_rows {
            let kept = carried.get(&tool.name);
            sqlx::query(self.backend.sql(
                "INSERT INTO tool (tenant, integration, owner, subject, connection, name, \
                   plugin_id, description, annotations, input_schema, output_schema, binding, \
                   fingerprint, approved_fingerprint, pending_change) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ))
            .bind(&scope.tenant)
            .bind(&key.integration)
            .bind(key.owner.as_str())
            .bind(subject)
            .bind(&key.name)
            .bind(&tool.name)
            .bind(&tool.plugin_id)
            .bind(&tool.description)
            .bind(annotations)
            .bind(input)
            .bind(output)
            .bind(binding)
            .bind(kept.map(|k| k.fingerprint.clone()))
            .bind(kept.and_then(|k| k.approved.clone()))
            .bind(kept.and_then(|k| k.pending.clone()))
            .execute(&mut *tx)
            .await?;
        }
        for (name, schema) in def_rows {
            sqlx::query(self.backend.sql(
                "INSERT INTO definition (tenant, integration, owner, subject, connection, name, \
                   schema) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ))
            .bind(&scope.tenant)
            .bind(&key.integration)
            .bind(key.owner.as_str())
            .bind(subject)
            .bind(&key.name)
            .bind(name)
            .bind(schema)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(changes)
    }

    async fn list_tool_changes(
        &self,
        scope: &Scope,
        filter: &ToolChangeFilter,
    ) -> Result<Vec<ToolChangeRecord>> {
        self.list_tool_changes_sql(scope, filter).await
    }

    async fn pending_tool_changes(&self, scope: &Scope) -> Result<Vec<(ToolAddress, String)>> {
        self.pending_tool_changes_sql(scope).await
    }

    async fn accept_tool_change(
        &self,
        scope: &Scope,
        id: &str,
        by: &str,
    ) -> Result<Option<ToolChangeRecord>> {
        self.accept_tool_change_sql(scope, id, by).await
    }

    async fn approve_tool_definition(
        &self,
        scope: &Scope,
        address: &ToolAddress,
        fingerprint: &str,
    ) -> Result<()> {
        self.approve_tool_definition_sql(scope, address, fingerprint)
            .await
    }

    async fn mark_sync_failed(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        reason: &str,
    ) -> Result<()> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(());
        };
        let now = now_ms();
        let health = json!({
            "status": "degraded",
            "detail": format!("{SYNC_FAILURE_PREFIX} {reason}"),
            "checkedAt": now,
        });
        sqlx::query(self.backend.sql(concat!(
            "UPDATE connection SET tools_synced_at = ?, last_health = ?, pending_create = 0 WHERE ",
            conn_key!("name")
        )))
        .bind(now)
        .bind(to_json(&health)?)
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn mark_stale(&self, scope: &Scope, key: &ConnectionKey) -> Result<()> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(());
        };
        sqlx::query(self.backend.sql(concat!(
            "UPDATE connection SET tools_synced_at = NULL WHERE ",
            conn_key!("name")
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn list_tools(&self, scope: &Scope, filter: &ToolFilter) -> Result<Vec<ToolSummary>> {
        let mut sql = String::from(concat!(
            "SELECT ",
            tool_summary_cols!(),
            " FROM tool WHERE ",
            visible!()
        ));
        let mut binds: Vec<Option<String>> =
            vec![Some(scope.tenant.clone()), scope.subject.clone()];
        push_address_filter(
            &mut sql,
            &mut binds,
            filter.integration.as_deref(),
            filter.owner,
            filter.connection.as_deref(),
        );
        // SQLite's lower() folds ASCII only: an ASCII needle is matched in SQL, anything else is
        // matched here with full Unicode folding.
        let mut needle_in_rust = None;
        if let Some(query) = filter.query.as_deref().filter(|q| !q.is_empty()) {
            if query.is_ascii() {
                sql.push_str(" AND ");
                sql.push_str(
                    &self
                        .backend
                        .contains_bound("lower(name || ' ' || description)"),
                );
                binds.push(Some(query.to_ascii_lowercase()));
            } else {
                needle_in_rust = Some(query.to_lowercase());
            }
        }
        sql.push_str(" ORDER BY integration, owner, connection, name");

        let mut q = sqlx::query(self.backend.sql(sql));
        for bind in binds {
            q = q.bind(bind);
        }
        let rows = q.fetch_all(&self.reader).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let tool = tool_summary_from_row(row)?;
            if let Some(needle) = &needle_in_rust {
                let hay = format!("{} {}", tool.name, tool.description).to_lowercase();
                if !hay.contains(needle.as_str()) {
                    continue;
                }
            }
            out.push(tool);
        }
        Ok(out)
    }

    async fn get_tool(&self, scope: &Scope, address: &ToolAddress) -> Result<Option<ToolRecord>> {
        let Some(subject) = scope.subject_for(address.owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            tool_summary_cols!(),
            ", input_schema, output_schema, binding FROM tool WHERE ",
            conn_key!("connection"),
            " AND name = ?"
        )))
        .bind(&scope.tenant)
        .bind(&address.integration)
        .bind(address.owner.as_str())
        .bind(subject)
        .bind(&address.connection)
        .bind(&address.tool)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(tool_from_row).transpose()
    }

    async fn tool_definitions(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(out);
        };
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT name, schema FROM definition WHERE ",
            conn_key!("connection"),
            " ORDER BY row_id"
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_all(&self.reader)
        .await?;
        for row in &rows {
            let name: String = row.try_get("name")?;
            let schema = parse_json(row.try_get::<&str, _>("schema")?)?;
            out.insert(name, schema);
        }
        Ok(out)
    }

    async fn list_policies(&self, scope: &Scope) -> Result<Vec<PolicyRecord>> {
        let rows = sqlx::query(self.backend.sql(LIST_POLICIES))
            .bind(&scope.tenant)
            .bind(scope.subject.as_deref())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(policy_from_row).collect()
    }

    async fn insert_policy(
        &self,
        scope: &Scope,
        rec: &PolicyRecord,
        place: Option<PlacePolicy<'_>>,
    ) -> Result<String> {
        let subject = write_subject(scope, rec.owner)?;
        let mut tx = self.begin_write(&scope.tenant).await?;
        let position = match place {
            Some(place) => {
                let rows = sqlx::query(self.backend.sql(LIST_POLICIES))
                    .bind(&scope.tenant)
                    .bind(scope.subject.as_deref())
                    .fetch_all(&mut *tx)
                    .await?;
                let visible = rows
                    .iter()
                    .map(policy_from_row)
                    .collect::<Result<Vec<_>>>()?;
                place(&visible)
            }
            None => rec.position.clone(),
        };
        let result = sqlx::query(self.backend.sql(
            "INSERT INTO tool_policy (tenant, owner, subject, id, pattern, action, position, created_at, updated_at, author) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ))
        .bind(&scope.tenant)
        .bind(rec.owner.as_str())
        .bind(subject)
        .bind(&rec.id)
        .bind(&rec.pattern)
        .bind(&rec.action)
        .bind(&position)
        .bind(stamp(rec.created_at))
        .bind(stamp(rec.updated_at))
        .bind(rec.author.as_str())
        .execute(&mut *tx)
        .await;
        match result {
            Ok(_) => {
                tx.commit().await?;
                Ok(position)
            }
            Err(e) if is_unique_violation(&e) => Err(StoreError::AlreadyExists),
            Err(e) => Err(e.into()),
        }
    }

    async fn update_policy(
        &self,
        scope: &Scope,
        rec: &PolicyRecord,
    ) -> Result<Option<PolicyRecord>> {
        let Some(subject) = scope.subject_for(rec.owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(
            "UPDATE tool_policy SET pattern = ?, action = ?, position = ?, updated_at = ? \
             WHERE tenant = ? AND owner = ? AND subject = ? AND id = ? \
             RETURNING id, owner, pattern, action, position, created_at, updated_at, author",
        ))
        .bind(&rec.pattern)
        .bind(&rec.action)
        .bind(&rec.position)
        .bind(now_ms())
        .bind(&scope.tenant)
        .bind(rec.owner.as_str())
        .bind(subject)
        .bind(&rec.id)
        .fetch_optional(&self.writer)
        .await?;
        row.as_ref().map(policy_from_row).transpose()
    }

    async fn delete_policy(&self, scope: &Scope, owner: Owner, id: &str) -> Result<bool> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(false);
        };
        let done = sqlx::query(self.backend.sql(
            "DELETE FROM tool_policy WHERE tenant = ? AND owner = ? AND subject = ? AND id = ?",
        ))
        .bind(&scope.tenant)
        .bind(owner.as_str())
        .bind(subject)
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn put_blob(&self, scope: &Scope, value: &[u8]) -> Result<String> {
        use sha2::Digest as _;
        let hash: String = sha2::Sha256::digest(value)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        sqlx::query(self.backend.sql(
            "INSERT INTO blob (tenant, hash, value, created_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (tenant, hash) DO NOTHING",
        ))
        .bind(&scope.tenant)
        .bind(&hash)
        .bind(value)
        .bind(now_ms())
        .execute(&self.writer)
        .await?;
        Ok(hash)
    }

    async fn get_blob(&self, scope: &Scope, hash: &str) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar(
            self.backend
                .sql("SELECT value FROM blob WHERE tenant = ? AND hash = ?"),
        )
        .bind(&scope.tenant)
        .bind(hash)
        .fetch_optional(&self.reader)
        .await?)
    }

    async fn delete_blob(&self, scope: &Scope, hash: &str) -> Result<bool> {
        let done = sqlx::query(
            self.backend
                .sql("DELETE FROM blob WHERE tenant = ? AND hash = ?"),
        )
        .bind(&scope.tenant)
        .bind(hash)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn put_secret(
        &self,
        scope: &Scope,
        owner: Owner,
        item_id: &str,
        value: &str,
    ) -> Result<()> {
        let subject = write_subject(scope, owner)?;
        let now = now_ms();
        sqlx::query(self.backend.sql(
            "INSERT INTO secret (tenant, subject, item_id, value, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant, subject, item_id) DO UPDATE SET \
               value = excluded.value, updated_at = excluded.updated_at",
        ))
        .bind(&scope.tenant)
        .bind(subject)
        .bind(item_id)
        .bind(
            self.key
                .seal_owned(&scope.tenant, subject, item_id, value)?,
        )
        .bind(now)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn get_secret(
        &self,
        scope: &Scope,
        owner: Owner,
        item_id: &str,
    ) -> Result<Option<String>> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(None);
        };
        let stored: Option<String> = sqlx::query_scalar(
            self.backend
                .sql("SELECT value FROM secret WHERE tenant = ? AND subject = ? AND item_id = ?"),
        )
        .bind(&scope.tenant)
        .bind(subject)
        .bind(item_id)
        .fetch_optional(&self.reader)
        .await?;
        stored
            .map(|s| self.key.open_owned(&scope.tenant, subject, item_id, &s))
            .transpose()
    }

    async fn delete_secret(&self, scope: &Scope, owner: Owner, item_id: &str) -> Result<()> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(());
        };
        sqlx::query(
            self.backend
                .sql("DELETE FROM secret WHERE tenant = ? AND subject = ? AND item_id = ?"),
        )
        .bind(&scope.tenant)
        .bind(subject)
        .bind(item_id)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn list_secret_ids(&self, scope: &Scope, owner: Owner) -> Result<Vec<String>> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(Vec::new());
        };
        Ok(sqlx::query_scalar(
            self.backend.sql(
                "SELECT item_id FROM secret WHERE tenant = ? AND subject = ? ORDER BY item_id",
            ),
        )
        .bind(&scope.tenant)
        .bind(subject)
        .fetch_all(&self.reader)
        .await?)
    }

    async fn list_oauth_clients(&self, scope: &Scope) -> Result<Vec<OAuthClientRecord>> {
        self.oauth_list_clients(scope).await
    }

    async fn get_oauth_client(
        &self,
        scope: &Scope,
        owner: Owner,
        slug: &str,
    ) -> Result<Option<OAuthClientRecord>> {
        self.oauth_get_client(scope, owner, slug).await
    }

    async fn upsert_oauth_client(&self, scope: &Scope, rec: &OAuthClientRecord) -> Result<()> {
        self.oauth_upsert_client(scope, rec).await
    }

    async fn delete_oauth_client(&self, scope: &Scope, owner: Owner, slug: &str) -> Result<bool> {
        self.oauth_delete_client(scope, owner, slug).await
    }

    async fn insert_oauth_session(&self, scope: &Scope, rec: &OAuthSessionRecord) -> Result<()> {
        self.oauth_insert_session(scope, rec).await
    }

    async fn take_oauth_session(
        &self,
        scope: &Scope,
        state: &str,
    ) -> Result<Option<OAuthSessionRecord>> {
        self.oauth_take_session(scope, state).await
    }

    async fn get_connection_oauth(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<ConnectionOAuth>> {
        self.oauth_get_connection(scope, key).await
    }

    async fn save_oauth_tokens(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        secrets: &[(String, String)],
        oauth: &ConnectionOAuth,
    ) -> Result<()> {
        self.oauth_save_tokens(scope, key, secrets, oauth).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_store_uses_wal_and_foreign_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqlStore::open(dir.path()).await.unwrap();
        for pool in [&store.reader, &store.writer] {
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(pool)
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
                .fetch_one(pool)
                .await
                .unwrap();
            assert_eq!(fk, 1);
            let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(pool)
                .await
                .unwrap();
            assert_eq!(sync, 1, "NORMAL");
        }
        store.close().await;
    }

    #[tokio::test]
    async fn tool_list_query_is_indexed() {
        let store = SqlStore::open_in_memory().await.unwrap();
        let sql = concat!(
            "EXPLAIN QUERY PLAN SELECT ",
            tool_summary_cols!(),
            " FROM tool WHERE ",
            visible!(),
            " AND integration = ? AND owner = ? AND connection = ?",
            " ORDER BY integration, owner, connection, name"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind("t")
            .bind("s")
            .bind("i")
            .bind("org")
            .bind("c")
            .fetch_all(&store.reader)
            .await
            .unwrap();
        let plan: Vec<String> = rows
            .iter()
            .map(|r| r.try_get::<String, _>("detail").unwrap())
            .collect();
        assert!(
            plan.iter().any(|d| d.contains("USING INDEX")),
            "plan: {plan:?}"
        );
        assert!(
            !plan.iter().any(|d| d.starts_with("SCAN tool")),
            "plan: {plan:?}"
        );
        store.close().await;
    }
}
