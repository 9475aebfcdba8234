//! Running the server: data directory, engine, HTTP listener, signals, graceful shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use executor_engine::{Caller, Engine, EngineConfig, JsThreads, ProvidersConfig};
use executor_store::{DataDirLock, SqliteStore, StoreError};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::cli::Settings;

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

/// The data directory opened by this process: the store (owner lock held) and its engine.
pub(crate) struct Opened {
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) engine: Engine,
    /// Who this process acts for: the local owner of the scope directory's tenant.
    pub(crate) caller: Caller,
}

pub(crate) enum OpenError {
    /// Another process owns the data directory.
    Locked(StoreError),
    Other(anyhow::Error),
}

/// Takes the data directory's owner lock (creating the directory 0700), touching no database.
pub(crate) fn lock_data_dir(data_dir: &Path) -> Result<DataDirLock, OpenError> {
    match SqliteStore::lock_data_dir(data_dir) {
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
    scope_dir: &Path,
    execution_timeout: Duration,
    pause_ttl: Duration,
    calls: executor_engine::CallLimitsConfig,
) -> Result<Opened, OpenError> {
    let lock = lock_data_dir(data_dir)?;
    open_engine_locked(
        data_dir,
        lock,
        scope_dir,
        execution_timeout,
        pause_ttl,
        calls,
    )
    .await
}

/// [`open_engine`] once the owner lock is held: migrations, the engine, and the undoing of
/// creates a previous process died in.
pub(crate) async fn open_engine_locked(
    data_dir: &Path,
    lock: DataDirLock,
    scope_dir: &Path,
    execution_timeout: Duration,
    pause_ttl: Duration,
    calls: executor_engine::CallLimitsConfig,
) -> Result<Opened, OpenError> {
    let store = match SqliteStore::open_with_lock(data_dir, lock).await {
        Ok(store) => Arc::new(store),
        Err(e) => {
            return Err(OpenError::Other(anyhow::Error::new(e).context(format!(
                "opening the data directory {}",
                data_dir.display()
            ))));
        }
    };
    let caller = local_caller(scope_dir);
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
    })
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

/// Where a running server announces itself: `{pid, url}`.
pub(crate) fn manifest_path(data_dir: &Path) -> PathBuf {
    data_dir.join("server-control").join("server.json")
}

