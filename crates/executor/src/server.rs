//! Running the server: data directory, engine, HTTP listener, signals, graceful shutdown.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use executor_engine::{Engine, EngineConfig};
use executor_store::{Scope, SqliteStore, StoreError};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::cli::Settings;

/// How long in-flight requests may take to finish after a shutdown signal.
const DRAIN: Duration = Duration::from_secs(10);

pub(crate) fn run(settings: Settings) -> anyhow::Result<ExitCode> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("executor-io")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(settings))
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("EXECUTOR_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,executor=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Local tenant: `<basename(scopeDir)>-<first 8 hex of sha256(scopeDir)>`.
fn local_scope(scope_dir: &Path) -> Scope {
    let text = scope_dir.to_string_lossy();
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let base = scope_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_owned());
    Scope {
        tenant: format!("{base}-{}", &hash[..8]),
        subject: Some("local".to_owned()),
    }
}

async fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    let store = match SqliteStore::open(&settings.data_dir).await {
        Ok(store) => Arc::new(store),
        Err(e @ StoreError::Locked { .. }) => {
            eprintln!("executor: {e}");
            return Ok(ExitCode::from(3));
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!("opening the data directory {}", settings.data_dir.display())
            });
        }
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(settings.bind))
        .await
        .with_context(|| format!("binding {}:{}", settings.bind.0, settings.bind.1))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let engine = Engine::new(
        store.clone(),
        local_scope(&settings.scope_dir),
        EngineConfig::with_js_timeout(settings.execution_timeout),
    );
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(executor_server::serve(
        listener,
        engine.clone(),
        shutdown.clone(),
        DRAIN,
    ));
    let shown_host = if local.ip().is_loopback() { "127.0.0.1".to_owned() } else { local.ip().to_string() };
    println!("Executor is running at http://{shown_host}:{}", local.port());
    tracing::info!(data_dir = %settings.data_dir.display(), "ready");

    wait_for_signal().await;
    tracing::info!("shutting down");
    shutdown.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "server task failed"),
    }
    engine.shutdown().await;
    drop(engine);
    if let Ok(store) = Arc::try_unwrap(store) {
        store.close().await;
    }
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
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
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating {}", settings.data_dir.display()))?;
    let log_path = settings.data_dir.join("daemon.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let exe = std::env::current_exe().context("locating the executor binary")?;
    let (host, port) = settings.bind;
    if port == 0 {
        anyhow::bail!("a background server needs a fixed --port");
    }
    let mut child = std::process::Command::new(exe)
        .args(["daemon", "run", "--foreground", "--port", &port.to_string(), "--hostname", &host.to_string()])
        .arg("--execution-timeout")
        .arg(format!("{}ms", settings.execution_timeout.as_millis()))
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
            println!("Executor is running at http://{host}:{port} (pid {})", child.id());
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("the background server did not become ready; see {}", log_path.display())
}

fn health_ok(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
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
