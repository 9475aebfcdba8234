//! `executor service install|uninstall|status|restart`: the daemon under the OS's service
//! manager, a `systemd --user` unit on Linux and a launchd agent on macOS, running
//! `executor daemon run --foreground` with this data directory. The unit text is generated here
//! (and tested for paths with spaces, quotes and `%`); the service manager's own commands do the
//! rest.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use super::{CliError, CliResult, api, autostart};
use crate::control;

/// The unit's name on both systems.
pub(crate) const LABEL: &str = "sh.executor.daemon";
/// The original's service port: beside, not on, `web`'s 4788.
pub(crate) const DEFAULT_PORT: u16 = 4789;
const READY_WAIT: Duration = Duration::from_secs(45);

/// What the unit runs and with which environment.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) exe: PathBuf,
    pub(crate) port: u16,
    pub(crate) data_dir: PathBuf,
    pub(crate) scope_dir: PathBuf,
    pub(crate) path_env: Option<String>,
}

impl Spec {
    fn args(&self) -> Vec<String> {
        vec![
            self.exe.to_string_lossy().into_owned(),
            "daemon".into(),
            "run".into(),
            "--foreground".into(),
            "--port".into(),
            self.port.to_string(),
            "--hostname".into(),
            "127.0.0.1".into(),
        ]
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            ("EXECUTOR_SUPERVISED".to_owned(), "1".to_owned()),
            (
                "EXECUTOR_DATA_DIR".to_owned(),
                self.data_dir.to_string_lossy().into_owned(),
            ),
            (
                "EXECUTOR_SCOPE_DIR".to_owned(),
                self.scope_dir.to_string_lossy().into_owned(),
            ),
        ];
        // Stdio MCP servers (`npx …`) are found on the PATH of the shell that installed it.
        if let Some(path) = &self.path_env {
            env.push(("PATH".to_owned(), path.clone()));
        }
        env
    }

    fn log(&self) -> PathBuf {
        autostart::log_path(&self.data_dir)
    }
}

/// Refuses what no unit file can carry.
fn check_text(what: &str, text: &str) -> CliResult<()> {
    if text.chars().any(|c| c == '\n' || c == '\r' || c == '\0') {
        return Err(CliError::usage(format!(
            "{what} {text:?} holds a line break or NUL, which a service unit cannot carry"
        )));
    }
    Ok(())
}

/// One word of a systemd command line or assignment, quoted: `%` is a specifier and `$` a
/// variable in `ExecStart=`, so both are doubled; `"` and `\` are escaped inside the quotes.
fn systemd_quote(text: &str, dollars: bool) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' if dollars => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `systemd --user` unit.
pub(crate) fn systemd_unit(spec: &Spec) -> CliResult<String> {
    for arg in spec.args() {
        check_text("the path", &arg)?;
    }
    for (_, value) in spec.env() {
        check_text("the value", &value)?;
    }
    let exec: Vec<String> = spec.args().iter().map(|a| systemd_quote(a, true)).collect();
    let mut unit = String::new();
    unit.push_str("[Unit]\nDescription=Executor daemon (the integration layer for AI agents)\n");
    unit.push_str("After=network-online.target\n\n[Service]\nType=simple\n");
    unit.push_str(&format!("ExecStart={}\n", exec.join(" ")));
    for (key, value) in spec.env() {
        unit.push_str(&format!(
            "Environment={}\n",
            systemd_quote(&format!("{key}={value}"), false)
        ));
    }
    // `append:` takes the rest of the line as the path: only `%` needs escaping.
    let log = spec.log().to_string_lossy().replace('%', "%%");
    unit.push_str(&format!(
        "StandardOutput=append:{log}\nStandardError=append:{log}\n"
    ));
    unit.push_str("Restart=on-failure\nRestartSec=5\n\n[Install]\nWantedBy=default.target\n");
    Ok(unit)
}

/// An element's text in XML: `&`, `<` and `>` as references.
fn escape_xml(text: &str) -> std::borrow::Cow<'_, str> {
    html_escape::encode_text(text)
}

