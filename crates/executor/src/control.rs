//! The files of `server-control/` that let processes of one data directory find each other: the
//! running server's manifest (`server.json`), the API token (`auth.json`) and the start lock
//! that elects one daemon among concurrent cold starts. Knows nothing of the engine or the HTTP
//! API; both the server and the command-line client use it.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

fn control_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("server-control")
}

fn ensure_control_dir(data_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = control_dir(data_dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    Ok(dir)
}

/// Writes `body` to `path` atomically (a temp file renamed over it), mode 0600.
pub(crate) fn write_private(path: &Path, body: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(body)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// The URL a server bound to `ip:port` is reached at from this machine: loopback as
/// `127.0.0.1` (or `[::1]`), an unspecified address through IPv4 loopback, any other as bound.
pub(crate) fn server_url(ip: std::net::IpAddr, port: u16) -> String {
    let host = if ip == std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST) {
        "[::1]".to_owned()
    } else if ip.is_loopback() || ip.is_unspecified() {
        "127.0.0.1".to_owned()
    } else if ip.is_ipv6() {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    format!("http://{host}:{port}")
}

/// Where a running server announces itself.
pub(crate) fn manifest_path(data_dir: &Path) -> PathBuf {
    control_dir(data_dir).join("server.json")
}

/// What the manifest says about the server that owns a data directory.
#[derive(Debug, Clone)]
pub(crate) struct Manifest {
    pub(crate) pid: u32,
    /// `http://127.0.0.1:<port>` (or the bound address when not loopback).
    pub(crate) url: String,
    /// `daemon` (`daemon run --foreground`, also under a service manager) or `foreground` (`web`).
    pub(crate) kind: String,
    /// Started by a service manager (`EXECUTOR_SUPERVISED=1`).
    pub(crate) supervised: bool,
    /// The arguments it was started with after the binary, so `daemon restart` keeps them.
    pub(crate) args: Vec<String>,
    pub(crate) started_at_ms: u64,
    /// The workspace whose local tenant it serves.
    pub(crate) scope_dir: Option<PathBuf>,
}

impl Manifest {
    /// Whether the process that wrote it still exists (signal 0 probes without signalling).
    pub(crate) fn pid_alive(&self) -> bool {
        pid_alive(self.pid)
    }

    /// The port of its URL.
    pub(crate) fn port(&self) -> Option<u16> {
        self.url.rsplit(':').next()?.parse().ok()
    }
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: `kill` with signal 0 only checks that the process exists and may be signalled.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, 0) };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !zombie(pid)
}

/// A process that exited but was not reaped yet (its parent, or an init that does not reap, as
/// in some containers) still answers signal 0; Linux says so in `/proc/<pid>/stat`.
fn zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state …`: the command may hold spaces and parentheses, the state follows the
    // last `)`.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// Writes the manifest of this process (mode 0600) atomically.
pub(crate) fn write_manifest(
    data_dir: &Path,
    scope_dir: &Path,
    url: &str,
    kind: &str,
) -> std::io::Result<PathBuf> {
    ensure_control_dir(data_dir)?;
    let path = manifest_path(data_dir);
    let started_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = json!({
        "version": 1,
        "kind": kind,
        "pid": std::process::id(),
        "url": url,
        "startedAt": started_at,
        "dataDir": data_dir,
        "scopeDir": scope_dir,
        "supervised": supervised(),
        "args": args,
    });
    write_private(&path, body.to_string().as_bytes())?;
    Ok(path)
}

/// Started by a service manager (the unit sets `EXECUTOR_SUPERVISED=1`).
pub(crate) fn supervised() -> bool {
    std::env::var("EXECUTOR_SUPERVISED").is_ok_and(|v| v == "1")
}

/// The running server of a data directory, from its manifest (which may be stale: check
/// [`Manifest::pid_alive`]).
pub(crate) fn read_manifest(data_dir: &Path) -> Option<Manifest> {
    let bytes = std::fs::read(manifest_path(data_dir)).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    Some(Manifest {
        pid: u32::try_from(value["pid"].as_u64()?).ok()?,
        url: value["url"].as_str()?.to_owned(),
        kind: value["kind"].as_str().unwrap_or("daemon").to_owned(),
        supervised: value["supervised"].as_bool().unwrap_or(false),
        args: value["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        started_at_ms: value["startedAt"].as_u64().unwrap_or(0),
        scope_dir: value["scopeDir"].as_str().map(PathBuf::from),
    })
}

/// Removes the manifest if it names `pid` (the server removes its own; a client removes one
/// whose process is gone).
pub(crate) fn remove_manifest_of(data_dir: &Path, pid: u32) {
    let path = manifest_path(data_dir);
    if read_manifest(data_dir).is_some_and(|m| m.pid == pid)
        && let Err(e) = std::fs::remove_file(&path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %e, path = %path.display(), "could not remove the server manifest");
    }
}

/// Where the local API's bearer token lives: `server-control/auth.json` (`{"token": …}`).
pub(crate) fn auth_path(data_dir: &Path) -> PathBuf {
    control_dir(data_dir).join("auth.json")
}

/// The data directory's API token: read, or minted on first start.
pub(crate) fn load_or_mint_token(data_dir: &Path) -> anyhow::Result<String> {
    match read_token(data_dir) {
        Some(token) => Ok(token),
        None => mint_token(data_dir),
    }
}

/// Writes a new API token (32 random bytes, base64url; mode 0600 in a 0700 directory), replacing
/// any other. A running server keeps the token it read at start until it restarts.
pub(crate) fn mint_token(data_dir: &Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    ensure_control_dir(data_dir)
        .with_context(|| format!("creating {}", control_dir(data_dir).display()))?;
    let bytes: [u8; 32] = rand::random();
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let path = auth_path(data_dir);
    write_private(&path, json!({ "token": token }).to_string().as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(token)
}

/// The token of a data directory, if one was minted.
pub(crate) fn read_token(data_dir: &Path) -> Option<String> {
    let bytes = std::fs::read(auth_path(data_dir)).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// The start lock: held by the one process that starts this data directory's daemon, so
/// concurrent cold starts elect one and the others wait for it. An advisory lock on an open
/// file: a holder that dies releases it with its file descriptors.
pub(crate) struct StartLock {
    file: File,
}

impl StartLock {
    /// Takes the lock, waiting up to `wait` for another holder (typically one starting the
    /// daemon) to let go. `Ok(None)` when the wait ran out.
    pub(crate) fn acquire(data_dir: &Path, wait: Duration) -> std::io::Result<Option<StartLock>> {
        let dir = ensure_control_dir(data_dir)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join("start.lock"))?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(StartLock { file })),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

impl Drop for StartLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