/// Writes the manifest (mode 0600) atomically.
fn write_manifest(data_dir: &Path, url: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = manifest_path(data_dir);
    let dir = path.parent().expect("manifest has a parent");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".server.json.{}", std::process::id()));
    let body = serde_json::json!({"pid": std::process::id(), "url": url});
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(body.to_string().as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Where the local API's bearer token lives: `server-control/auth.json` (`{"token": …}`).
pub(crate) fn auth_path(data_dir: &Path) -> PathBuf {
    data_dir.join("server-control").join("auth.json")
}

/// The data directory's API token: read, or minted on first start (32 random bytes, base64url,
/// file mode 0600 in a 0700 directory).
pub(crate) fn load_or_mint_token(data_dir: &Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(token) = read_token(data_dir) {
        return Ok(token);
    }
    let path = auth_path(data_dir);
    let dir = path.parent().expect("auth file has a parent");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let bytes: [u8; 32] = rand::random();
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let tmp = dir.join(format!(".auth.json.{}", std::process::id()));
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        file.write_all(serde_json::json!({ "token": token }).to_string().as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(token)
}

/// The token of a data directory, if one was minted.
pub(crate) fn read_token(data_dir: &Path) -> Option<String> {
    let bytes = std::fs::read(auth_path(data_dir)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Removes the manifest if it is still ours.
fn remove_manifest(path: &Path) {
    let ours = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["pid"].as_u64() == Some(u64::from(std::process::id())));
    if ours && let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(error = %e, path = %path.display(), "could not remove the server manifest");
    }
}

/// The running server of a data directory, from its manifest: `(pid, url)`.
pub(crate) fn read_manifest(data_dir: &Path) -> Option<(u32, String)> {
    let bytes = std::fs::read(manifest_path(data_dir)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let pid = u32::try_from(value["pid"].as_u64()?).ok()?;
    Some((pid, value["url"].as_str()?.to_owned()))
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
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(settings.bind))
        .await
        .with_context(|| format!("binding {}:{}", settings.bind.0, settings.bind.1))?;
    let opened = match open_engine_locked(
        &settings.data_dir,
        lock,
        &settings.scope_dir,
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
    let token = match load_or_mint_token(&settings.data_dir) {
        Ok(token) => token,
        Err(e) => {
            opened.close().await;
            return Err(e);
        }
    };
    let shutdown = CancellationToken::new();
    let config = executor_server::ServeConfig {
        allowed_hosts: settings.allowed_hosts.clone(),
        auth_token: Some(token.clone()),
        mcp_sessions: settings.mcp_sessions,
        caller: Some(opened.caller.clone()),
    };
    let server = tokio::spawn(executor_server::serve_with(
        listener,
        opened.engine.clone(),
        config,
        shutdown.clone(),
        DRAIN,
    ));
    // The upstream HTTP clients load the system's root certificates: done once listening, so a
    // start is not kept waiting for them, and before the first call, which then does not either
    // (only when an integration exists: an empty server would just hold them, see `warm_up`).
    let warm = opened.engine.clone();
    tokio::spawn(async move { warm.warm_up().await });
    let shown_host = if local.ip().is_loopback() || local.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        local.ip().to_string()
    };
    let url = format!("http://{shown_host}:{}", local.port());
    let manifest = match write_manifest(&settings.data_dir, &url) {
        Ok(path) => Some(path),
        Err(e) => {
            tracing::warn!(error = %e, "could not write the server manifest; `executor mcp` will not find this server");
            None
        }
    };
    println!("Executor is running at {url}");
    // The token opens the API: shown to a person at a terminal, never written to a log file.
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        println!("Open {url}/?_token={token} in your browser to use it.");
    } else {
        println!(
            "API token: {} (send it as `Authorization: Bearer <token>`)",
            auth_path(&settings.data_dir).display()
        );
    }
    tracing::info!(data_dir = %settings.data_dir.display(), "ready");

    wait_for_signal().await;
    tracing::info!("shutting down");
    if let Some(path) = &manifest {
        remove_manifest(path);
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

/// `daemon run` without `--foreground`: start a detached server, wait until it answers, report.
pub(crate) fn spawn_background(settings: Settings) -> anyhow::Result<ExitCode> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&settings.data_dir)
        .with_context(|| format!("creating {}", settings.data_dir.display()))?;
    let log_path = settings.data_dir.join("daemon.log");
    // The log may quote tool names and upstream errors: the owner's alone, like the database.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .and_then(|file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            Ok(file)
        })
        .with_context(|| format!("opening {}", log_path.display()))?;
    let exe = std::env::current_exe().context("locating the executor binary")?;
    let (host, port) = settings.bind;
    if port == 0 {
        anyhow::bail!("a background server needs a fixed --port");
    }
    let mut command = std::process::Command::new(exe);
    command
        .args([
            "daemon",
            "run",
            "--foreground",
            "--port",
            &port.to_string(),
            "--hostname",
            &host.to_string(),
        ])
        .arg("--execution-timeout")
        .arg(format!("{}ms", settings.execution_timeout.as_millis()))
        .arg("--pause-ttl")
        .arg(format!("{}ms", settings.pause_ttl.as_millis()))
        .arg("--call-timeout")
        .arg(format!("{}ms", settings.calls.call_timeout.as_millis()))
        .arg("--max-tool-output-mib")
        .arg((settings.calls.max_output_bytes / (1024 * 1024)).to_string());
    for allowed in &settings.allowed_hosts {
        command.arg("--allowed-host").arg(allowed);
    }
    let mut child = command
        .env("EXECUTOR_DATA_DIR", &settings.data_dir)
        .env("EXECUTOR_SCOPE_DIR", &settings.scope_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the background server")?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let addr = SocketAddr::from((host, port));
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            anyhow::bail!(
                "the background server exited with {status}; see {}",
                log_path.display()
            );
        }
        if health_ok(addr) {
            println!(
                "Executor is running at http://{host}:{port} (pid {})",
                child.id()
            );
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!(
        "the background server did not become ready; see {}",
        log_path.display()
    )
}

fn health_ok(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let request = format!("GET /api/health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(stream.read(&mut buf), Ok(n) if n >= 12 && &buf[9..12] == b"200")
}