/// The launchd agent (`~/Library/LaunchAgents/sh.executor.daemon.plist`).
pub(crate) fn launchd_plist(spec: &Spec) -> CliResult<String> {
    for arg in spec.args() {
        check_text("the path", &arg)?;
    }
    let mut plist = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n",
    );
    plist.push_str(&format!("  <key>Label</key>\n  <string>{LABEL}</string>\n"));
    plist.push_str("  <key>ProgramArguments</key>\n  <array>\n");
    for arg in spec.args() {
        plist.push_str(&format!("    <string>{}</string>\n", escape_xml(&arg)));
    }
    plist.push_str("  </array>\n  <key>EnvironmentVariables</key>\n  <dict>\n");
    for (key, value) in spec.env() {
        plist.push_str(&format!(
            "    <key>{}</key>\n    <string>{}</string>\n",
            escape_xml(&key),
            escape_xml(&value)
        ));
    }
    let log = escape_xml(&spec.log().to_string_lossy()).into_owned();
    plist.push_str("  </dict>\n  <key>RunAtLoad</key>\n  <true/>\n");
    plist.push_str("  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n");
    plist.push_str("  <key>ThrottleInterval</key>\n  <integer>5</integer>\n");
    plist.push_str(&format!(
        "  <key>StandardOutPath</key>\n  <string>{log}</string>\n  <key>StandardErrorPath</key>\n  <string>{log}</string>\n"
    ));
    plist.push_str("</dict>\n</plist>\n");
    Ok(plist)
}

/// The service manager of this OS.
enum Manager {
    Systemd { unit_path: PathBuf },
    Launchd { plist_path: PathBuf, domain: String },
}

fn home() -> CliResult<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| CliError::failed("HOME is not set"))
}

fn manager() -> CliResult<Manager> {
    if cfg!(target_os = "macos") {
        // SAFETY: `getuid` reads the calling process's user id and cannot fail.
        #[allow(unsafe_code)]
        let uid = unsafe { libc::getuid() };
        return Ok(Manager::Launchd {
            plist_path: home()?
                .join("Library/LaunchAgents")
                .join(format!("{LABEL}.plist")),
            domain: format!("gui/{uid}"),
        });
    }
    if cfg!(target_os = "linux") {
        let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => home()?.join(".config"),
        };
        return Ok(Manager::Systemd {
            unit_path: config.join("systemd/user").join(format!("{LABEL}.service")),
        });
    }
    Err(CliError::failed(
        "services are supported on Linux (systemd --user) and macOS (launchd)",
    ))
}

impl Manager {
    fn name(&self) -> &'static str {
        match self {
            Manager::Systemd { .. } => "systemd --user",
            Manager::Launchd { .. } => "launchd",
        }
    }

    fn file(&self) -> &Path {
        match self {
            Manager::Systemd { unit_path } => unit_path,
            Manager::Launchd { plist_path, .. } => plist_path,
        }
    }

    fn text(&self, spec: &Spec) -> CliResult<String> {
        match self {
            Manager::Systemd { .. } => systemd_unit(spec),
            Manager::Launchd { .. } => launchd_plist(spec),
        }
    }

    /// Loads (or reloads) the unit and starts it.
    fn activate(&self) -> CliResult<()> {
        match self {
            Manager::Systemd { .. } => {
                run(Command::new("systemctl").args(["--user", "daemon-reload"]))?;
                run(Command::new("systemctl").args(["--user", "enable", &unit_name()]))?;
                run(Command::new("systemctl").args(["--user", "restart", &unit_name()]))
            }
            Manager::Launchd { plist_path, domain } => {
                // Unloading one that is not loaded fails; that is fine.
                let _ = Command::new("launchctl")
                    .args(["bootout", &format!("{domain}/{LABEL}")])
                    .output();
                run(Command::new("launchctl")
                    .args(["bootstrap", domain])
                    .arg(plist_path))?;
                run(Command::new("launchctl").args(["enable", &format!("{domain}/{LABEL}")]))
            }
        }
    }

    fn deactivate(&self) -> CliResult<()> {
        match self {
            Manager::Systemd { .. } => {
                let _ = Command::new("systemctl")
                    .args(["--user", "disable", "--now", &unit_name()])
                    .output();
                Ok(())
            }
            Manager::Launchd { domain, .. } => {
                let _ = Command::new("launchctl")
                    .args(["bootout", &format!("{domain}/{LABEL}")])
                    .output();
                Ok(())
            }
        }
    }

    fn kick(&self) -> CliResult<()> {
        match self {
            Manager::Systemd { .. } => {
                run(Command::new("systemctl").args(["--user", "restart", &unit_name()]))
            }
            Manager::Launchd { domain, .. } => run(Command::new("launchctl").args([
                "kickstart",
                "-k",
                &format!("{domain}/{LABEL}"),
            ])),
        }
    }

    /// The manager's own word on the unit: `active`, `inactive`, … (or why it cannot say).
    fn state(&self) -> String {
        let output = match self {
            Manager::Systemd { .. } => Command::new("systemctl")
                .args(["--user", "is-active", &unit_name()])
                .output(),
            Manager::Launchd { domain, .. } => Command::new("launchctl")
                .args(["print", &format!("{domain}/{LABEL}")])
                .output(),
        };
        match output {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out.stdout);
                match self {
                    Manager::Systemd { .. } => text.trim().to_owned(),
                    Manager::Launchd { .. } => text
                        .lines()
                        .find_map(|l| l.trim().strip_prefix("state = "))
                        .unwrap_or(if out.status.success() {
                            "loaded"
                        } else {
                            "not loaded"
                        })
                        .to_owned(),
                }
            }
            Err(e) => format!("unknown ({e})"),
        }
    }
}

