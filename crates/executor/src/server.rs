//! Running the server: data directory, engine, HTTP listener, signals, graceful shutdown.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use executor_engine::{Caller, Engine, EngineConfig, JsThreads, ProvidersConfig};
use executor_store::{DataDirLock, SqlStore, StoreError};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::cli::{Database, Settings};
use crate::control::{
    auth_path, load_or_mint_token, remove_manifest_of, server_url, write_manifest,
};

/// How long in-flight requests may take to finish after a shutdown signal.
const DRAIN: Duration = Duration::from_secs(10);

pub(crate) fn run(settings: Settings) -> anyhow::Result<ExitCode> {
    init_logging();
    io_runtime()?.block_on(serve(settings))
}

/// The runtime that serves requests, owns all network IO and runs the JavaScript of executions
/// ([`JsThreads::Shared`]), hence the sandbox's thread stacks.
pub(crate) fn io_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(io_workers())
        .thread_name("executor-io")
        .thread_stack_size(executor_engine::JS_THREAD_STACK)
        .build()
        .context("starting the async runtime")
}

/// Workers of the runtime: half the CPUs, at least one (issue #8). An execution's chain — its
/// JavaScript, each tool call, the MCP session's tasks, the upstream's answer — is a handful of
/// tasks waking each other; with an idle sibling worker, tokio wakes it whenever a woken task
/// finds work, and it steals part of the chain, so calls cross threads. The other CPUs are not
/// left idle: a stretch of JS over a millisecond moves the worker's other tasks to a new thread,
/// and SQLite runs on threads of its own.
fn io_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .max(1)
}

