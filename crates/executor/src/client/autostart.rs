//! Starting this data directory's daemon when a command finds nothing listening.
//!
//! Concurrent cold starts elect one starter with the start lock ([`control::StartLock`]): the
//! holder checks again that nothing answers, spawns `executor daemon run --foreground` detached
//! and waits until it answers; the others wait for the lock and find it answering. The owner lock
//! of the data directory (taken by the server itself) is what keeps a second server off it even
//! when two starts race past this election, e.g. from two data-directory paths of one directory.

use std::io::{Read, Seek};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::spinner::Spinner;
use super::target::Target;
use super::{CliError, CliResult, api};
use crate::control::{self, StartLock};

/// How long a started daemon may take to answer.
const READY_WAIT: Duration = Duration::from_secs(15);
/// How long to wait for another process's start (it takes at most [`READY_WAIT`]).
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// What a start found or did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Started {
    /// It was answering already (another process started it meanwhile, or it was starting).
    AlreadyRunning,
    /// This process spawned it: its pid.
    Spawned(u32),
}

/// Makes the local server `target` names answer, starting the daemon on its port if needed.
pub(crate) async fn ensure_running(target: &Target) -> CliResult<Started> {
    let port = target
        .local_port
        .ok_or_else(|| CliError::unreachable(format!("{} is not local", target.origin)))?;
    let args = vec![
        "--port".to_owned(),
        port.to_string(),
        "--hostname".to_owned(),
        "127.0.0.1".to_owned(),
    ];
    start(
        &target.data_dir,
        target.scope_dir.as_deref(),
        &target.origin,
        port,
        args,
        Vec::new(),
    )
    .await
}

/// Starts `executor daemon run --foreground <args>` (with `env` added to its environment) for
/// `data_dir` unless `origin` answers, and waits until it does.
pub(crate) async fn start(
    data_dir: &Path,
    scope_dir: Option<&Path>,
    origin: &str,
    port: u16,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> CliResult<Started> {
    let spinner = Spinner::start(format!("Starting the Executor daemon on {origin}…"));
    if let Some(started) = running_elsewhere_or_starting(data_dir, origin, port).await? {
        return Ok(started);
    }
    let data_dir_owned = data_dir.to_path_buf();
    let lock = tokio::task::spawn_blocking(move || StartLock::acquire(&data_dir_owned, LOCK_WAIT))
        .await
        .map_err(|e| CliError::failed(format!("waiting for the start lock: {e}")))?
        .map_err(|e| {
            CliError::unreachable(format!(
                "taking the start lock in {}: {e}",
                data_dir.display()
            ))
        })?
        .ok_or_else(|| {
            CliError::unreachable(format!(
                "another process has been starting the daemon of {} for {}s; see {}",
                data_dir.display(),
                LOCK_WAIT.as_secs(),
                log_path(data_dir).display()
            ))
        })?;
    // Whoever held the lock before us may have started it.
    if api::local_healthy(origin, Duration::from_millis(500)).await {
        return Ok(Started::AlreadyRunning);
    }
    if let Some(started) = running_elsewhere_or_starting(data_dir, origin, port).await? {
        return Ok(started);
    }
    let pid = spawn_and_wait(data_dir, scope_dir, origin, &args, &env).await?;
    drop(lock);
    spinner.finish();
    Ok(Started::Spawned(pid))
}

/// A live manifest of this data directory: its server elsewhere is an error (one server per
/// data directory); at this port it is starting, so wait for it.
async fn running_elsewhere_or_starting(
    data_dir: &Path,
    origin: &str,
    port: u16,
) -> CliResult<Option<Started>> {
    let Some(manifest) = control::read_manifest(data_dir) else {
        return Ok(None);
    };
    if !manifest.pid_alive() {
        control::remove_manifest_of(data_dir, manifest.pid);
        return Ok(None);
    }
    if manifest.port() != Some(port) {
        return Err(CliError::unreachable(format!(
            "nothing answers at {origin}, and this data directory's server runs at {} (pid {}); \
             use --base-url {}, or stop it first (executor daemon stop)",
            manifest.url, manifest.pid, manifest.url
        )));
    }
    let deadline = Instant::now() + READY_WAIT;
    while Instant::now() < deadline && manifest.pid_alive() {
        if api::local_healthy(origin, Duration::from_millis(500)).await {
            return Ok(Some(Started::AlreadyRunning));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(CliError::unreachable(format!(
        "this data directory's server (pid {}) does not answer at {origin}; see {}",
        manifest.pid,
        log_path(data_dir).display()
    )))
}

pub(crate) fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("daemon.log")
}

async fn spawn_and_wait(
    data_dir: &Path,
    scope_dir: Option<&Path>,
    origin: &str,
    args: &[String],
    env: &[(&'static str, String)],
) -> CliResult<u32> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(|e| CliError::failed(format!("creating {}: {e}", data_dir.display())))?;
    let log_path = log_path(data_dir);
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
        .map_err(|e| CliError::failed(format!("opening {}: {e}", log_path.display())))?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failed(format!("locating the executor binary: {e}")))?;
    let scope_dir = match scope_dir {
        Some(dir) => dir.to_path_buf(),
        None => match std::env::var_os("EXECUTOR_SCOPE_DIR").filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => std::env::current_dir()
                .map_err(|e| CliError::failed(format!("reading the current directory: {e}")))?,
        },
    };
    let stderr = log
        .try_clone()
        .map_err(|e| CliError::failed(format!("opening {}: {e}", log_path.display())))?;
    let mut child = std::process::Command::new(exe)
        .args(["daemon", "run", "--foreground"])
        .args(args)
        // Secrets (a database URL with its password, the API token) go by environment, not
        // on a command line every user of the machine can read.
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("EXECUTOR_DATA_DIR", data_dir)
        .env("EXECUTOR_SCOPE_DIR", &scope_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(stderr)
        // Its own process group: a Ctrl-C at this terminal must not stop the daemon with us.
        .process_group(0)
        .spawn()
        .map_err(|e| CliError::unreachable(format!("starting the daemon: {e}")))?;
    let pid = child.id();
    let deadline = Instant::now() + READY_WAIT;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let said = log_since(&log_path, log_start);
            return Err(CliError::unreachable(format!(
                "the daemon for {} exited ({status}) before it answered at {origin}{}; full log: {}",
                data_dir.display(),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                },
                log_path.display()
            )));
        }
        if api::local_healthy(origin, Duration::from_millis(500)).await {
            // Reaped by init once we exit: it is in its own process group and outlives us.
            std::mem::forget(child);
            return Ok(pid);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CliError::unreachable(format!(
                "the daemon for {} did not answer at {origin} within {}s, and was stopped; see {}",
                data_dir.display(),
                READY_WAIT.as_secs(),
                log_path.display()
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// The last lines the daemon wrote to its log since `start`, on one line.
fn log_since(path: &Path, start: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path)
        && file.seek(std::io::SeekFrom::Start(start)).is_ok()
    {
        let _ = file.take(64 * 1024).read_to_string(&mut text);
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}