fn unit_name() -> String {
    format!("{LABEL}.service")
}

fn run(command: &mut Command) -> CliResult<()> {
    let shown = format!("{command:?}").replace('"', "");
    let output = command
        .output()
        .map_err(|e| CliError::failed(format!("running {shown}: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(CliError::failed(format!(
        "{shown} failed ({}): {}",
        output.status,
        stderr.trim()
    )))
}

pub(crate) fn spec(data_dir: &Path, scope_dir: Option<&Path>, port: u16) -> CliResult<Spec> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| CliError::failed(format!("locating the executor binary: {e}")))?;
    let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let scope_dir = match scope_dir {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        None => std::env::var_os("EXECUTOR_SCOPE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.clone()),
    };
    Ok(Spec {
        exe,
        port,
        data_dir,
        scope_dir,
        path_env: std::env::var("PATH").ok(),
    })
}

/// `service install [--port 4789] [--print]`.
pub(crate) async fn install(spec: Spec, print_only: bool) -> CliResult {
    let manager = manager()?;
    let text = manager.text(&spec)?;
    if print_only {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    // One server per data directory: a daemon started by hand makes way for the service.
    if let Some(m) = control::read_manifest(&spec.data_dir).filter(|m| m.pid_alive())
        && !m.supervised
    {
        println!(
            "Stopping the server at {} (pid {}) so the service takes over.",
            m.url, m.pid
        );
        super::daemon::stop_process(&spec.data_dir, &m, &m.url).await?;
    }
    let file = manager.file();
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed(format!("creating {}: {e}", dir.display())))?;
    }
    std::fs::write(file, text)
        .map_err(|e| CliError::failed(format!("writing {}: {e}", file.display())))?;
    manager.activate()?;
    let origin = format!("http://127.0.0.1:{}", spec.port);
    wait_ready(&spec, &origin).await?;
    println!("Installed the Executor service ({}).", manager.name());
    println!("Unit: {}", file.display());
    println!("Web: {origin}");
    println!("Data directory: {}", spec.data_dir.display());
    println!("Logs: {}", spec.log().display());
    Ok(ExitCode::SUCCESS)
}

