//! `executor daemon run|status|stop|restart` for the local server of this data directory, found
//! through its manifest. `status` exits 0 when the server answers and 3 when it does not, as
//! `systemctl status` and LSB init scripts do.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::autostart::{self, Started};
use super::target::{self, ConnectFlags, Target};
use super::{CliError, CliResult, api};
use crate::control::{self, Manifest};

/// How long `stop` waits for the process to exit after SIGTERM (the server drains requests
/// for up to 10 s).
const STOP_WAIT: Duration = Duration::from_secs(15);

/// `daemon run` without `--foreground`: the election, then "running at".
pub(crate) async fn run_background(
    data_dir: &Path,
    scope_dir: &Path,
    host: std::net::IpAddr,
    port: u16,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> CliResult {
    if port == 0 {
        return Err(CliError::usage(
            "a background daemon needs a fixed --port (or run it with --foreground)",
        ));
    }
    let origin = control::server_url(host, port);
    let started = autostart::start(data_dir, Some(scope_dir), &origin, port, args, env).await?;
    match started {
        Started::Spawned(pid) => println!("Executor is running at {origin} (pid {pid})"),
        Started::AlreadyRunning => {
            let pid = control::read_manifest(data_dir)
                .filter(|m| m.pid_alive())
                .map(|m| format!(" (pid {})", m.pid))
                .unwrap_or_default();
            println!("Executor is already running at {origin}{pid}")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// This data directory's live manifest, removing a stale one (its process is gone).
fn live_manifest(data_dir: &Path) -> (Option<Manifest>, Option<u32>) {
    match control::read_manifest(data_dir) {
        Some(m) if m.pid_alive() => (Some(m), None),
        Some(m) => {
            control::remove_manifest_of(data_dir, m.pid);
            (None, Some(m.pid))
        }
        None => (None, None),
    }
}

/// The manifest when it describes `target` (same local port), else `None`.
fn manifest_for(target: &Target) -> (Option<Manifest>, Option<u32>) {
    let (manifest, stale) = live_manifest(&target.data_dir);
    let ours = manifest.filter(|m| target.local_port.is_some() && m.port() == target.local_port);
    (ours, stale)
}

fn uptime(manifest: &Manifest) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let secs = now.saturating_sub(manifest.started_at_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {}h", secs / 86400, secs % 86400 / 3600),
    }
}

/// `daemon status`.
pub(crate) async fn status(flags: &ConnectFlags, data_dir: &Path) -> CliResult {
    let target = target::resolve(flags, data_dir)?;
    let (manifest, stale) = manifest_for(&target);
    let answers = if target.local_port.is_some() {
        api::local_healthy(&target.origin, Duration::from_secs(2)).await
    } else {
        remote_healthy(&target).await
    };
    if let Some(pid) = stale {
        println!("Removed the record of a server that is gone (pid {pid}).");
    }
    match (&manifest, answers) {
        (Some(m), true) => {
            let supervised = if m.supervised {
                ", under a service manager"
            } else {
                ""
            };
            println!(
                "Executor is running at {} (pid {}, {}{supervised}, up {}).",
                target.origin,
                m.pid,
                m.kind,
                uptime(m)
            );
            println!("Data directory: {}", data_dir.display());
            if let Some(scope) = &m.scope_dir {
                println!("Workspace: {}", scope.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        (None, true) => {
            println!("A server answers at {}.", target.described());
            if target.local_port.is_some() {
                println!(
                    "It is not this data directory's ({}): started elsewhere, or with another EXECUTOR_DATA_DIR.",
                    data_dir.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        (Some(m), false) => {
            println!(
                "Executor (pid {}) is alive but does not answer at {}; see {}",
                m.pid,
                target.origin,
                autostart::log_path(data_dir).display()
            );
            Ok(ExitCode::from(3))
        }
        (None, false) => {
            println!("Executor is not running at {}.", target.described());
            println!("Data directory: {}", data_dir.display());
            Ok(ExitCode::from(3))
        }
    }
}

async fn remote_healthy(target: &Target) -> bool {
    let Ok(api) = api::Api::new(target.clone()) else {
        return false;
    };
    matches!(api.get("/api/health").await, Ok(a) if a.status.is_success())
}

/// `daemon stop`.
pub(crate) async fn stop(flags: &ConnectFlags, data_dir: &Path) -> CliResult {
    let target = local_target(flags, data_dir, "stop")?;
    let (manifest, _) = manifest_for(&target);
    let Some(manifest) = manifest else {
        if api::local_healthy(&target.origin, Duration::from_secs(2)).await {
            return Err(CliError::failed(format!(
                "a server answers at {}, but this data directory ({}) did not start it; stop it where it was started",
                target.origin,
                data_dir.display()
            )));
        }
        println!("No daemon running at {}.", target.origin);
        return Ok(ExitCode::SUCCESS);
    };
    stop_process(data_dir, &manifest, &target.origin).await?;
    println!(
        "Stopped the daemon at {} (pid {}).",
        target.origin, manifest.pid
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn stop_process(
    data_dir: &Path,
    manifest: &Manifest,
    origin: &str,
) -> CliResult<()> {
    let pid = i32::try_from(manifest.pid)
        .map_err(|_| CliError::failed(format!("bad pid {} in the manifest", manifest.pid)))?;
    // SAFETY: sends SIGTERM to the process the manifest names, which is alive (just checked);
    // `kill` reads no memory of ours.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(CliError::failed(format!(
                "could not signal the daemon (pid {pid}): {e}"
            )));
        }
    }
    let deadline = Instant::now() + STOP_WAIT;
    while manifest.pid_alive() {
        if Instant::now() >= deadline {
            return Err(CliError::failed(format!(
                "the daemon at {origin} (pid {pid}) did not exit within {}s; `kill -9 {pid}` ends it",
                STOP_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    control::remove_manifest_of(data_dir, manifest.pid);
    Ok(())
}

/// `daemon restart`: stop, then start on the same port with the same flags.
pub(crate) async fn restart(flags: &ConnectFlags, data_dir: &Path) -> CliResult {
    let target = local_target(flags, data_dir, "restart")?;
    let (manifest, _) = manifest_for(&target);
    let port = target.local_port.unwrap_or(4788);
    let (args, scope_dir) = match &manifest {
        Some(m) if m.kind == "foreground" => {
            return Err(CliError::failed(format!(
                "the server at {} runs in a terminal (`executor web`, pid {}); restart it there",
                target.origin, m.pid
            )));
        }
        Some(m) => {
            stop_process(data_dir, m, &target.origin).await?;
            (daemon_args(&m.args, port), m.scope_dir.clone())
        }
        None => (daemon_args(&[], port), target.scope_dir.clone()),
    };
    let scope_dir: Option<PathBuf> = target.scope_dir.clone().or(scope_dir);
    let started = autostart::start(
        data_dir,
        scope_dir.as_deref(),
        &target.origin,
        port,
        args,
        Vec::new(),
    )
    .await?;
    match started {
        Started::Spawned(pid) => println!("Daemon restarted at {} (pid {pid}).", target.origin),
        Started::AlreadyRunning => println!("Executor is running at {}.", target.origin),
    }
    Ok(ExitCode::SUCCESS)
}

/// The flags a daemon ran with, minus the subcommand words, or the defaults for `port`.
fn daemon_args(previous: &[String], port: u16) -> Vec<String> {
    let flags: Vec<String> = previous
        .iter()
        .skip_while(|a| *a == "daemon" || *a == "run")
        .filter(|a| *a != "--foreground")
        .cloned()
        .collect();
    if flags
        .iter()
        .any(|a| a == "--port" || a.starts_with("--port="))
    {
        return flags;
    }
    let mut out = vec![
        "--port".to_owned(),
        port.to_string(),
        "--hostname".to_owned(),
        "127.0.0.1".to_owned(),
    ];
    out.extend(flags);
    out
}

fn local_target(flags: &ConnectFlags, data_dir: &Path, verb: &str) -> CliResult<Target> {
    let target = target::resolve(flags, data_dir)?;
    if target.local_port.is_none() {
        return Err(CliError::usage(format!(
            "`daemon {verb}` acts on this machine's daemon; {} is not local",
            target.described()
        )));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_keeps_the_flags() {
        let previous: Vec<String> = [
            "daemon",
            "run",
            "--foreground",
            "--port",
            "5000",
            "--pause-ttl",
            "1h",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            daemon_args(&previous, 5000),
            ["--port", "5000", "--pause-ttl", "1h"]
                .map(String::from)
                .to_vec()
        );
        assert_eq!(
            daemon_args(&[], 4788),
            ["--port", "4788", "--hostname", "127.0.0.1"]
                .map(String::from)
                .to_vec()
        );
    }
}