pub(crate) fn init_logging() {
    use tracing_subscriber::EnvFilter;
    // `EXECUTOR_LOG` first, then the conventional `RUST_LOG`, else our default.
    let filter = EnvFilter::try_from_env("EXECUTOR_LOG")
        .or_else(|_| EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| EnvFilter::new("warn,executor=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// The local owner of tenant `<basename(scopeDir)>-<first 8 hex of sha256(scopeDir)>`.
fn local_caller(scope_dir: &Path) -> Caller {
    let text = scope_dir.to_string_lossy();
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let base = scope_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_owned());
    Caller::local(format!("{base}-{}", &hash[..8]))
}

/// The tenant of a shared database: one deployment is one workspace, whatever directory each
/// replica runs in. `EXECUTOR_ORG_SLUG` names it (the team server's organisation), else
/// `default`.
fn shared_caller() -> Caller {
    let slug = std::env::var("EXECUTOR_ORG_SLUG")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    Caller::local(slug)
}

/// Whose rows a server's data are: a local owner's (the tenant of their scope directory) or
/// one organisation's (the team server, and every server on a shared database).
#[derive(Clone, Copy)]
pub(crate) enum Tenancy<'a> {
    ScopeDir(&'a Path),
    Organisation,
}

/// The data directory opened by this process: the store (owner lock held) and its engine.
pub(crate) struct Opened {
    pub(crate) store: Arc<SqlStore>,
    pub(crate) engine: Engine,
    /// Who this process acts for: the local owner of the scope directory's tenant.
    pub(crate) caller: Caller,
    /// With PostgreSQL the store holds no lock: this keeps the data directory (manifest, token,
    /// logs) to this process.
    _dir_lock: Option<DataDirLock>,
}

pub(crate) enum OpenError {
    /// Another process owns the data directory.
    Locked(StoreError),
    Other(anyhow::Error),
}

/// Takes the data directory's owner lock (creating the directory 0700), touching no database.
pub(crate) fn lock_data_dir(data_dir: &Path) -> Result<DataDirLock, OpenError> {
    match SqlStore::lock_data_dir(data_dir) {
        Ok(lock) => Ok(lock),
        Err(e @ StoreError::Locked { .. }) => Err(OpenError::Locked(e)),
        Err(e) => Err(OpenError::Other(anyhow::Error::new(e).context(format!(
            "opening the data directory {}",
            data_dir.display()
        )))),
    }
}

/// Opens the data directory (taking the owner lock) and builds the engine over it. Must run
/// inside the IO runtime.
pub(crate) async fn open_engine(
    data_dir: &Path,
    database: &Database,
    scope_dir: &Path,
    execution_timeout: Duration,
    pause_ttl: Duration,
    calls: executor_engine::CallLimitsConfig,
) -> Result<Opened, OpenError> {
    let lock = lock_data_dir(data_dir)?;
    open_engine_locked(
        data_dir,
        lock,
        database,
        Tenancy::ScopeDir(scope_dir),
        Exposure::LOCAL,
        execution_timeout,
        pause_ttl,
        calls,
    )
    .await
}

/// What the server may do on its host on behalf of the people it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exposure {
    /// Spawn stdio MCP servers (commands on the host).
    pub(crate) allow_stdio_mcp: bool,
    /// Where upstream servers may be.
    pub(crate) network: executor_core::network::NetworkAccess,
}

impl Exposure {
    /// A local server (`web`, `daemon`, `mcp`): its one user owns the host already.
    pub(crate) const LOCAL: Exposure = Exposure {
        allow_stdio_mcp: true,
        network: executor_core::network::NetworkAccess::LOCAL,
    };
}

/// [`open_engine`] once the owner lock is held: migrations, the engine, and the undoing of
/// creates a previous process died in.
// Each argument is one validated setting of the command line; a struct of them is issue #33's.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn open_engine_locked(
    data_dir: &Path,
    lock: DataDirLock,
    database: &Database,
    tenancy: Tenancy<'_>,
    exposure: Exposure,
    execution_timeout: Duration,
    pause_ttl: Duration,
    calls: executor_engine::CallLimitsConfig,
) -> Result<Opened, OpenError> {
    let (opened, dir_lock) = match database {
        Database::DataDir => (SqlStore::open_with_lock(data_dir, lock).await, None),
        Database::Postgres { url, key } => (
            SqlStore::connect_postgres(url, key.clone()).await,
            Some(lock),
        ),
    };
    let store = match opened {
        Ok(store) => Arc::new(store),
        Err(e) => {
            let what = match database {
                Database::DataDir => format!("opening the data directory {}", data_dir.display()),
                Database::Postgres { url, .. } => {
                    format!("opening the PostgreSQL database {}", without_password(url))
                }
            };
            return Err(OpenError::Other(anyhow::Error::new(e).context(what)));
        }
    };
    // The team server is one organisation wherever it runs; so is a shared database.
    let caller = match database {
        Database::DataDir => match tenancy {
            Tenancy::ScopeDir(dir) => local_caller(dir),
            Tenancy::Organisation => shared_caller(),
        },
        Database::Postgres { .. } => shared_caller(),
    };
    let engine = Engine::new(
        store.clone(),
        EngineConfig {
            pause_ttl,
            calls,
            release_memory: Some(executor_engine::ReleaseMemory(Arc::new(crate::trim_heap))),
            // `file` reads $EXECUTOR_DATA_DIR/auth.json (or the XDG data home); `keychain` is
            // tried in builds with the `keychain` feature.
            providers: ProvidersConfig {
                auth_file: executor_engine::auth_file_from_env(),
                keychain: true,
            },
            // Else the HTTP server's address, once it listens.
            web_base_url: std::env::var(executor_server::WEB_BASE_URL_ENV).ok(),
            // One execution per IO worker shares it; more at once spill to JS threads of their
            // own, so a busy server uses every CPU (issue #8).
            js_threads: JsThreads::Shared {
                executions: io_workers(),
                spill_threads: std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2),
            },
            mcp: executor_mcp::McpClientConfig {
                allow_stdio: exposure.allow_stdio_mcp,
                network: exposure.network,
                ..executor_mcp::McpClientConfig::default()
            },
            ..EngineConfig::with_js_timeout(execution_timeout)
        },
    );
    // Before anything is served: a pending row now is a create nobody will answer, and MCP
    // configs of older builds hold static credentials in clear.
    let healed = match engine.discard_interrupted_creates(&caller).await {
        Ok(_) => engine.seal_legacy_mcp_values(&caller).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = healed {
        let opened = Opened {
            store,
            engine,
            caller,
            _dir_lock: dir_lock,
        };
        opened.close().await;
        return Err(OpenError::Other(
            anyhow::Error::new(e).context("repairing the data directory at start"),
        ));
    }
    Ok(Opened {
        store,
        engine,
        caller,
        _dir_lock: dir_lock,
    })
}

/// A database URL fit for a log line or an error: its password replaced.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(an unreadable URL)".to_owned(),
    }
}

impl Opened {
    /// Drops paused executions, closes downstream sessions and the store.
    pub(crate) async fn close(self) {
        self.engine.shutdown().await;
        drop(self.engine);
        if let Ok(store) = Arc::try_unwrap(self.store) {
            store.close().await;
        }
    }
}

async fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    // The owner lock, then the port, and only then the database: a server that cannot serve
    // (the directory is owned, the port taken) must not migrate a schema another process uses.
    let lock = match lock_data_dir(&settings.data_dir) {
        Ok(lock) => lock,
        Err(OpenError::Locked(e)) => {
            eprintln!("executor: {e}");
            return Ok(ExitCode::from(3));
        }
        Err(OpenError::Other(e)) => return Err(e),
    };
    // The token before the port: a client that connects as soon as it is bound reads the token
    // file then, and must find the token this server will check.
    let token = match &settings.auth_token {
        Some(token) => Some(token.clone()),
        None if settings.team => None,
        None => Some(load_or_mint_token(&settings.data_dir)?),
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(settings.bind))
        .await
        .with_context(|| format!("binding {}:{}", settings.bind.0, settings.bind.1))?;
    let opened = match open_engine_locked(
        &settings.data_dir,
        lock,
        &settings.database,
        if settings.team {
            Tenancy::Organisation
        } else {
            Tenancy::ScopeDir(&settings.scope_dir)
        },
        settings.exposure(),
        settings.execution_timeout,
        settings.pause_ttl,
        settings.calls.clone(),
    )
    .await
    {
        Ok(opened) => opened,
        Err(OpenError::Locked(e)) => {
            eprintln!("executor: {e}");
            return Ok(ExitCode::from(3));
        }
        Err(OpenError::Other(e)) => return Err(e),
    };
    let local = listener.local_addr().context("reading the bound address")?;
    let shutdown = CancellationToken::new();
    let url = server_url(local.ip(), local.port());
    let team = if settings.team {
        match crate::team::accounts(&opened, &url).await {
            Ok(accounts) => Some(accounts),
            Err(e) => {
                opened.close().await;
                return Err(e);
            }
        }
    } else {
        None
    };
    let config = executor_server::ServeConfig {
        allowed_hosts: settings.allowed_hosts.clone(),
        auth_token: token.clone(),
        mcp_sessions: settings.mcp_sessions,
        caller: Some(opened.caller.clone()),
        data_dir: Some(settings.data_dir.display().to_string()),
        team: team.clone(),
    };
    // The upstream HTTP clients load the system's root certificates: done once listening, so a
    // start is not kept waiting for them, and before the first call, which then does not either
    // (only when an integration exists: an empty server would just hold them, see `warm_up`).
    let warm = opened.engine.clone();
    tokio::spawn(async move { warm.warm_up().await });
    let kind = if settings.foreground_web {
        "foreground"
    } else {
        "daemon"
    };
    // The team server is reached by its base URL and signed in to, not found by the local
    // commands through the manifest and its token.
    let manifest = match write_manifest(&settings.data_dir, &settings.scope_dir, &url, kind) {
        _ if settings.team => None,
        Ok(path) => Some(path),
        Err(e) => {
            tracing::warn!(error = %e, "could not write the server manifest; `executor mcp` will not find this server");
            None
        }
    };
    // Serving only once the manifest is written: whoever sees this server answer (a starting
    // client, `daemon run`) finds its record too.
    let server = tokio::spawn(executor_server::serve_with(
        listener,
        opened.engine.clone(),
        config,
        shutdown.clone(),
        DRAIN,
    ));
    println!("Executor is running at {url}");
    if let Some(accounts) = &team {
        crate::team::announce(accounts).await;
    } else if let Some(token) = &token
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        // The token opens the API: shown to a person at a terminal, never written to a log file.
        println!("Open {url}/?_token={token} in your browser to use it.");
    } else if settings.auth_token.is_some() {
        println!("API token: the one given (send it as `Authorization: Bearer <token>`)");
    } else {
        println!(
            "API token: {} (send it as `Authorization: Bearer <token>`)",
            auth_path(&settings.data_dir).display()
        );
    }
    match &settings.database {
        Database::DataDir => {
            tracing::info!(data_dir = %settings.data_dir.display(), "ready");
        }
        Database::Postgres { url, .. } => tracing::info!(
            data_dir = %settings.data_dir.display(),
            database = %without_password(url),
            "ready"
        ),
    }

    wait_for_signal().await;
    tracing::info!("shutting down");
    if manifest.is_some() {
        remove_manifest_of(&settings.data_dir, std::process::id());
    }
    shutdown.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "server task failed"),
    }
    opened.close().await;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