async fn wait_ready(spec: &Spec, origin: &str) -> CliResult<()> {
    let spinner = super::spinner::Spinner::start(format!("Waiting for the service at {origin}…"));
    let deadline = Instant::now() + READY_WAIT;
    while Instant::now() < deadline {
        let supervised = control::read_manifest(&spec.data_dir)
            .is_some_and(|m| m.supervised && m.pid_alive() && m.port() == Some(spec.port));
        if supervised && api::local_healthy(origin, Duration::from_millis(500)).await {
            spinner.finish();
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(CliError::unreachable(format!(
        "the service did not answer at {origin} within {}s; see {}",
        READY_WAIT.as_secs(),
        spec.log().display()
    )))
}

/// `service uninstall`.
pub(crate) fn uninstall() -> CliResult {
    let manager = manager()?;
    let file = manager.file().to_path_buf();
    if !file.exists() {
        println!(
            "No Executor service is installed ({} is absent).",
            file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    manager.deactivate()?;
    std::fs::remove_file(&file)
        .map_err(|e| CliError::failed(format!("removing {}: {e}", file.display())))?;
    if let Manager::Systemd { .. } = manager {
        let _ = Command::new("systemctl")
            .args(["--user", "daemon-reload"])
            .output();
    }
    println!("Removed the Executor service ({}).", file.display());
    Ok(ExitCode::SUCCESS)
}

/// `service status`: 0 when the service's server answers, 3 when it does not.
pub(crate) async fn status(data_dir: &Path) -> CliResult {
    let manager = manager()?;
    let file = manager.file();
    println!("Service manager: {}", manager.name());
    if !file.exists() {
        println!("Registered: no ({} is absent)", file.display());
        return Ok(ExitCode::from(3));
    }
    println!("Registered: {}", file.display());
    println!("State: {}", manager.state());
    match control::read_manifest(data_dir).filter(|m| m.pid_alive()) {
        Some(m) if api::local_healthy(&m.url, Duration::from_secs(2)).await => {
            let by = if m.supervised {
                "the service"
            } else {
                "a process outside the service"
            };
            println!("Serving: {} (pid {}, started by {by})", m.url, m.pid);
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            println!("Serving: no");
            Ok(ExitCode::from(3))
        }
    }
}

/// `service restart`.
pub(crate) async fn restart(spec: Spec) -> CliResult {
    let manager = manager()?;
    if !manager.file().exists() {
        return Err(CliError::failed(
            "no Executor service is installed: executor service install",
        ));
    }
    manager.kick()?;
    let origin = format!("http://127.0.0.1:{}", spec.port);
    wait_ready(&spec, &origin).await?;
    println!("Restarted the Executor service at {origin}.");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn awkward() -> Spec {
        Spec {
            exe: PathBuf::from("/opt/my tools/exec\"utor"),
            port: 4789,
            data_dir: PathBuf::from("/home/a b/100% data/$HOME"),
            scope_dir: PathBuf::from("/home/a b/work\\space"),
            path_env: Some("/usr/bin:/home/a b/bin".to_owned()),
        }
    }

    #[test]
    fn systemd_unit_quotes_spaces_quotes_percent_and_dollars() {
        let unit = systemd_unit(&awkward()).unwrap();
        assert!(
            unit.contains(
                "ExecStart=\"/opt/my tools/exec\\\"utor\" \"daemon\" \"run\" \"--foreground\" \"--port\" \"4789\" \"--hostname\" \"127.0.0.1\"\n"
            ),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"EXECUTOR_DATA_DIR=/home/a b/100%% data/$HOME\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"EXECUTOR_SCOPE_DIR=/home/a b/work\\\\space\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"EXECUTOR_SUPERVISED=1\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains("StandardError=append:/home/a b/100%% data/$HOME/daemon.log\n"),
            "{unit}"
        );
        assert!(unit.contains("Restart=on-failure\n"));
        assert!(unit.contains("WantedBy=default.target\n"));
    }

    #[test]
    fn launchd_plist_escapes_xml() {
        let mut spec = awkward();
        spec.data_dir = PathBuf::from("/Users/a&b/<data>");
        let plist = launchd_plist(&spec).unwrap();
        assert!(
            plist.contains("<string>/opt/my tools/exec\"utor</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("<string>/Users/a&amp;b/&lt;data&gt;</string>"),
            "{plist}"
        );
        assert!(plist.contains("<key>EXECUTOR_SUPERVISED</key>\n    <string>1</string>"));
        assert!(plist.contains("<key>Label</key>\n  <string>sh.executor.daemon</string>"));
    }

    #[test]
    fn line_breaks_cannot_be_carried() {
        let mut spec = awkward();
        spec.data_dir = PathBuf::from("/tmp/a\nExecStartPre=/bin/evil");
        assert_eq!(systemd_unit(&spec).unwrap_err().code, 2);
    }
}
